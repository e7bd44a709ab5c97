"""F14: low-frequency run events. Each tool call is its own started / completed pair keyed by
the model's call id (two calls of one tool are two pairs); the status is the call's real
outcome — failed, denied, … never a default "ok" — and the summary is taken from the actual
result. Live events (``RunHandle.events``) and stored ones (``run_events``) agree."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentloom.agent import AgentSpec, RunEvent, Runtime, run_events
from agentloom.testing.openai_server import ScriptedOpenAIServer, Status

from .conftest import (
    WAIT_S,
    answer,
    before_hook,
    calls,
    connection,
    sent_messages,
    tool_call,
    tool_results,
)

CALL_IDS = ["w1", "w2", "r1", "d1"]
STATUSES = {"w1": "succeeded", "w2": "succeeded", "r1": "failed", "d1": "denied"}


def deny_blocked(event: dict[str, Any]) -> dict[str, Any]:
    if event["payload"].get("path") == "blocked.txt":
        return {"decision": "deny", "reason": "blocked.txt is off limits"}
    return {"decision": "allow"}


def short(text: str) -> str:
    """The event summary of a result text (one line, at most 200 characters)."""
    text = text.strip().replace("\n", " ")
    return text if len(text) <= 200 else text[:199] + "…"


def tool_pairs(events: list[RunEvent]) -> dict[str, list[RunEvent]]:
    """``call_id → [started, completed]`` of the tool events, in the order they came."""
    pairs: dict[str, list[RunEvent]] = {}
    for event in events:
        if event.type.startswith("tool.call."):
            pairs.setdefault(event.data["call_id"], []).append(event)
    return pairs


def check_tool_events(events: list[RunEvent], sent: dict[str, str]) -> None:
    pairs = tool_pairs(events)
    assert sorted(pairs) == sorted(CALL_IDS)
    for call_id, pair in pairs.items():
        assert [e.type for e in pair] == ["tool.call.started", "tool.call.completed"], call_id
        done = pair[1].data
        assert done["status"] == STATUSES[call_id]
        # the summary is what the model was told, not a canned word
        assert done["summary"] == short(sent[call_id])
    for event in events:
        assert event.data.get("status") not in ("ok", "OK", "success")
    write_ops = {pairs[c][1].data["operation_id"] for c in ("w1", "w2")}
    assert len(write_ops) == 2  # two calls of one tool are two operations
    assert {pairs[c][1].data["capability"] for c in ("w1", "w2", "d1")} == {"fs.write"}
    assert '"path": "a.txt"' in pairs["w1"][1].data["summary"]
    assert '"path": "b.txt"' in pairs["w2"][1].data["summary"]
    assert pairs["r1"][1].data["summary"].startswith("failed: ")
    assert pairs["d1"][1].data["summary"] == \
        "denied before execution (nothing ran): blocked.txt is off limits"


async def test_f14_each_tool_call_is_its_own_event_pair_with_its_real_status_and_summary(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("w1", "fs_write", path="a.txt", content="one"),
              tool_call("w2", "fs_write", path="b.txt", content="two"),
              tool_call("r1", "fs_read", path="missing.txt"),
              tool_call("d1", "fs_write", path="blocked.txt", content="three")),
        answer("three of four calls did not all go well"),
    )
    hook, ref, fn = before_hook("deny-blocked", deny_blocked, capability="fs.write")
    rt = runtime_factory(
        [AgentSpec(name="main", model=connection(server), tools=("fs.write", "fs.read"))],
        store=store_url, hooks=[hook], hook_functions={ref: fn})
    handle = await rt.start("write, read, and try the blocked file")

    async with asyncio.timeout(WAIT_S):  # inline, so subscribed before the run began
        live = [event async for event in handle.events()]
    result = await handle.result()

    assert result.status == "succeeded", result.error
    sent = tool_results(sent_messages(server, 1))
    assert list(sent) == CALL_IDS
    assert [e.type for e in live if not e.type.startswith("tool.")] == [
        "run.started", "model.call.started", "model.call.completed", "model.call.started",
        "model.call.completed", "run.finished"]
    check_tool_events(live, sent)
    stored = run_events(rt.store, result.run_id)
    assert stored == rt.events(result.run_id)
    check_tool_events(stored, sent)
    assert [e.type for e in stored if not e.type.startswith("tool.")] == [
        "run.started", "model.call.started", "model.call.completed", "model.call.started",
        "model.call.completed", "run.finished"]
    assert stored[-1].data["status"] == "succeeded"
    # live and stored agree on which operation each call was
    live_ops = {c: p[1].data["operation_id"] for c, p in tool_pairs(live).items()}
    assert live_ops == {c: p[1].data["operation_id"] for c, p in tool_pairs(stored).items()}


async def test_f14_a_failed_model_call_and_run_are_reported_failed_not_ok(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script([Status(400)])
    rt = runtime_factory([AgentSpec(name="main", model=connection(server))], store=store_url)
    handle = await rt.start("this request is refused")

    async with asyncio.timeout(WAIT_S):
        live = [event async for event in handle.events()]
    result = await handle.result()

    assert result.status == "failed"
    done = [e for e in live if e.type == "model.call.completed"]
    assert [e.data["status"] for e in done] == ["failed"]
    assert result.error is not None and result.error.code == "MODEL_REQUEST_INVALID"
    assert done[0].data["error_code"] == "MODEL_REQUEST_INVALID"
    stored = run_events(rt.store, result.run_id)
    assert [e.data["status"] for e in stored if e.type == "model.call.completed"] == ["failed"]
    assert stored[-1].type == "run.finished" and stored[-1].data["status"] == "failed"
    assert live[-1].type == "run.finished" and live[-1].data["status"] == "failed"
