"""The run event model (F14): ``RunEvent`` and, per event type, its typed payload.

Owns: the payload classes (``EventData`` subclasses), ``PAYLOADS`` (event type → payload
class) and ``RunEvent``, which types a plain mapping given to it. The table of event types and
what makes them is in ``agentloom.agent.events`` (which also builds the stored projection and
re-exports everything here).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentloom.results import TERMINAL_RUN_STATUSES, TerminalRunStatus

__all__ = [
    "PAYLOADS", "TERMINAL", "CallStatus", "ContextCompacted", "EventData", "EventSink",
    "HookWarning", "ModelCallCompleted", "ModelCallStarted", "ModelDelta", "NodeCompleted",
    "NodeStarted", "RunEvent", "RunFinished", "RunResumed", "RunStarted", "RunWaiting",
    "ToolCallCompleted", "ToolCallStarted",
]

CallStatus = Literal["succeeded", "failed", "denied", "unknown", "cancelled"]
"""A call's status in an event: its envelope's outcome, both denials as ``denied``."""

TERMINAL = TERMINAL_RUN_STATUSES
"""The statuses a run ends with (``agentloom.results.TERMINAL_RUN_STATUSES``)."""

# -- payloads ------------------------------------------------------------------------------


class EventData(Mapping[str, Any]):
    """The payload of one event type: a frozen dataclass whose fields are its keys, every one
    always present (``None`` when not known), read as a mapping too (``data["status"]``).
    Payloads are declared ``eq=False``: they compare as mappings, equal to a dict with the
    same items."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key not in _keys(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_keys(type(self)))

    def __len__(self) -> int:
        return len(_keys(type(self)))


