"""Issue 13, item 5: live and stored run events are one model — the same payload class and
the same keys for the same event type — so ``RunHandle.events()`` and ``agentloom runs
events`` describe a run in one vocabulary."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentloom.agent import AgentSpec, RunEvent, Runtime, run_events
from agentloom.agent.events import (
    PAYLOADS,
    ModelCallCompleted,
    RunStarted,
    ToolCallCompleted,
)
from agentloom.models.offline import Script, ScriptModel

WAIT_S = 30.0


def script(*turns: dict[str, Any]) -> ScriptModel:
    return ScriptModel(Script.model_validate({"turns": list(turns)}), source="events")


async def test_13_5_live_and_stored_run_events_have_the_same_keys(tmp_path: Path) -> None:
    model = script(
        {"tool_calls": [{"id": "w1", "name": "fs_write",
                         "arguments": {"path": "a.txt", "content": "one"}}]},
        {"tool_calls": [{"id": "r1", "name": "fs_read", "arguments": {"path": "a.txt"}}]},
        {"expect": {"role": "tool", "contains": "one"}, "text": "a.txt says one"},
    )
    rt = Runtime([AgentSpec(name="main", model=model, tools=("fs.write", "fs.read"))],
                 store=f"sqlite:///{tmp_path / 'agentloom.db'}",
                 workspace_root=tmp_path / "workspaces")
    try:
        handle = await rt.start("write a.txt, then read it")
        async with asyncio.timeout(WAIT_S):  # inline: subscribed before the run's first step
            live = [event async for event in handle.events()]
        result = await handle.result()
        stored = run_events(rt.store, result.run_id)
    finally:
        await rt.aclose()

    assert result.status == "succeeded", result.error
    assert [e.type for e in live] == [e.type for e in stored] == [
        "run.started",
        "model.call.started", "model.call.completed", "tool.call.started", "tool.call.completed",
        "model.call.started", "model.call.completed", "tool.call.started", "tool.call.completed",
        "model.call.started", "model.call.completed",
        "run.finished"]
    for seen, kept in zip(live, stored, strict=True):
        # one class per event type, so one key set: in Python and in the JSON of both
        assert type(seen.data) is type(kept.data) is PAYLOADS[seen.type]
        assert list(seen.to_dict()) == list(kept.to_dict())
        # and where both sides know a value, they agree on it
        both = {k for k in seen.data if seen.data[k] is not None and kept.data[k] is not None}
        assert {k: seen.data[k] for k in both} == {k: kept.data[k] for k in both}, seen.type
    # the live side fills what it knows: a model call's key and capability, a call's attempts
    for seen, kept in zip(live, stored, strict=True):
        if seen.type.startswith("model.call."):
            assert seen.data["capability"] == kept.data["capability"] == "model.main"
            assert seen.data["logical_key"] == kept.data["logical_key"] is not None
        if seen.type == "tool.call.completed":
            assert seen.data["attempts"] == kept.data["attempts"] == 1
    assert live[0].data == stored[0].data == {"agent": "main", "task": "write a.txt, then read it",
                                              "forked_from": None, "files": None}
    assert isinstance(stored[0].data, RunStarted)
    done = [e.data for e in stored if e.type == "tool.call.completed"]
    assert all(isinstance(d, ToolCallCompleted) and d.status == "succeeded" for d in done)
    assert [d["call_id"] for d in done] == ["w1", "r1"]
    models = [e.data for e in stored if isinstance(e.data, ModelCallCompleted)]
    assert [(m.turn, m.tool_calls, m.status) for m in models] == [
        (1, 1, "succeeded"), (2, 1, "succeeded"), (3, 0, "succeeded")]
    assert live[-1].data == stored[-1].data  # run.finished: status, output, error, steps, …
    assert stored[-1].data["output"] == "a.txt says one"


def test_13_5_an_event_payload_takes_only_the_keys_of_its_type() -> None:
    event = RunEvent("tool.call.completed", "r-1", 1.0, {
        "role": "main", "call_id": "c1", "capability": "fs.read", "operation_id": "op-1",
        "status": "failed", "summary": "failed: no such file"})
    assert isinstance(event.data, ToolCallCompleted)
    assert event.data["attempts"] is None and event.data.get("nope") is None
    assert event.to_dict() == {
        "type": "tool.call.completed", "run_id": "r-1", "at": 1.0, "role": "main",
        "call_id": "c1", "capability": "fs.read", "operation_id": "op-1", "status": "failed",
        "attempts": None, "summary": "failed: no such file"}
    assert RunEvent("run.finished", "r-1", 1.0, {"run_id": "r-1", "status": "failed"}) \
        .data["status"] == "failed"  # the run id is carried once, by the event
    with pytest.raises(ValueError, match=r"has no keys \['result'\]"):
        RunEvent("tool.call.completed", "r-1", 1.0, {"result": "…"})
    with pytest.raises(ValueError, match="unknown run event type"):
        RunEvent("tool.call.finished", "r-1", 1.0)
