"""Issue 37, acceptance 2 (point 2): a workflow process SIGKILLed between a handoff's offer
and its acceptance, then ``agentloom runs resume``, on SQLite and PostgreSQL (real
``agentloom`` subprocesses, ``AGENTLOOM_CRASH_AT``; agents on offline ``script`` models).

::

    lead (collab.handoff to worker) ──► worker (collab.accept)

``collab_committed@1``: killed just after the offer committed, before the call's result was
saved; ``@2``: just after the acceptance committed, before its result was saved. Either way
the resumed run ends succeeded with one handoff row, accepted once (one revision step), by
the one accept call whose result the worker got: nothing recorded twice, nothing half done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.squad import collab
from agentloom.store import open_store

pytestmark = pytest.mark.kill

TIMEOUT_S = 60

CONFIG = """\
version: 1
agents:
  lead:
    model: {builtin: script, path: lead.yaml}
    tools: [collab.handoff]
  worker:
    model: {builtin: script, path: worker.yaml}
    tools: [collab.accept]
workflows:
  relay:
    nodes:
      lead: {agent: lead}
      worker: {agent: worker, input: "take the job"}
    edges:
      - {from: lead, to: worker}
sandbox: {backend: none}
"""
LEAD = """\
turns:
  - tool_calls:
      - name: collab_handoff
        arguments: {to: worker, payload: {job: 7}}
  - expect: {role: tool, contains: pending}
    text: offered
"""
WORKER = """\
turns:
  - tool_calls:
      - name: collab_accept
        arguments: {}
  - expect: {role: tool, contains: accepted}
    text: took job 7
"""


def _agentloom(folder: Path, store: str, *args: str, crash_at: str | None = None
               ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTLOOM_STORE",
                                                            "AGENTLOOM_CRASH_AT")}
    if crash_at is not None:
        env["AGENTLOOM_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "agentloom", *args, "--store", store, "--json"],
                          cwd=folder, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)


def _rows(store_url: str, run_id: str) -> dict[str, Any]:
    store = open_store(store_url)
    try:
        return {"handoffs": collab.handoffs(store, run_id),
                "steps": store.query(collab.REVISIONS, {"run_id": run_id, "kind": "handoff"}),
                "ops": store.query("operations", {"run_id": run_id}),
                "runs": store.query("runs")}
    finally:
        store.close()


@pytest.mark.parametrize("point", ["collab_committed@1", "collab_committed@2"])
def test_i37_2_killed_between_offer_and_acceptance_resumes_with_one_handoff_accepted_once(
        durable_store_url: str, tmp_path: Path, point: str) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    for name, text in (("agentloom.yaml", CONFIG), ("lead.yaml", LEAD), ("worker.yaml", WORKER)):
        (folder / name).write_text(text, encoding="utf-8")

    killed = _agentloom(folder, durable_store_url, "run", "agentloom.yaml", "--workflow",
                        "relay", "go", crash_at=point)

    assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
    (run,) = _rows(durable_store_url, "")["runs"]
    run_id = str(run["run_id"])
    before = _rows(durable_store_url, run_id)
    (offered,) = before["handoffs"]  # the offer is committed, once
    assert offered.status == ("pending" if point.endswith("@1") else "accepted")

    done = _agentloom(folder, durable_store_url, "runs", "resume", run_id)

    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    assert json.loads(done.stdout)["output"] == "took job 7"
    after = _rows(durable_store_url, run_id)
    (handoff,) = after["handoffs"]
    assert handoff.handoff_id == offered.handoff_id and handoff.status == "accepted"
    assert handoff.payload == {"job": 7} and handoff.accepted_by is not None
    assert [s["revision"] for s in after["steps"]] == [2]  # accepted once
    by_key: dict[str, list[dict[str, Any]]] = {}
    for op in after["ops"]:
        by_key.setdefault(op["capability_key"], []).append(op)
    (offer_op,) = by_key["collab.handoff"]
    (accept_op,) = by_key["collab.accept"]
    assert offer_op["outcome"] == accept_op["outcome"] == "succeeded"
    assert handoff.handoff_id == f"h-{offer_op['operation_id']}"
    assert handoff.accepted_by["operation_id"] == accept_op["operation_id"]
    assert handoff.accepted_by["node"] == "worker"


WAIT_CONFIG = """\
version: 1
agents:
  worker:
    model: {builtin: script, path: worker.yaml}
    tools: [collab.post]
workflows:
  inbox:
    nodes:
      start: {capability: "i37_tools:start"}
      worker: {agent: worker, input: "report"}
      report: {wait: message, from: worker}
    edges:
      - {from: start, to: [worker, report]}
    limits: {run_deadline_s: 30}
sandbox: {backend: none}
"""
POSTER = """\
turns:
  - tool_calls:
      - name: collab_post
        arguments: {to: report, body: {sum: 5}}
  - expect: {role: tool}
    text: posted
"""
START = '''
from agentloom import StrictInput, Tool, ToolContext


class Nothing(StrictInput):
    pass


class Start(Tool[Nothing]):
    name = "i37.start"
    description = "Start the workflow."

    async def execute(self, args: Nothing, ctx: ToolContext) -> str:
        return "go"


start = Start()
'''


def test_i37_2_a_wait_killed_after_it_took_its_message_takes_the_same_one_on_resume(
        durable_store_url: str, tmp_path: Path) -> None:
    """The worker's post is commit 1, the wait's read mark commit 2: killed there, the
    resumed wait takes the message it marked (read now, by its own operation) — it neither
    waits for another nor takes one twice."""
    folder = tmp_path / "p"
    folder.mkdir()
    for name, text in (("agentloom.yaml", WAIT_CONFIG), ("worker.yaml", POSTER),
                       ("i37_tools.py", START)):
        (folder / name).write_text(text, encoding="utf-8")

    killed = _agentloom(folder, durable_store_url, "run", "agentloom.yaml", "--workflow",
                        "inbox", "go", crash_at="collab_committed@2")

    assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
    (run,) = _rows(durable_store_url, "")["runs"]
    run_id = str(run["run_id"])
    store = open_store(durable_store_url)
    try:
        (taken,) = collab.inbox(store, run_id, "report")
    finally:
        store.close()
    assert taken.read_at is not None and taken.read_by is not None  # marked, result unsaved

    done = _agentloom(folder, durable_store_url, "runs", "resume", run_id)

    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    assert json.loads(done.stdout)["output"] == '{"sum": 5}'  # a JSON body, as JSON text
    store = open_store(durable_store_url)
    try:
        (again,) = collab.inbox(store, run_id, "report")
        waits = [o for o in store.query("operations", {"run_id": run_id})
                 if o["capability_key"] == "workflow.message"]
    finally:
        store.close()
    assert again.message_id == taken.message_id and again.read_by == taken.read_by
    (wait_op,) = waits
    assert wait_op["operation_id"] == taken.read_by and wait_op["outcome"] == "succeeded"
