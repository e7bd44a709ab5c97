"""Issue 19, acceptance 2 (client side): a real ``agentloom run`` process SIGKILLs itself
(``AGENTLOOM_CRASH_AT``) during an A2A call to the official ``a2a-sdk`` lab server, and
``agentloom runs resume`` finishes the run:

* killed after ``SendMessage`` returned the task but before its id was committed
  (``handle_received``) ─► the call is ``unknown`` and is never sent again: the server's log
  shows exactly one ``SendMessage``;
* killed after the task id was committed (``handle_saved``) ─► resume polls that task
  (``GetTask``) to its end: one ``SendMessage``, the task's real final state.

Streaming (the id comes with the stream's first event) and not (``return_immediately``), on
JSON-RPC; SQLite and PostgreSQL."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from a2a_lab import agentloom, project, send_turns

pytestmark = pytest.mark.kill


def _ops(run_id: str, store: str, cwd: Path) -> list[dict[str, Any]]:
    shown = json.loads(agentloom("runs", "show", run_id, "--store", store, "--json",
                                 cwd=cwd).stdout)
    return [o for o in shown["operations"] if o["capability"] == "a2a.lab.send"]


# each crash point polled, and the resumed one streamed too (on each store): a call cut off
# before its task id was committed is the same ``unknown`` whichever way it was sent
@pytest.mark.parametrize(("crash_at", "outcome", "streaming"), [
    ("handle_received@1", "unknown", False), ("handle_saved@1", "succeeded", False),
    ("handle_saved@1", "succeeded", True)], ids=["received-poll", "saved-poll", "saved-stream"])
def test_i19_2_a_killed_a2a_call_is_resumed_from_its_task_id_or_unknown_never_sent_twice(
    crash_at: str, outcome: str, streaming: bool, tmp_path: Path, durable_store_url: str,
    labs: Any,
) -> None:
    lab = labs("jsonrpc", streaming)
    tag = uuid.uuid4().hex[:8]
    config = project(tmp_path / "p", send_turns(f"slow 1 {tag}"),
                     agents=f"  lab: {{card_url: {json.dumps(lab.card_url)}}}\n")
    store = durable_store_url

    crashed = agentloom("run", str(config), "ask the lab", "--store", store, "--json",
                        cwd=tmp_path, crash_at=crash_at)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert len(lab.sent(tag)) == 1  # SendMessage reached the server before the kill
    (run,) = json.loads(agentloom("runs", "list", "--store", store, "--json",
                                  cwd=tmp_path).stdout)
    (before,) = _ops(run["run_id"], store, tmp_path)
    assert before["phase"] == "attempt_started"

    resumed = agentloom("runs", "resume", run["run_id"], "--store", store, "--json",
                        cwd=tmp_path)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    (op,) = _ops(run["run_id"], store, tmp_path)
    assert op["outcome"] == outcome and op["attempts"]["count"] == 1, op
    if outcome == "unknown":
        assert op["error"]["code"] == "ATTEMPT_OUTCOME_UNKNOWN"
    else:
        assert f"echo: {tag}" in op["effective_result"]
    assert len(lab.sent(tag)) == 1  # never sent again
