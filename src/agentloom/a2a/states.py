"""How a remote task's state becomes a ``ToolResult`` (issue 19; the table in docs/a2a.md).

=============================  ==========  =================  ===========================
A2A 1.0 ``TaskState``          status      outcome (code)     external_outcome
=============================  ==========  =================  ===========================
``TASK_STATE_COMPLETED``       succeeded   succeeded          —
``TASK_STATE_FAILED``          failed      failed             known  (A2A_TASK_FAILED)
``TASK_STATE_REJECTED``        failed      failed             known  (A2A_TASK_REJECTED)
``TASK_STATE_CANCELED``        failed      cancelled          unknown (A2A_TASK_CANCELED)
``TASK_STATE_INPUT_REQUIRED``  failed      failed             known  (A2A_INPUT_REQUIRED)
``TASK_STATE_AUTH_REQUIRED``   failed      failed             known  (A2A_AUTH_REQUIRED)
``SUBMITTED`` / ``WORKING``    —           followed (GetTask polls / the stream) until another
anything else (``UNSPECIFIED``,
a value 1.0 does not define)   unknown     unknown            unknown (A2A_STATE_UNKNOWN)
a ``Message`` (no task)        succeeded   succeeded          —
=============================  ==========  =================  ===========================

``CANCELED``'s effect is ``unknown``: the remote agent may have done part of its work before it
stopped, and cancelling undoes nothing. ``INPUT_REQUIRED`` / ``AUTH_REQUIRED`` are never a
success: the call fails with the agent's question, naming the task and its context, which the
model may answer with another call (``task_id`` + ``context_id``); AgentLoom does not make the
run wait for a person here (its approvals are for hooks' questions *before* a call runs).

Owns: the table and the content of a result (artifacts' parts, the status message). Does not
own: following a task (``handler``).
"""

from __future__ import annotations

from typing import Any, Final

from a2a.types import Message, Part, Task, TaskState
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from agentloom.a2a.errors import (
    A2A_AUTH_REQUIRED,
    A2A_INPUT_REQUIRED,
    A2A_STATE_UNKNOWN,
    A2A_TASK_CANCELED,
    A2A_TASK_FAILED,
    A2A_TASK_REJECTED,
    call_error,
)
from agentloom.errors import ExternalOutcome
from agentloom.results import ContentBlock, JsonBlock, TextBlock, ToolResult

__all__ = ["FOLLOWED", "result_of_message", "result_of_task", "state_name"]

FOLLOWED: Final = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
"""States a task is followed in (polled / streamed) until it leaves them."""

_FAILURES: Final[dict[int, tuple[str, ExternalOutcome, str]]] = {
    TaskState.TASK_STATE_FAILED: (A2A_TASK_FAILED, "known", "failed the task"),
    TaskState.TASK_STATE_REJECTED: (A2A_TASK_REJECTED, "known", "rejected the task"),
    TaskState.TASK_STATE_CANCELED: (A2A_TASK_CANCELED, "unknown", "cancelled the task (what it "
                                    "did before is not undone)"),
    TaskState.TASK_STATE_INPUT_REQUIRED: (A2A_INPUT_REQUIRED, "known", "needs input to go on"),
    TaskState.TASK_STATE_AUTH_REQUIRED: (A2A_AUTH_REQUIRED, "known", "needs authentication to "
                                         "go on"),
}
MAX_QUOTED = 2000


def state_name(state: int) -> str:
    """``TASK_STATE_…`` for a state A2A 1.0 defines, else ``state <n>``."""
    return TaskState.Name(state) if state in TaskState.values() else f"state {state}"


def result_of_task(task: Task, *, agent: str, receipt: str | None = None) -> ToolResult:
    """The ``ToolResult`` of ``task`` in the state it settled in (see the module's table).
    ``receipt``: what a stop sent (``CancelTask``), said first in an error message."""
    state = task.status.state
    meta = {"a2a": {"agent": agent, "task_id": task.id, "context_id": task.context_id,
                    "state": state_name(state), **({"receipt": receipt} if receipt else {})}}
    said = _text(task.status.message.parts) if task.status.HasField("message") else ""
    content = [b for artifact in task.artifacts for b in _blocks(artifact.parts)]
    ids = {"task_id": task.id, "context_id": task.context_id}
    if state == TaskState.TASK_STATE_COMPLETED:
        if not content and said:
            content = [TextBlock(said)]
        return ToolResult(status="succeeded", content=(*content, JsonBlock({"a2a": ids})),
                          metadata=meta)
    prefix = f"{receipt}; " if receipt else ""
    failure = _FAILURES.get(state)
    if failure is None:
        return ToolResult(status="unknown", content=tuple(content), metadata=meta,
                          error=call_error(A2A_STATE_UNKNOWN, (
                              f"{prefix}remote agent {agent!r} left task {task.id} in "
                              f"{state_name(state)}, which A2A 1.0 does not define as settled; "
                              "its outcome is unknown"), outcome="unknown",
                              details={**ids, "state": state_name(state)}))
    code, outcome, what = failure
    # what the agent said comes first: a model may be shown only the start of the message
    message = f"{prefix}remote agent {agent!r} {what}"
    if said:
        message += f": {said[:MAX_QUOTED]}"
    message += f" (task {task.id}, context {task.context_id})"
    if code == A2A_INPUT_REQUIRED:
        message += ("; to answer, send the answer as message with this task_id and context_id "
                    "(AgentLoom does not wait for it)")
    details: dict[str, Any] = {**ids, "state": state_name(state)}
    if said:
        details["said"] = said[:MAX_QUOTED]
    return ToolResult(status="failed", content=tuple(content), metadata=meta,
                      error=call_error(code, message, outcome=outcome, details=details))


def result_of_message(message: Message, *, agent: str) -> ToolResult:
    """A direct ``Message`` reply (no task): a success holding its parts."""
    meta = {"a2a": {"agent": agent, "context_id": message.context_id,
                    "message_id": message.message_id}}
    return ToolResult(status="succeeded", metadata=meta, content=(
        *_blocks(message.parts), JsonBlock({"a2a": {"context_id": message.context_id}})))


def _text(parts: Any) -> str:
    return "\n".join(p.text for p in parts if p.WhichOneof("content") == "text")


def _blocks(parts: Any) -> list[ContentBlock]:
    """Text parts as text, data parts as JSON; files (bytes or URL) described, not kept."""
    out: list[ContentBlock] = []
    for part in parts:
        assert isinstance(part, Part)
        kind = part.WhichOneof("content")
        if kind == "text":
            out.append(TextBlock(part.text))
        elif kind == "data":
            out.append(JsonBlock(MessageToDict(part)["data"]))
        elif kind == "url":
            out.append(JsonBlock({"type": "file_url", "url": part.url,
                                  "mediaType": part.media_type, "filename": part.filename}))
        elif kind == "raw":
            out.append(TextBlock(f"[file {part.filename or '(unnamed)'} ({part.media_type or 'bytes'}), "
                                 f"{len(part.raw)} bytes not kept]"))
    return out
