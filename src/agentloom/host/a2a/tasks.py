"""An AgentLoom run seen as an A2A 1.0 ``Task``: the task id **is** the run id, and everything
the task shows is read from the run's row in the store — so a server restart loses nothing.

::

    RunRecord (status, data.output / error / waiting, data.a2a) ──► task_of(run) ──► Task
    (store.runs, read as stored)

Run status → ``TaskState`` (docs/a2a-serving.md has the table):

=============  ============================  ==================================================
run status     task state                    what the task carries
=============  ============================  ==================================================
pending        TASK_STATE_SUBMITTED          —
running        TASK_STATE_WORKING            (also a run whose holder died: a worker resumes it)
suspended      TASK_STATE_WORKING            a status message: an operator must resume it
waiting        TASK_STATE_INPUT_REQUIRED     the question(s) of the calls that wait for a person
succeeded      TASK_STATE_COMPLETED          the output as the artifact ``output``
failed         TASK_STATE_FAILED             the error as the status message
timed_out      TASK_STATE_FAILED             the error as the status message
cancelled      TASK_STATE_CANCELED           the reason as the status message
=============  ============================  ==================================================

A run started over A2A keeps its ``contextId`` and the message that started it in
``data.a2a``; any other run of the principal (``POST /v1/runs``) is a task too, its context id
its run id. The task's ``history`` is that first message, then each message sent to the working
task (the run's supplements, ``follow_ups``), in the order sent. ``metadata.agentloom`` names
the run's agent and stored status.

Owns: the mapping, reading a message's text, the facts a new run keeps. Does not own the
requests (``host.a2a.handler``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never, cast

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import ContentTypeNotSupportedError
from google.protobuf.json_format import MessageToDict, ParseDict  # type: ignore[import-untyped]
from google.protobuf.struct_pb2 import Value  # type: ignore[import-untyped]
from google.protobuf.timestamp_pb2 import Timestamp  # type: ignore[import-untyped]

from agentloom.agent.controls import SUPPLEMENT
from agentloom.canonical import sorted_json
from agentloom.results import RunStatus
from agentloom.store import Store
from agentloom.store.controls import run_controls
from agentloom.store.runs import RunRecord

__all__ = ["INTERRUPTED", "STATE_OF", "TERMINAL", "FollowUp", "facts_of", "follow_ups",
           "task_of", "text_of"]

FollowUp = tuple[str, str]  # (message id: the control's id, text) of a message to a working task

STATE_OF: dict[RunStatus, TaskState] = {
    "pending": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "suspended": TaskState.TASK_STATE_WORKING,
    "waiting": TaskState.TASK_STATE_INPUT_REQUIRED,
    "succeeded": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "timed_out": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
TERMINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                      TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED})
INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED,
                         TaskState.TASK_STATE_AUTH_REQUIRED})
ARTIFACT = "output"


def state_of(status: str) -> TaskState:
    """The task state of a stored run status (``UNSPECIFIED`` for one this version does not
    know: a damaged row is never reported as progress)."""
    return STATE_OF.get(cast(RunStatus, status), TaskState.TASK_STATE_UNSPECIFIED)


def text_of(message: Message) -> str:
    """The run's task: the message's text parts, and its data parts as JSON, one per line.

    Raises:
        ContentTypeNotSupportedError: a file part (``raw`` or ``url``): AgentLoom agents take
            text.
    """
    lines: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            lines.append(part.text)
        elif kind == "data":
            lines.append(sorted_json(MessageToDict(part.data)))
        else:
            raise ContentTypeNotSupportedError(
                message=f"a {kind} part cannot be given to an AgentLoom agent: send text or "
                        "data parts")
    return "\n".join(lines)


def facts_of(message: Message, *, context_id: str) -> dict[str, Any]:
    """What a run started over A2A keeps in its data: its context and first message."""
    return {"a2a": {"context_id": context_id,
                    "message": MessageToDict(message, preserving_proto_field_name=False)}}


def follow_ups(store: Store, run_id: str) -> list[FollowUp]:
    """The messages sent to the run while it worked (its supplements), in the order sent."""
    return [(c.event_id, str(c.data.get("text", "")))
            for c in run_controls(store, run_id, kind=SUPPLEMENT)]


def task_of(run: RunRecord | Mapping[str, Any], follow: Sequence[FollowUp] = ()) -> Task:
    """The task of one run: its record (``store.runs``; read ``lenient``, a status this
    version does not know is ``UNSPECIFIED``) or its ``runs`` row as ``Store.get`` returns it;
    ``follow`` (``follow_ups``) is the rest of its history."""
    if isinstance(run, RunRecord):
        run_id, stored, updated_at, data = run.run_id, run.stored_status, run.updated_at, run.data
    else:
        run_id, stored, updated_at = str(run["run_id"]), str(run["status"]), run["updated_at"]
        data = run.get("data") or {}
    a2a: Mapping[str, Any] = data.get("a2a") or {}
    context_id = str(a2a.get("context_id") or run_id)
    state = state_of(stored)
    stamp = Timestamp()
    stamp.FromNanoseconds(int(float(updated_at) * 1e9))
    status = TaskStatus(state=state, timestamp=stamp)
    said = _status_text(stored, data)
    if said:
        status.message.CopyFrom(Message(
            message_id=f"{run_id}-status-{updated_at}", role=Role.ROLE_AGENT,
            task_id=run_id, context_id=context_id, parts=[Part(text=said)]))
    task = Task(id=run_id, context_id=context_id, status=status)
    if "message" in a2a:
        first = ParseDict(a2a["message"], Message(), ignore_unknown_fields=True)
        first.task_id, first.context_id = run_id, context_id
        task.history.append(first)
    for message_id, text in follow:
        task.history.append(Message(message_id=message_id, role=Role.ROLE_USER, task_id=run_id,
                                    context_id=context_id, parts=[Part(text=text)]))
    if state == TaskState.TASK_STATE_COMPLETED and data.get("output") is not None:
        task.artifacts.append(_artifact(run_id, data["output"]))
    task.metadata.update({"agentloom": {"agent": data.get("agent"),
                                        "run_status": stored}})
    return task


def _artifact(run_id: str, output: Any) -> Artifact:
    """The output: a text part, or a data part for a structured (JSON) one."""
    if isinstance(output, str):
        part = Part(text=output, media_type="text/plain")
    else:
        part = Part(data=ParseDict(output, Value()), media_type="application/json")
    return Artifact(artifact_id=f"{run_id}-{ARTIFACT}", name=ARTIFACT, parts=[part])


def _status_text(status: str, data: Mapping[str, Any]) -> str | None:
    """What the status message says: the question, the error, the suspension."""
    known = status if status in STATE_OF else None
    match known:
        case "waiting":
            waiting = data.get("waiting") or {}
            calls = waiting.get("calls") or []
            asked = [f"{c.get('capability')} ({c.get('operation_id')}): {c.get('question')}"
                     for c in calls if isinstance(c, Mapping)]
            return "\n".join([str(waiting.get("question") or "a call waits for an answer"),
                              *asked])
        case "failed" | "timed_out" | "cancelled":
            error = data.get("error") or {}
            text = f"{error.get('code', status)}: {error.get('message', '')}".rstrip(": ")
            return text or status
        case "suspended":
            return ("suspended: its old holder may still be running it; an operator resumes "
                    "it (agentloom runs resume --force)")
        case "pending" | "running" | "succeeded" | None:
            return None
        case _:
            assert_never(known)
