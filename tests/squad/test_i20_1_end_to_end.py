"""Issue 20, acceptance 1: a 5-node workflow — fan-out, join, a wait for a person, error
routing and one remote tool — runs end to end with the scripted OpenAI server, on memory,
SQLite and PostgreSQL.

::

    plan (agent planner) ──► build (capability: a Python tool)  ─┐ join: all
                        └──► review (agent reviewer)             ─┴► approve (wait) ─approved─► publish
    build ─on_error: retry_with_feedback, max 2─► plan                                 (MCP over HTTP)

The first plan makes build fail; the error edge runs plan again with the failure as feedback;
the second plan builds. The run waits for the approval, is approved, resumes and publishes
through a real MCP server over Streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp_support import LAB, free_port, http, serve_http
from tests.agent.conftest import WAIT_S, answer, connection, sent_messages

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.mcp import list_servers
from agentloom.results import ToolResult
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.testing.openai_server import ScriptedOpenAIServer


class BuildInput(StrictInput):
    plan: str


class Build(Tool[BuildInput]):
    """Builds only a plan that names version 2: the first plan fails it."""

    name = "build"
    description = "Build the release the plan describes."

    async def execute(self, args: BuildInput, ctx: ToolContext) -> ToolResult | str:
        if "v2" not in args.plan:  # a known failure: nothing was built
            return ToolResult.failure(f"cannot build {args.plan!r}: no version 2 in it")
        return "dist-2.0.tar.gz"


@pytest.fixture
def lab_url() -> Iterator[str]:
    port = free_port()
    yield from serve_http([sys.executable, str(LAB), "http", str(port)], port)


def release() -> Workflow:
    return (Workflow("release")
            .agent("plan", "planner", input="{{ input.task }}")
            .capability("build", "build", args={"plan": "{{ nodes.plan.output }}"})
            .agent("review", "reviewer", input="Review this plan: {{ nodes.plan.output }}")
            .wait("approve", question="Ship {{ nodes.build.output }}?")
            .capability("publish", "mcp.lab.echo", args={"text": "{{ nodes.build.output }}"})
            .edge("plan", ["build", "review"])
            .edge(["build", "review"], "approve", join="all")
            .edge("approve", "publish", when="approved")
            .edge("build", "plan", on_error="retry_with_feedback", max=2))


async def test_i20_1_five_nodes_fan_out_join_wait_error_route_and_a_remote_tool(
        store_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime], lab_url: str, tmp_path: Path) -> None:
    planner, reviewer = servers(), servers()
    planner.script(answer("plan v1: build it"), answer("plan v2: build version v2"))
    reviewer.script(answer("looks fine"), answer("v2 looks fine"))
    (listing,) = await list_servers({"lab": http(lab_url)}, base_dir=tmp_path, backend="none",
                                    workspace=tmp_path)
    echo = next(t for t in listing.tools if t.name == "echo")
    spec = release().build()
    rt = runtime_factory([
        AgentSpec(name="planner", model=connection(planner), instructions="You plan."),
        AgentSpec(name="reviewer", model=connection(reviewer), instructions="You review."),
    ], store=store_url, programs=[WorkflowProgram(spec, tools=[Build(), echo])])

    first = await asyncio.wait_for(rt.run("ship the release", agent="workflow:release"), WAIT_S)

    assert first.status == "waiting", first.error
    (call,) = first.waiting
    assert call["question"] == "Ship dist-2.0.tar.gz?"
    rows = {(r["node"], r["attempt"]): r for r in node_rows(rt.store, first.run_id)}
    assert {k: r["status"] for k, r in rows.items()} == {
        ("plan", 1): "succeeded", ("build", 1): "failed", ("review", 1): "succeeded",
        ("plan", 2): "succeeded", ("build", 2): "succeeded", ("review", 2): "succeeded"}
    # the error edge gave the second plan the build's failure as feedback
    second_plan = sent_messages(planner, 1)[-1]["content"]
    assert second_plan.startswith("ship the release\n\n[workflow] node 'build' failed:")
    assert "no version 2" in second_plan
    # input_only: the reviewer saw its own input only, never the planner's conversation
    assert sent_messages(reviewer, 0) == [
        {"role": "system", "content": "You review."},
        {"role": "user", "content": "Review this plan: plan v1: build it"}]

    await rt.approve(first.run_id, call["operation_id"], reason="ship it")
    resumed = await asyncio.wait_for((await rt.resume(first.run_id)).result(), WAIT_S)

    assert resumed.status == "succeeded", resumed.error
    assert resumed.output == "echo: dist-2.0.tar.gz"  # publish: the MCP echo of the build output
    rows = {(r["node"], r["attempt"]): r for r in node_rows(rt.store, first.run_id)}
    assert rows[("approve", 1)]["data"]["output"] == "approved"
    assert rows[("publish", 1)]["status"] == "succeeded"
    assert len(planner.model_requests) == 2 and len(reviewer.model_requests) == 2
    ops = {o["logical_key"].split("/n/", 1)[1]: o for o in rt.kernel.operations(first.run_id)
           if "/n/" in o["logical_key"] and o["logical_key"].count("/") == 3}
    assert ops["publish/1"]["capability_key"] == "mcp.lab.echo"
    assert ops["publish/1"]["outcome"] == "succeeded"
    assert ops["plan/1"]["event_type"] == "delegation"
    assert json.loads(json.dumps(rows[("build", 2)]["data"]))["call_id"] == "build#2"

