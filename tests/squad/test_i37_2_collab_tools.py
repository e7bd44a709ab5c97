"""Issue 37, point 2: the collaboration tools an agent node lists in ``tools`` —
``collab.post`` / ``collab.read`` / ``collab.handoff`` / ``collab.accept`` / ``collab.claim`` /
``collab.update`` — and the wait on a mailbox message, end to end on memory, SQLite and
PostgreSQL, with agents on scripted OpenAI servers (127.0.0.1).

::

    lead (agent: post, handoff, update t1, post to 'nobody' → UNKNOWN_NODE)
      ├──► worker (agent: read, accept, claim t1, update t1, post to review)
      └──► review (wait: message, from worker)       ← same wave as worker: a sibling's post

Two nodes accepting one handoff at once: exactly one wins, the other gets ``HANDOFF_TAKEN``.
The same tools called outside any workflow fail ``NOT_IN_WORKFLOW``. The crash test (a
SIGKILL between a handoff's offer and its acceptance) is tests/squad/test_i37_2_collab_crash.py.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.agent.conftest import (
    WAIT_S,
    answer,
    before_hook,
    calls,
    connection,
    sent_messages,
    tool_call,
    tool_results,
)
from tests.conftest import drop_store, fresh_store_url
from tests.squad.test_f11_collab_contract import seed_run

from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.programs import ProgramRun
from agentloom.agent.spec import Limits
from agentloom.assembly import runtime_from_config
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.cancel import CancelToken
from agentloom.config import parse_config
from agentloom.errors import ConfigError
from agentloom.ids import new_id
from agentloom.kernel import Kernel
from agentloom.refs import NodeRef
from agentloom.squad import Workflow, collab
from agentloom.squad.collab_tools import collab_tool
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.squad.live import driven
from agentloom.squad.workflow_tools import resolve
from agentloom.store import open_store
from agentloom.testing.openai_server import ScriptedOpenAIServer

COLLAB = ("collab.post", "collab.read", "collab.handoff", "collab.accept", "collab.claim",
          "collab.update")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


def _results(srv: ScriptedOpenAIServer, n: int) -> dict[str, Any]:
    """The tool results the ``n``-th request of ``srv`` carried, decoded where JSON."""
    out: dict[str, Any] = {}
    for call_id, content in tool_results(sent_messages(srv, n)).items():
        try:
            out[call_id] = json.loads(content)
        except ValueError:
            out[call_id] = content
    return out


def _codes(rt: Runtime, run_id: str, capability: str) -> list[str]:
    """The error codes of the run's failed ``capability`` operations, as recorded."""
    found = []
    for op in rt.kernel.operations(run_id):
        if op["capability_key"] == capability and op["outcome"] == "failed":
            text = json.dumps(op["data"], default=str)
            found += [c for c in ("UNKNOWN_NODE", "NOT_IN_WORKFLOW", "HANDOFF_TAKEN")
                      if c in text]
    return found


def _team() -> Workflow:
    return (Workflow("team")
            .agent("lead", "lead", input="{{ input.task }}")
            .agent("worker", "worker", input="lead says: {{ nodes.lead.output }}")
            .wait("review", wait="message", from_node="worker")
            .edge("lead", ["worker", "review"]))


