"""Issue 20: the root's stop, deadline and token budget end the whole workflow — the agent
nodes running at that moment included — and nothing after them runs; a failing agent node
never ends its siblings: they finish and the error routes by the declared edges."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.agent.conftest import WAIT_S, answer, connection, watch

from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.spec import Limits
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.testing.openai_server import ScriptedOpenAIServer, Stall, chat_role


def _fan_out() -> Workflow:
    return (Workflow("fan")
            .agent("slow", "slow").agent("quick", "quick")
            .capability("after", "fs.write", args={"path": "after.txt", "content": "ran"})
            .edge(["slow", "quick"], "after", join="all"))


async def test_i20_stop_ends_the_running_agent_nodes_and_nothing_after_them_runs(
        servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    slow, quick = servers(), servers()
    slow.script([chat_role(), Stall(60)])
    quick.script(answer("quick is done"))
    rt = runtime_factory([AgentSpec(name="slow", model=connection(slow)),
                          AgentSpec(name="quick", model=connection(quick))],
                         store="memory://", programs=[WorkflowProgram(_fan_out().build())])
    handle = await rt.start("go", agent="workflow:fan")
    started = watch(handle, lambda e: e.type == "model.call.started" and e.data["role"] == "slow")
    await started

    await rt.stop(handle.run_id, reason="enough")
    result = await asyncio.wait_for(handle.result(), WAIT_S)

    assert result.status == "cancelled"
    assert result.error is not None and "enough" in result.error.message
    nodes = {r["node"]: r["status"] for r in node_rows(rt.store, handle.run_id)}
    assert "after" not in nodes  # nothing after the stop ran
    assert nodes.get("slow") != "succeeded"  # cut off: never reported a success


async def test_i20_the_workflow_deadline_ends_the_whole_tree(
        servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    slow, quick = servers(), servers()
    slow.script([chat_role(), Stall(60)])
    quick.script(answer("quick is done"))
    program = WorkflowProgram(_fan_out().build(), limits=Limits(run_deadline_s=1.0))
    rt = runtime_factory([AgentSpec(name="slow", model=connection(slow)),
                          AgentSpec(name="quick", model=connection(quick))],
                         store="memory://", programs=[program])

    result = await asyncio.wait_for(rt.run("go", agent="workflow:fan"), WAIT_S)

    assert result.status == "timed_out"
    assert "after" not in {r["node"] for r in node_rows(rt.store, result.run_id)}


async def test_i20_a_failing_agent_node_never_ends_its_siblings_and_routes_by_its_error_edge(
        servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    broken, steady = servers(), servers()
    broken.script([chat_role()])  # a stream cut short: a known failure of that agent
    steady.script(answer("steady is done"))
    spec = (Workflow("pair")
            .agent("broken", "broken").agent("steady", "steady")
            .capability("recover", "fs.write", args={"path": "r.txt", "content": "recovered"})
            .edge("broken", "recover", on_error="route").build())
    rt = runtime_factory([AgentSpec(name="broken", model=connection(broken)),
                          AgentSpec(name="steady", model=connection(steady))],
                         store="memory://", programs=[WorkflowProgram(spec)])

    result = await asyncio.wait_for(rt.run("go", agent="workflow:pair"), WAIT_S)

    nodes = {r["node"]: r["status"] for r in node_rows(rt.store, result.run_id)}
    assert nodes == {"broken": "failed", "steady": "succeeded", "recover": "succeeded"}
    assert result.status == "succeeded", result.error
