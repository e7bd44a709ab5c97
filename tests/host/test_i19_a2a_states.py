"""Issue 19, the server's run status → A2A ``TaskState`` mapping: each row of the table in
docs/a2a-serving.md is what ``task_of`` gives for a stored run of that status (its state and
what the task carries), and the table lists every run status."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest
from a2a.types import TaskState
from google.protobuf.json_format import MessageToDict

from agentloom.host.a2a.tasks import STATE_OF, task_of
from agentloom.results import RunStatus

DOC = Path(__file__).resolve().parents[2] / "docs" / "a2a-serving.md"
ROW = re.compile(r"^\| `(\w+)` \| `(TASK_STATE_\w+)` \|", re.M)
ERROR = {"code": "RUN_STOPPED", "category": "cancelled", "message": "cancelled over A2A by bob"}
WAITING = {"since": 1.0, "question": "Write it?", "operation_ids": ["op-1"],
           "calls": [{"operation_id": "op-1", "capability": "fs.write",
                      "question": "Write it?", "deadline": None}]}
A2A = {"context_id": "ctx", "message": {"messageId": "m1", "role": "ROLE_USER",
                                         "parts": [{"text": "do it"}]}}


def _row(status: str, **data: Any) -> dict[str, Any]:
    return {"run_id": "r1", "status": status, "updated_at": 12.5,
            "data": {"agent": "main", "a2a": A2A, **data}}


def _says(task: Any) -> str:
    return "".join(p.text for p in task.status.message.parts)


def test_i19_the_documented_table_is_the_mapping_and_lists_every_run_status() -> None:
    documented = dict(ROW.findall(DOC.read_text(encoding="utf-8")))
    assert documented == {status: TaskState.Name(state) for status, state in STATE_OF.items()}
    assert set(documented) == set(get_args(RunStatus))


@pytest.mark.parametrize(("row", "state", "says"), [
    (_row("pending"), "TASK_STATE_SUBMITTED", ""),
    (_row("running"), "TASK_STATE_WORKING", ""),
    (_row("suspended"), "TASK_STATE_WORKING", "suspended: its old holder may still be "
     "running it; an operator resumes it (agentloom runs resume --force)"),
    (_row("waiting", waiting=WAITING), "TASK_STATE_INPUT_REQUIRED",
     "Write it?\nfs.write (op-1): Write it?"),
    (_row("succeeded", output="done"), "TASK_STATE_COMPLETED", ""),
    (_row("failed", error={**ERROR, "code": "MODEL_ERROR", "message": "boom"}),
     "TASK_STATE_FAILED", "MODEL_ERROR: boom"),
    (_row("timed_out", error={**ERROR, "code": "RUN_DEADLINE", "message": "too long"}),
     "TASK_STATE_FAILED", "RUN_DEADLINE: too long"),
    (_row("cancelled", error=ERROR), "TASK_STATE_CANCELED",
     "RUN_STOPPED: cancelled over A2A by bob"),
    (_row("exploded"), "TASK_STATE_UNSPECIFIED", ""),
])
def test_i19_run_status_maps_to_task_state(row: dict[str, Any], state: str, says: str) -> None:
    task = task_of(row)
    assert (task.id, task.context_id) == ("r1", "ctx")
    assert TaskState.Name(task.status.state) == state
    assert _says(task) == says
    assert task.status.timestamp.ToNanoseconds() == 12_500_000_000
    assert [m.parts[0].text for m in task.history] == ["do it"]
    assert task.history[0].task_id == "r1"
    assert MessageToDict(task.metadata) == {"agentloom": {"agent": "main",
                                                          "run_status": row["status"]}}
    completed = state == "TASK_STATE_COMPLETED"
    assert [a.name for a in task.artifacts] == (["output"] if completed else [])
    if completed:
        assert task.artifacts[0].parts[0].text == "done"


def test_i19_a_structured_output_is_a_data_part_and_a_run_without_a2a_is_its_own_context(
        ) -> None:
    task = task_of({"run_id": "r2", "status": "succeeded", "updated_at": 1.0,
                    "data": {"agent": "main", "output": {"answer": 42}}})
    (part,) = task.artifacts[0].parts
    assert (part.media_type, MessageToDict(part.data)) == ("application/json", {"answer": 42})
    assert (task.context_id, list(task.history)) == ("r2", [])
