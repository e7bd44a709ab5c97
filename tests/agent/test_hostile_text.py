"""Issue #11, point 2: a lone surrogate (or NUL) from a model or a tool never crashes a run.

Over the real OpenAI SDK (the scripted server sends ``"\\ud800"`` escapes on the wire, as a
provider can), in a model's final text, in its tool-call arguments, and in an SDK tool's
result: the run ends in a recorded terminal state on every store, with U+FFFD in place of
each such code point and the count on the raw result (``metadata.text_replaced``).
"""

from __future__ import annotations

from collections.abc import Callable

from tests.agent.conftest import answer, calls, connection, run, tool_call, workspace_folder

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.testing.openai_server import ScriptedOpenAIServer

LONE = "\ud800"


class EchoInput(StrictInput):
    text: str


class Echo(Tool[EchoInput]):
    name = "echo"
    description = "Echo the text back, with a lone surrogate and a NUL of its own."

    async def execute(self, args: EchoInput, ctx: ToolContext) -> str:
        return f"{args.text} {LONE} \x00 end"


def operations(rt: Runtime, run_id: str) -> list[dict[str, object]]:
    return rt.store.query("operations", {"run_id": run_id})


async def test_i11_2_a_lone_surrogate_in_the_final_text_is_stored_replaced(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(answer(f"done {LONE} and NUL \x00 too"))
    rt = runtime_factory([AgentSpec(name="main", model=connection(server))], store=store_url)

    result = await run(rt, "answer")

    assert result.status == "succeeded", result.error
    assert result.output == "done \ufffd and NUL \ufffd too"
    stored = rt.store.get("runs", {"run_id": result.run_id})
    assert stored is not None and stored["status"] == "succeeded"
    assert any("text_replaced" in str(op) for op in operations(rt, result.run_id))


async def test_i11_2_lone_surrogates_in_tool_arguments_and_sdk_results_never_crash_the_run(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("w1", "fs_write", path="a.txt", content=f"x{LONE}y"),
              tool_call("e1", "echo", text=f"in {LONE}")),
        answer("all stored"),
    )
    rt = runtime_factory([AgentSpec(name="main", model=connection(server),
                                    tools=("fs.write", Echo()))], store=store_url)

    result = await run(rt, "write and echo", session="hostile-text")

    assert result.status == "succeeded", result.error
    assert (workspace_folder(rt, result.run_id) / "a.txt").read_text() == "x\ufffdy"
    # What the model is told the echo returned: the replacement, never the raw code points.
    sent = server.model_requests[1].json["messages"]
    (echoed,) = [m["content"] for m in sent if m["role"] == "tool" and m["tool_call_id"] == "e1"]
    assert "in \ufffd \ufffd \ufffd end" in echoed


class Exits(Tool[EchoInput]):
    name = "exits"
    description = "A tool whose library calls sys.exit."

    async def execute(self, args: EchoInput, ctx: ToolContext) -> str:
        raise SystemExit(3)


class Interrupts(Tool[EchoInput]):
    name = "interrupts"
    description = "A tool that raises KeyboardInterrupt itself."

    async def execute(self, args: EchoInput, ctx: ToolContext) -> str:
        raise KeyboardInterrupt


async def test_i11_a_tool_raising_system_exit_or_keyboard_interrupt_fails_that_call_only(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(calls(tool_call("x1", "exits", text="a"), tool_call("k1", "interrupts", text="b")),
                  answer("went on"))
    rt = runtime_factory([AgentSpec(name="main", model=connection(server),
                                    tools=(Exits(), Interrupts()))], store=store_url)

    result = await run(rt, "call both")

    assert result.status == "succeeded" and result.output == "went on"
    sent = server.model_requests[1].json["messages"]
    told = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert "raised SystemExit" in told["x1"] and "raised KeyboardInterrupt" in told["k1"]


async def test_12_4_tool_arguments_nested_too_deeply_are_told_to_the_model_not_a_crash(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    server.script(calls(("d1", "exits", deep)), answer("flat now"))
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=(Exits(),))],
                         store=store_url)

    result = await run(rt, "nest")

    assert result.status == "succeeded" and result.output == "flat now"
    told = {m["tool_call_id"]: m["content"] for m in server.model_requests[1].json["messages"]
            if m["role"] == "tool"}
    assert told["d1"].startswith("failed: the arguments of exits are nested too deeply to read")