async def test_i37_2_agent_nodes_post_read_hand_off_accept_claim_update_and_a_wait_takes_a_message(
        backend_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    lead, worker = servers(), servers()
    lead.script(calls(tool_call("p1", "collab_post", to="worker", body={"job": "sum"}),
                      tool_call("h1", "collab_handoff", to="worker", payload={"numbers": [2, 3]}),
                      tool_call("u1", "collab_update", task_id="t1", status="open",
                                data={"n": 1}),
                      tool_call("x1", "collab_post", to="nobody", body="lost")),
                answer("handed off"))
    worker.script(calls(tool_call("r1", "collab_read")),
                  calls(tool_call("a1", "collab_accept"), tool_call("c1", "collab_claim",
                                                                    task_id="t1")),
                  calls(tool_call("u2", "collab_update", task_id="t1", status="done",
                                  data={"sum": 5}, expect_revision=2),
                        tool_call("p2", "collab_post", to="review", body="sum is 5")),
                  answer("done"))
    rt = runtime_factory([AgentSpec(name="lead", model=connection(lead), tools=COLLAB),
                          AgentSpec(name="worker", model=connection(worker), tools=COLLAB)],
                         store=backend_url, programs=[WorkflowProgram(_team().build())])

    done = await asyncio.wait_for(rt.run("share the work", agent="workflow:team"), WAIT_S)

    assert done.status == "succeeded", done.error
    rows = {r["node"]: r for r in node_rows(rt.store, done.run_id)}
    assert rows["review"]["status"] == "succeeded"
    assert rows["review"]["data"]["output"] == "sum is 5"  # the sibling's message, as text
    led = _results(lead, 1)
    assert led["p1"]["to"] == "worker" and led["h1"]["status"] == "pending"
    assert led["u1"]["revision"] == 1 and led["u1"]["assignee"] is None
    assert "'nobody' is not a node of this workflow" in led["x1"]  # what the model is told
    assert _codes(rt, done.run_id, "collab.post") == ["UNKNOWN_NODE"]  # its stable code
    (read,) = _results(worker, 1)["r1"]["messages"]
    assert (read["from"], read["body"]) == ("lead", {"job": "sum"})
    took = _results(worker, 2)
    assert took["a1"]["payload"] == {"numbers": [2, 3]} and took["a1"]["from"] == "lead"
    assert took["c1"]["assignee"] == "worker" and took["c1"]["revision"] == 2
    assert _results(worker, 3)["u2"]["revision"] == 3

    store, run_id = rt.store, done.run_id
    mail = collab.inbox(store, run_id, "worker") + collab.inbox(store, run_id, "review")
    assert [(m.sender, m.recipient) for m in mail] == [("lead", "worker"), ("worker", "review")]
    assert all(m.read_at is not None for m in mail)  # read by the tool and by the wait
    assert collab.inbox(store, run_id, "nobody") == []
    (handoff,) = collab.handoffs(store, run_id)
    assert handoff.status == "accepted" and handoff.accepted_by is not None
    assert handoff.accepted_by["node"] == "worker"
    (task,) = collab.board(store, run_id)
    assert (task.status, task.assignee, task.revision, task.data) == ("done", "worker", 3,
                                                                      {"sum": 5})
    # recorded as operations like any capability, made for their node
    ops = [o for o in rt.kernel.operations(run_id) if o["capability_key"].startswith("collab.")]
    assert sorted(o["capability_key"] for o in ops) == sorted(
        ["collab.post"] * 3 + ["collab.handoff", "collab.update", "collab.update",
                               "collab.read", "collab.accept", "collab.claim"])
    assert {o["outcome"] for o in ops if o["capability_key"] != "collab.post"} == {"succeeded"}


async def test_i37_2_two_nodes_accept_one_handoff_at_once_exactly_one_wins(
        backend_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    lead, alpha, beta = servers(), servers(), servers()
    lead.script(calls(tool_call("h1", "collab_handoff", to="*", payload="the job")),
                answer("offered"))
    for srv in (alpha, beta):
        srv.script(calls(tool_call("a1", "collab_accept")), answer("tried"))
    spec = (Workflow("race").agent("lead", "lead").agent("alpha", "alpha").agent("beta", "beta")
            .edge("lead", ["alpha", "beta"]).build())
    rt = runtime_factory([AgentSpec(name=n, model=connection(s), tools=COLLAB)
                          for n, s in (("lead", lead), ("alpha", alpha), ("beta", beta))],
                         store=backend_url, programs=[WorkflowProgram(spec)])

    done = await asyncio.wait_for(rt.run("race", agent="workflow:race"), WAIT_S)

    assert done.status == "succeeded", done.error
    got = {name: _results(srv, 1)["a1"] for name, srv in (("alpha", alpha), ("beta", beta))}
    winners = [n for n, r in got.items() if isinstance(r, dict) and r.get("status") == "accepted"]
    losers = [n for n, r in got.items() if "accepted it first" in json.dumps(r)]
    assert len(winners) == 1 and len(losers) == 1, got
    assert _codes(rt, done.run_id, "collab.accept") == ["HANDOFF_TAKEN"]
    (handoff,) = collab.handoffs(rt.store, done.run_id)
    assert handoff.status == "accepted" and handoff.accepted_by is not None
    assert handoff.accepted_by["node"] == winners[0]
    steps = rt.store.query(collab.REVISIONS, {"run_id": done.run_id, "kind": "handoff"})
    assert [r["revision"] for r in steps] == [2]  # one acceptance (an offer writes no step)


async def test_i37_2_a_tool_outside_any_workflow_fails_not_in_workflow(
        backend_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    """Listed by name next to a workflow (bound by ``WorkflowProgram.bind``) and resolved by
    hand without one: an agent's own run is no workflow node's, so every call fails."""
    solo, alone = servers(), servers()
    for srv in (solo, alone):
        srv.script(calls(tool_call("p1", "collab_post", to="worker", body="hi"),
                         tool_call("r1", "collab_read")), answer("ok"))
    spec = Workflow("team").agent("lead", "solo").build()
    rt = runtime_factory([AgentSpec(name="solo", model=connection(solo), tools=COLLAB)],
                         store=backend_url, programs=[WorkflowProgram(spec)])
    done = await asyncio.wait_for(rt.run("hello", agent="solo"), WAIT_S)
    rt2 = runtime_factory([AgentSpec(name="alone", model=connection(alone),
                                     tools=tuple(resolve(COLLAB)))], store=backend_url)
    done2 = await asyncio.wait_for(rt2.run("hello", agent="alone"), WAIT_S)

    for run, srv in ((done, solo), (done2, alone)):
        assert run.status == "succeeded", run.error
        got = _results(srv, 1)
        for call_id in ("p1", "r1"):
            assert "outside any workflow run" in got[call_id], got
        rt_of = rt if srv is solo else rt2
        assert _codes(rt_of, run.run_id, "collab.post") == ["NOT_IN_WORKFLOW"]
        assert _codes(rt_of, run.run_id, "collab.read") == ["NOT_IN_WORKFLOW"]
        assert collab.inbox(rt.store, run.run_id, "worker") == []


def _config(tmp_path: Path, body: str) -> Any:
    text = textwrap.dedent(body)
    return parse_config(yaml.safe_load(text), base_dir=tmp_path)


async def test_i37_2_yaml_agents_list_the_tools_and_load_without_a_workflow(
        tmp_path: Path) -> None:
    config = _config(tmp_path, """
        version: 1
        agents:
          helper:
            model: {builtin: test}
            tools: [fs.read, collab.post, collab.read, collab.handoff, collab.accept,
                    collab.claim, collab.update, artifact.publish]
        """)
    rt = runtime_from_config(config, store="memory://")
    try:
        keys = rt.agents["helper"].tool_keys()
        assert set(COLLAB) <= set(keys) and "artifact.publish" in keys
    finally:
        await rt.aclose()


def test_i37_2_a_misspelt_workflow_tool_is_a_load_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, """
            version: 1
            agents:
              helper: {model: {builtin: test}, tools: [collab.posts]}
            """)
    assert "agents.helper.tools[0]" in str(raised.value)
    assert "collab.post" in str(raised.value)


@pytest.mark.parametrize(("node", "where", "says"), [
    ("{wait: message, for: nobody}", "nodes.inbox.for", "'nobody' is not a node"),
    ("{wait: message, from: nobody}", "nodes.inbox.from", "'nobody' is not a node"),
    ("{wait: approval, for: lead}", "inbox", "belong to a wait for a message"),
])
def test_i37_2_a_message_wait_naming_no_node_is_a_load_error(
        tmp_path: Path, node: str, where: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(tmp_path, f"""
            version: 1
            agents:
              lead: {{model: {{builtin: test}}}}
            workflows:
              flow:
                nodes:
                  lead: {{agent: lead}}
                  inbox: {node}
            """)
    assert where in str(raised.value) and says in str(raised.value), str(raised.value)


def test_i37_2_the_python_builder_writes_the_yaml_keys_of_a_message_wait() -> None:
    spec = (Workflow("w").agent("lead", "lead")
            .wait("inbox", wait="message", for_node="lead", from_node="lead")
            .edge("lead", "inbox").build())
    assert spec.to_dict()["nodes"]["inbox"] == {"wait": "message", "question": "",
                                                "for": "lead", "from": "lead"}
    with pytest.raises(ConfigError, match="not a node"):
        Workflow("w").agent("lead", "lead").wait("inbox", wait="message",
                                                 for_node="ghost").build()


async def test_i37_2_accepts_racing_on_the_real_commit_path_exactly_one_wins_each_time(
        backend_url: str, tmp_path: Path) -> None:
    """The handler itself, twice at once per handoff (``asyncio.gather``) on a run driven
    here (``squad.live.driven``), committing through the run's real coordinator fenced by
    its real lease: of each pair one accepts and one fails ``HANDOFF_TAKEN``."""
    kernel = Kernel(backend_url, workspace_root=tmp_path / "ws")
    fence = seed_run(kernel.store, "wf-race")
    run = ProgramRun(
        run_id="wf-race", lease_epoch=fence.lease_epoch, task="",
        data={"deadline": time.time() + 60,
              "workflow": {"nodes": [{"node": n} for n in ("lead", "alpha", "beta")]}},
        cancel=CancelToken(), emit=lambda event: None, kernel=kernel,
        context=lambda *a, **k: None, invoke=lambda *a: None,  # type: ignore[arg-type,return-value]
        step_boundary=lambda: None)

    def call(tool: str, node: str, **arguments: Any) -> Any:
        spec, handler = collab_tool(tool, "rel")
        op = new_id()
        request = CapabilityRequest(operation_id=op, resource_version_id="rel",
                                    capability_key=spec.capability_key, arguments=arguments)
        context = AttemptContext(operation_id=op, attempt_no=1, run_id="wf-race", role=node,
                                 deadline=time.time() + 60,
                                 node=NodeRef(workflow_run_id="wf-race", name=node, attempt=1))
        return handler.invoke_once(request, context)

    try:
        with driven(run):
            for _ in range(5):
                offered = await call("collab.handoff", "lead", to="*", payload="job")
                handoff_id = json.loads(offered.text())["handoff_id"]
                results = await asyncio.gather(
                    call("collab.accept", "alpha", handoff_id=handoff_id),
                    call("collab.accept", "beta", handoff_id=handoff_id))
                assert sorted(r.status for r in results) == ["failed", "succeeded"]
                (lost,) = [r for r in results if r.status == "failed"]
                assert lost.error is not None and lost.error.code == "HANDOFF_TAKEN"
        found = collab.handoffs(kernel.store, "wf-race")
        assert len(found) == 5 and {h.status for h in found} == {"accepted"}
        steps = kernel.store.query(collab.REVISIONS, {"run_id": "wf-race", "kind": "handoff"})
        assert sorted(r["revision"] for r in steps) == [2] * 5  # one acceptance each
    finally:
        kernel.close()


async def test_i37_2_a_message_wait_ends_at_the_run_deadline_and_at_a_stop(
        backend_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    idle = servers()
    spec = Workflow("quiet").wait("inbox", wait="message").build()
    rt = runtime_factory([AgentSpec(name="idle", model=connection(idle))], store=backend_url,
                         programs=[WorkflowProgram(spec, limits=Limits(run_deadline_s=1.0))])
    began = time.monotonic()
    timed_out = await asyncio.wait_for(rt.run("wait", agent="workflow:quiet"), WAIT_S)
    assert timed_out.status != "succeeded" and time.monotonic() - began < WAIT_S / 2
    assert timed_out.error is not None and "deadline" in timed_out.error.message.lower(), \
        timed_out.error

    stopping = runtime_factory([AgentSpec(name="idle", model=connection(idle))],
                               store=backend_url, programs=[WorkflowProgram(spec)])
    handle = await stopping.start("wait", agent="workflow:quiet")
    await asyncio.wait_for(_until_waiting(stopping, handle.run_id), WAIT_S)
    await stopping.stop(handle.run_id)
    stopped = await asyncio.wait_for(handle.result(), WAIT_S)
    assert stopped.status in ("cancelled", "stopped"), stopped
    (row,) = node_rows(stopping.store, handle.run_id)
    assert row["status"] == "failed" and "WAIT_ENDED" in json.dumps(row["data"])


def _deny_message_wait(event: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "deny", "reason": "no messages today"}


async def test_i37_2_a_hook_denying_a_message_wait_fails_the_node_never_reads_as_rejected(
        backend_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    """Only a wait for a person's approval reads a denial as its answer ``rejected``; a denied
    wait for a message is a failed node, as any denied call is."""
    idle = servers()
    spec = Workflow("quiet").wait("inbox", wait="message").build()
    hook, ref, fn = before_hook("deny-wait", _deny_message_wait, capability="workflow.message")
    rt = runtime_factory([AgentSpec(name="idle", model=connection(idle))], store=backend_url,
                         programs=[WorkflowProgram(spec)], hooks=[hook],
                         hook_functions={ref: fn})
    ran = await asyncio.wait_for(rt.run("wait", agent="workflow:quiet"), WAIT_S)
    assert ran.status == "failed", ran
    (row,) = node_rows(rt.store, ran.run_id)
    assert row["status"] == "failed" and row["data"]["output"] != "rejected"
    assert "no messages today" in json.dumps(row["data"]["error"])


async def _until_waiting(rt: Runtime, run_id: str) -> None:
    """Until the wait's call has started (its operation is there): the store has no change
    feed to wait on, so it is polled, bounded by the caller's deadline."""
    while not any(o["capability_key"] == "workflow.message"  # noqa: ASYNC110  (docstring)
                  for o in rt.kernel.operations(run_id)):
        await asyncio.sleep(0.02)
