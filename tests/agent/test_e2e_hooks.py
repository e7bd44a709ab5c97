"""Before-hooks on an agent's tool calls (000 §5.1, §5.3): a deny stops one member of a batch
without dropping the others, and a rewritten argument is what executes *and* what the model
is told was executed ("后续模型须看到改动及实际参数")."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentloom.agent import AgentSpec, Runtime
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import (
    answer,
    assistant_calls,
    before_hook,
    calls,
    connection,
    run,
    sent_messages,
    tool_call,
    tool_results,
    workspace_folder,
)


def runtime(make: Callable[..., Runtime], store_url: str, server: ScriptedOpenAIServer,
            *hooks: tuple[Any, str, Callable[..., Any]]) -> Runtime:
    return make([AgentSpec(name="main", model=connection(server), tools=("fs.write", "fs.read"))],
                store=store_url, hooks=[h for h, _, _ in hooks],
                hook_functions={ref: fn for _, ref, fn in hooks})


async def test_s9_hook_denies_one_of_two_parallel_calls_both_results_return_in_request_order(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    seen: list[str] = []

    def guard(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(event["payload"]["path"])
        if event["payload"]["path"] == "blocked.txt":
            return {"decision": "deny", "reason": "blocked.txt is off limits"}
        return {"decision": "allow"}

    server.script(
        calls(tool_call("c-blocked", "fs_write", path="blocked.txt", content="nope"),
              tool_call("c-ok", "fs_write", path="ok.txt", content="fine")),
        answer("one write was refused"),
    )
    rt = runtime(runtime_factory, store_url, server,
                 before_hook("guard", guard, capability="fs.write"))

    result = await run(rt, "write two files", session="sess-deny")

    assert result.status == "succeeded", result.error
    assert result.output == "one write was refused"
    assert sorted(seen) == ["blocked.txt", "ok.txt"]
    folder = workspace_folder(rt, result.run_id)
    assert not (folder / "blocked.txt").exists()  # the denied handler never ran
    assert (folder / "ok.txt").read_text() == "fine"
    results = tool_results(sent_messages(server, 1))
    assert list(results) == ["c-blocked", "c-ok"]
    assert results["c-blocked"] == "denied before execution (nothing ran): blocked.txt is off limits"
    assert json.loads(results["c-ok"])["path"] == "ok.txt"
    outcomes = {r["data"]["request"]["call_id"]: r["outcome"]
                for r in rt.kernel.operations(result.run_id) if r["event_type"] == "tool"}
    assert outcomes == {"c-blocked": "denied_before_execution", "c-ok": "succeeded"}
    blocked = next(r for r in rt.kernel.operations(result.run_id)
                   if r["data"]["request"].get("call_id") == "c-blocked")
    assert rt.store.query("attempts", {"operation_id": blocked["operation_id"]}) == []


async def test_s9_hook_rewritten_argument_executes_and_the_next_model_request_shows_it(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    def redirect(event: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/path", "value": "sandboxed-notes.txt"}]}

    server.script(
        calls(tool_call("c1", "fs_write", path="notes.txt", content="remember this")),
        calls(tool_call("c2", "fs_read", path="sandboxed-notes.txt")),
        answer("written where the hook put it"),
    )
    rt = runtime(runtime_factory, store_url, server,
                 before_hook("redirect", redirect, capability="fs.write"))

    result = await run(rt, "save a note", session="sess-patch")

    assert result.status == "succeeded", result.error
    folder = workspace_folder(rt, result.run_id)
    assert (folder / "sandboxed-notes.txt").read_text() == "remember this"
    assert not (folder / "notes.txt").exists()
    executed = {"content": "remember this", "path": "sandboxed-notes.txt"}
    for n in (1, 2):  # every later request tells the same story
        messages = sent_messages(server, n)
        assert json.loads(assistant_calls(messages)["c1"]["arguments"]) == executed
        note = tool_results(messages)["c1"]
        assert json.loads(note.split("\n", 1)[0])["path"] == "sandboxed-notes.txt"
        assert "[note: a hook changed the arguments before execution; executed with " \
            f"{json.dumps(executed, sort_keys=True)}]" in note
    assert json.loads(tool_results(sent_messages(server, 2))["c2"])["content"] == "remember this"
    (op,) = [r for r in rt.kernel.operations(result.run_id)
             if r["data"]["request"].get("call_id") == "c1"]
    assert op["data"]["request"]["proposed_arguments"]["path"] == "notes.txt"
