"""003 F14 for workflows: node events and the tool events inside them carry their call ids and
the calls' real statuses end to end — live (the run handle) and stored (``runs events``) alike.
A node that fails says ``failed`` with its error code, never a default "ok"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from tests.agent.conftest import WAIT_S, answer, calls, connection, tool_call

from agentloom.agent import AgentSpec, RunEvent, Runtime
from agentloom.agent.events import run_events
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.views import run_detail


async def test_f14_node_and_tool_events_carry_call_ids_and_real_statuses_live_and_stored(
        store_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    writer = servers()
    writer.script(calls(tool_call("w1", "fs_write", path="notes.txt", content="hello")),
                  answer("wrote notes.txt"))
    spec = (Workflow("events")
            .agent("write", "writer", input="{{ input.task }}")
            .capability("missing", "fs.read", args={"path": "no-such-file.txt"})
            .edge("write", "missing").build())
    rt = runtime_factory([AgentSpec(name="writer", model=connection(writer),
                                    tools=("fs.write",))],
                         store=store_url, programs=[WorkflowProgram(spec, tools=["fs.read"])])
    live: list[RunEvent] = []

    handle = await rt.start("write the notes", agent="workflow:events")
    listening = asyncio.ensure_future(_collect(handle.events(), live))
    result = await asyncio.wait_for(handle.result(), WAIT_S)
    await asyncio.wait_for(listening, WAIT_S)

    assert result.status == "failed"
    stored = run_events(rt.store, result.run_id)
    for events in (live, stored):
        nodes = [(e.type, e.data["node"], e.data["call_id"], e.data.get("status"))
                 for e in events if e.type in ("node.started", "node.completed")]
        assert nodes == [
            ("node.started", "write", "write#1", None),
            ("node.completed", "write", "write#1", "succeeded"),
            ("node.started", "missing", "missing#1", None),
            ("node.completed", "missing", "missing#1", "failed")], nodes
        (failed,) = [e for e in events if e.type == "node.completed" and
                     e.data["status"] == "failed"]
        assert failed.data["error_code"] and failed.data["operation_id"]
        tools = [(e.type, e.data["call_id"], e.data["capability"], e.data.get("status"))
                 for e in events if e.type.startswith("tool.call.")]
        assert ("tool.call.completed", "w1", "fs.write", "succeeded") in tools
        assert ("tool.call.started", "w1", "fs.write", None) in tools
    # the node's call id is the call id of its operation
    detail = run_detail(rt.store, result.run_id)
    assert detail is not None
    ops = {o["call_id"]: o for o in detail["operations"] if o["call_id"]}
    assert ops["missing#1"]["capability"] == "fs.read" and ops["missing#1"]["status"] == "failed"
    assert ops["write#1"]["event_type"] == "delegation" and ops["write#1"]["status"] == "succeeded"
    assert ops["w1"]["capability"] == "fs.write" and ops["w1"]["status"] == "succeeded"


async def _collect(stream: AsyncIterator[RunEvent], into: list[RunEvent]) -> None:
    async for event in stream:
        into.append(event)
