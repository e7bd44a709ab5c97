"""003 F12 with workflows: a workflow's run is queued and claimed like an agent's, in the same
one atomic claim that checks the worker's cap and each agent's — a runtime cap of 1 with an
agent and a workflow claims one run, never two. And a worker process drives a queued workflow
run to its wait for a person, and (a new worker process) on to its end once it is approved."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from tests.agent.conftest import WAIT_S
from tests.cli.support import agentloom

from agentloom.agent import AgentSpec, Runtime
from agentloom.results import TERMINAL_RUN_STATUSES
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram

from .test_i20_cli import _project


async def test_f12_runtime_cap_1_with_an_agent_and_a_workflow_claims_only_one(
        durable_store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    spec = Workflow("note").capability("write", "fs.write",
                                       args={"path": "n.txt", "content": "{{ input.task }}"}).build()
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)],
                         store=durable_store_url, programs=[WorkflowProgram(spec)])
    agent_run = await rt.submit("hello", agent="main")
    workflow_run = await rt.submit("hello", agent="workflow:note")

    first = rt.claim_next(worker_cap=1)
    assert first is not None and first.run_id == agent_run  # oldest first
    assert rt.claim_next(worker_cap=1) is None  # the cap is 1: the workflow's run waits
    done = await asyncio.wait_for((await rt.take(first)).result(), WAIT_S)
    assert done.status in TERMINAL_RUN_STATUSES  # ended: the slot is free again

    second = rt.claim_next(worker_cap=1)
    assert second is not None and second.run_id == workflow_run
    ended = await asyncio.wait_for((await rt.take(second)).result(), WAIT_S)
    assert ended.status == "succeeded" and ended.output is not None


def test_i20_a_worker_drives_a_queued_workflow_to_its_wait_and_another_finishes_it(
        tmp_path: Path) -> None:
    config = _project(tmp_path)
    store = f"sqlite:///{tmp_path / 'q.db'}"
    queued = agentloom("submit", str(config), "ship it", "--workflow", "release", "--store", store,
                       "--json", cwd=tmp_path)
    assert queued.returncode == 0, queued.stderr
    run_id = json.loads(queued.stdout)["run_id"]
    assert json.loads(queued.stdout)["agent"] == "workflow:release"

    worked = agentloom("worker", str(config), "--once", "--store", store, cwd=tmp_path)
    assert worked.returncode == 0, worked.stderr
    shown = json.loads(agentloom("runs", "show", run_id, "--json", "--store", store,
                                 cwd=tmp_path).stdout)
    assert shown["status"] == "waiting" and shown["current"] == ["approve"]
    (approval,) = shown["diagnosis"]["waiting_for"]["approvals"]
    answered = agentloom("runs", "approve", run_id, approval["operation_id"], "--store", store,
                         cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr

    again = agentloom("worker", str(config), "--once", "--store", store, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    shown = json.loads(agentloom("runs", "show", run_id, "--json", "--store", store,
                                 cwd=tmp_path).stdout)
    assert shown["status"] == "succeeded", shown["error"]
    assert [n["status"] for n in shown["nodes"]] == ["succeeded"] * 4
    assert "version 2.0" in shown["output"]