@functools.cache
def _keys(cls: type[EventData]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunStarted(EventData):
    """``run.started`` (a fork's also says where it came from, ``forked_from``, and where its
    files came from, ``files``: ``agent.fork``)."""

    agent: str | None = None
    task: str | None = None
    forked_from: Mapping[str, Any] | None = None
    files: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunFinished(EventData):
    """``run.finished``: the run's end as ``RunResult.to_dict`` gives it (``error`` is an
    ``OperationError.to_dict``; ``workspace`` the folder kept after the run, if any)."""

    status: TerminalRunStatus | None = None
    output: Any = None
    error: Mapping[str, Any] | None = None
    steps: int | None = None
    workspace: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunWaiting(EventData):
    """``run.waiting``: the run waits for a person's answer to a call a hook asked about —
    ``approval_id`` (the call's operation id: one approval per call), the call
    (``operation_id``, ``capability``), the ``question`` and the ``deadline`` (epoch seconds;
    None: none) after which its default answer applies. One event per waiting call."""

    approval_id: str | None = None
    operation_id: str | None = None
    capability: str | None = None
    question: str | None = None
    deadline: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunResumed(EventData):
    """``run.resumed``: the answer after which nothing of the run waits any more, so it goes
    on: its approval and call, ``status`` (``approved`` / ``rejected`` / ``expired``), the
    ``decision`` that applies (``approve`` / ``deny``), ``actor`` and ``reason``. At the time
    of the answer (a worker claims the run right after)."""

    approval_id: str | None = None
    operation_id: str | None = None
    capability: str | None = None
    status: str | None = None
    decision: str | None = None
    actor: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ModelCallStarted(EventData):
    """``model.call.started``: ``turn`` of the invocation of ``role``; ``purpose`` is
    ``compaction`` for a summarising call."""

    role: str | None = None
    turn: int | None = None
    logical_key: str | None = None
    operation_id: str | None = None
    capability: str | None = None
    purpose: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ModelCallCompleted(ModelCallStarted):
    """``model.call.completed``: the call's real ``status``; ``error_code`` when it failed,
    ``finish_reason`` and the number of ``tool_calls`` when it answered; ``answer_rejected``
    (live only) why a structured final answer was refused (``agent.output``)."""

    status: CallStatus | None = None
    attempts: int | None = None
    error_code: str | None = None
    finish_reason: str | None = None
    tool_calls: int | None = None
    answer_rejected: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ModelDelta(EventData):
    """``model.delta`` (live only, for subscribers that ask): a piece of the ``text`` or
    ``reasoning`` (``kind``) of a model call of ``role``, as the provider sent it. ``attempt``
    numbers the call's Attempt (a retried call's text starts over); ``dropped`` counts the
    pieces this subscriber missed just before this one (it was not reading fast enough). An
    observation: the call's record is its complete response (``model.call.completed``)."""

    role: str | None = None
    capability: str | None = None
    purpose: str | None = None
    operation_id: str | None = None
    attempt: int | None = None
    kind: Literal["text", "reasoning"] | None = None
    text: str | None = None
    dropped: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ToolCallStarted(EventData):
    """``tool.call.started`` / ``delegation.call.started``, keyed by the model's ``call_id``."""

    role: str | None = None
    call_id: str | None = None
    capability: str | None = None
    operation_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ToolCallCompleted(ToolCallStarted):
    """``tool.call.completed`` / ``delegation.call.completed``: the call's real ``status`` and
    a ``summary`` taken from its actual result."""

    status: CallStatus | None = None
    attempts: int | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ContextCompacted(EventData):
    """``context.compacted`` (live only): older turns of ``role`` were summarised."""

    role: str | None = None
    turn: int | None = None
    replaced: int | None = None
    messages_before: int | None = None
    messages_after: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class HookWarning(EventData):
    """``hook.warning`` (live only; ``runs show`` lists them as ``warnings``): a hook failed,
    could not decide or had its patch dropped."""

    operation_id: str | None = None
    capability: str | None = None
    hook_id: str | None = None
    timing: str | None = None
    status: str | None = None
    code: str | None = None
    message: str | None = None
    denied: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class NodeStarted(EventData):
    """``node.started``: an activation of a workflow node (issue 20), keyed by its ``call_id``
    (``<node>#<attempt>``, also the call id of the node's call)."""

    workflow: str | None = None
    node: str | None = None
    attempt: int | None = None
    call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class NodeCompleted(NodeStarted):
    """``node.completed``: the node's real ``status`` (``succeeded`` / ``failed``), its call's
    ``operation_id`` and ``error_code`` when it failed. ``node.waiting`` (live only): the
    node waits for a person; ``reason`` says why."""

    operation_id: str | None = None
    status: str | None = None
    error_code: str | None = None
    reason: str | None = None


PAYLOADS: Mapping[str, type[EventData]] = {
    "node.started": NodeStarted,
    "node.completed": NodeCompleted,
    "node.waiting": NodeCompleted,
    "run.started": RunStarted,
    "run.finished": RunFinished,
    "run.waiting": RunWaiting,
    "run.resumed": RunResumed,
    "model.call.started": ModelCallStarted,
    "model.call.completed": ModelCallCompleted,
    "model.delta": ModelDelta,
    "tool.call.started": ToolCallStarted,
    "tool.call.completed": ToolCallCompleted,
    "delegation.call.started": ToolCallStarted,
    "delegation.call.completed": ToolCallCompleted,
    "context.compacted": ContextCompacted,
    "hook.warning": HookWarning,
}
"""The payload type of every event type."""


def _typed(event_type: str, run_id: str, data: Mapping[str, Any]) -> EventData:
    """``data`` as the payload of ``event_type``.

    Raises:
        ValueError: an unknown event type, or a key its payload does not have.
    """
    cls = PAYLOADS.get(event_type)
    if cls is None:
        raise ValueError(f"unknown run event type {event_type!r}; known: {sorted(PAYLOADS)}")
    if type(data) is cls:
        return data
    items = dict(data)
    if items.get("run_id", run_id) == run_id:  # carried once, by the event
        items.pop("run_id", None)
    unknown = sorted(set(items) - set(_keys(cls)))
    if unknown:
        raise ValueError(f"a {event_type} event has no keys {unknown}; its keys are "
                         f"{list(_keys(cls))} ({cls.__name__})")
    return cls(**items)


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One low-frequency run event (``run.started``, ``tool.call.completed``, …) as the run
    handle and ``agentloom runs events`` show it: a type, the run, a time and its typed
    payload ``data`` (``PAYLOADS[type]``; a plain mapping given here is typed) — never a
    message body (F14), and a token delta only as ``model.delta``, to whoever asked."""

    type: str
    run_id: str
    at: float
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _typed(self.type, self.run_id, self.data))

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON: ``type``, ``run_id``, ``at`` and every key of its payload."""
        return {"type": self.type, "run_id": self.run_id, "at": self.at, **self.data}


EventSink = Callable[[RunEvent], None]
