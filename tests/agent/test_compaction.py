"""The ``compact_context`` stage (000 §4): a history that would not fit the model's budget is
compacted by a model call of its own (``purpose="compaction"``, seen by hooks), fixed material
(the task, every user message, the latest assistant turn with its results) is kept word for
word, a failed compaction ends the invocation, and a history that still does not fit is
refused with ``CONTEXT_WINDOW_EXCEEDED`` instead of being cut silently."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.compaction import (
    COMPACTION_INSTRUCTIONS,
    SUMMARY_PREFIX,
    Budget,
    compacted_messages,
    estimate_tokens,
    plan_compaction,
)
from agentloom.models.types import Message, ToolCall
from agentloom.testing.openai_server import ScriptedOpenAIServer, Status

from .conftest import answer, before_hook, calls, connection, run, sent_messages, tool_call

RESULT_CHARS = 2_500
WINDOW = 2_000  # tokens; with output_limit 200 the input may use 1,800 (about 5,400 chars)


class LookupInput(StrictInput):
    key: str
    size: int = RESULT_CHARS


class Lookup(Tool[LookupInput]):
    name = "lookup"
    description = "Look a key up; the answer is long."

    async def execute(self, args: LookupInput, ctx: ToolContext) -> str:
        return f"{args.key}=" + args.key[0] * args.size


def agent(server: ScriptedOpenAIServer, **kw: Any) -> AgentSpec:
    return AgentSpec(name="main", model=connection(server), tools=(Lookup(),), window=WINDOW,
                     output_limit=200, **kw)


async def test_s4_compact_context_summarises_older_turns_when_the_budget_needs_it(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    seen: list[dict[str, Any]] = []

    def watch(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(event)
        return {"decision": "allow"}

    spec, ref, fn = before_hook("compaction-watch", watch, event="model", purpose="compaction")
    server.script(
        calls(tool_call("c1", "lookup", key="alpha")),
        calls(tool_call("c2", "lookup", key="beta")),
        answer("alpha was looked up: a long run of a"),  # the compaction call's summary
        answer("done"),
    )
    rt = runtime_factory([agent(server)], store=store_url, hooks=[spec],
                         hook_functions={ref: fn})

    result = await run(rt, "look up alpha and beta")

    assert result.status == "succeeded", result.error
    assert result.output == "done"
    assert len(server.model_requests) == 4
    compaction = sent_messages(server, 2)
    assert compaction[0] == {"role": "system", "content": COMPACTION_INSTRUCTIONS}
    assert "lookup (call c1)" in compaction[1]["content"]
    assert "c2" not in compaction[1]["content"]  # the latest turn is not summarised
    after = sent_messages(server, 3)
    assert after[0] == {"role": "user", "content": "look up alpha and beta"}  # the task, verbatim
    assert after[1] == {"role": "user",
                        "content": SUMMARY_PREFIX + "alpha was looked up: a long run of a"}
    assert [m["role"] for m in after[2:]] == ["assistant", "tool"]
    assert after[2]["tool_calls"][0]["id"] == "c2" and after[3]["tool_call_id"] == "c2"
    assert all("aaaa" not in str(m.get("content")) for m in after)  # alpha's result is gone
    assert len(seen) == 1  # the hook matched the compaction call only
    ops = {op["logical_key"].rsplit("/", 1)[1]: op
           for op in rt.store.query("operations", {"run_id": result.run_id})}
    assert ops["compact"]["outcome"] == "succeeded"
    assert ops["compact"]["data"]["request"]["purpose"] == "compaction"
    events = [e.type for e in rt.events(result.run_id)]
    assert events.count("model.call.completed") == 4


async def test_s4_a_failed_compaction_ends_the_invocation(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("c1", "lookup", key="alpha")),
        calls(tool_call("c2", "lookup", key="beta")),
        [Status(400, body={"error": {"message": "summaries are off", "type": "invalid_request"}}),
         ],
    )
    rt = runtime_factory([agent(server)], store=store_url)

    result = await run(rt, "look up alpha and beta")

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "COMPACTION_FAILED"
    assert "before turn 3" in result.error.message
    assert len(server.model_requests) == 3 and server.pending == 0  # no turn after it


async def test_s4_a_history_that_still_does_not_fit_fails_with_context_window_exceeded(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    # the latest turn alone is too big: it is fixed material, so there is nothing to compact
    server.script(calls(tool_call("c1", "lookup", key="huge", size=20_000)))
    rt = runtime_factory([agent(server)], store=store_url)

    result = await run(rt, "look up huge")

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "CONTEXT_WINDOW_EXCEEDED"
    assert "raise model.window" in result.error.message
    assert len(server.model_requests) == 1


def test_s4_compaction_keeps_user_messages_and_the_latest_turn_word_for_word() -> None:
    def turn(i: int) -> list[Message]:
        call = ToolCall(id=f"c{i}", name="lookup", arguments="{}")
        return [Message(role="assistant", tool_calls=(call,)),
                Message(role="tool", tool_call_id=f"c{i}", name="lookup", content="r" * 100)]

    messages = [Message(role="system", content="be careful"), Message(role="user", content="task"),
                *turn(1), Message(role="user", content="also do B"), *turn(2), *turn(3)]
    plan = plan_compaction(messages)
    assert plan is not None
    assert [m.tool_calls[0].id if m.tool_calls else m.tool_call_id for m in plan.replaced] == \
        ["c1", "c1", "c2", "c2"]
    out = compacted_messages(messages, plan, "S")
    assert [(m.role, m.content) for m in out[:4]] == [
        ("system", "be careful"), ("user", "task"), ("user", SUMMARY_PREFIX + "S"),
        ("user", "also do B")]
    assert out[4:] == messages[-2:]
    assert estimate_tokens(out) < estimate_tokens(messages)
    assert plan_compaction(messages[:4]) is None  # only the latest turn: nothing to compact


def test_s4_budget_reserves_the_platform_output_default_when_no_limit_is_set() -> None:
    assert Budget.of(32_000).output_reserve == 4_096
    assert Budget.of(2_000).output_reserve == 500
    assert Budget.of(2_000, 200).input_limit == 1_800
