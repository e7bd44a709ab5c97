"""Low-frequency run events (F14): run, model call and tool call starts and ends.

Each tool call is its own pair, keyed by the model's ``call_id`` (two calls of the same
tool are two pairs); the status is the call's real outcome (``succeeded`` / ``failed`` /
``denied`` / ``unknown`` / ``cancelled``), never a default "ok"; the summary is taken
from the actual result. No token deltas, no message bodies.

Owns: the one event model — ``RunEvent`` and, per event type, its typed payload (``data``):
the same class and the same keys whether the event is live or stored. Live events go to the
run handle's subscribers as the loop makes them (a payload given as a plain mapping is typed
on the spot; a key its type does not have is refused). Stored events are a *projection* of
the committed facts (runs and operations rows, ``run_events``): nothing is written twice, and
what ``agentloom runs events`` prints is what the store says happened. A key one side cannot
know is ``None`` there (a live ``*.call.started`` comes before its operation exists).

Does not own: when events are made (the loop and the runtime), how they are shown (the CLI).

============================================  =============================================
type                                          payload
============================================  =============================================
``run.started``                               ``RunStarted``
``model.call.started`` / ``.completed``       ``ModelCallStarted`` / ``ModelCallCompleted``
``tool.call.started`` / ``.completed``        ``ToolCallStarted`` / ``ToolCallCompleted``
``delegation.call.started`` / ``.completed``  ``ToolCallStarted`` / ``ToolCallCompleted``
``run.finished``                              ``RunFinished``
``context.compacted`` (live only)             ``ContextCompacted``
``hook.warning`` (live only)                  ``HookWarning``
``node.started`` / ``.completed``             ``NodeStarted`` / ``NodeCompleted`` (workflows)
``node.waiting`` (live only)                  ``NodeCompleted``
============================================  =============================================
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from agentloom.models.gateway import response_from_dict
from agentloom.models.types import ModelResponse
from agentloom.pipeline.records import stored_envelope
from agentloom.results import (
    TERMINAL_RUN_STATUSES,
    JsonBlock,
    OperationResult,
    TerminalRunStatus,
    ToolResult,
)
from agentloom.store import Store
from agentloom.store.records import OperationRecord, get_run, operations
from agentloom.store.workflow_nodes import node_records

__all__ = [
    "PAYLOADS", "TERMINAL", "CallStatus", "ContextCompacted", "EventData", "EventSink",
    "HookWarning", "ModelCallCompleted", "ModelCallStarted", "NodeCompleted", "NodeStarted",
    "RunEvent", "RunFinished",
    "RunStarted", "ToolCallCompleted", "ToolCallStarted", "command_failure", "envelope_status",
    "run_events", "stored_response", "summary_of",
]

CallStatus = Literal["succeeded", "failed", "denied", "unknown", "cancelled"]
"""A call's status in an event: its envelope's outcome, both denials as ``denied``."""

TERMINAL = TERMINAL_RUN_STATUSES
"""The statuses a run ends with (``agentloom.results.TERMINAL_RUN_STATUSES``)."""

SUMMARY_LIMIT = 200
SUMMARY_WINDOW = 16 * SUMMARY_LIMIT  # characters of a result looked at for its summary
COMMAND_TAIL = 300  # characters of a failed command's output its summary ends with …
COMMAND_LINES = 5  # … and at most this many of its last lines


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
    """``run.started``."""

    agent: str | None = None
    task: str | None = None


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
    ``finish_reason`` and the number of ``tool_calls`` when it answered."""

    status: CallStatus | None = None
    attempts: int | None = None
    error_code: str | None = None
    finish_reason: str | None = None
    tool_calls: int | None = None


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
    "model.call.started": ModelCallStarted,
    "model.call.completed": ModelCallCompleted,
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
    token delta or a message body (F14)."""

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


# -- the stored projection -----------------------------------------------------------------


def envelope_status(envelope: OperationResult) -> CallStatus:
    """The call's status as events and ``runs show`` give it: its outcome, with both denials
    (before and after execution) as ``denied``."""
    outcome = envelope.outcome
    match outcome:
        case "denied_before_execution" | "denied_after_execution":
            return "denied"
        case "succeeded" | "failed" | "unknown" | "cancelled":
            return outcome
        case _:
            assert_never(outcome)


def summary_of(envelope: OperationResult) -> str:
    """A short summary taken from the call's actual result (or its error / denial): its head,
    on one line, at most ``SUMMARY_LIMIT`` characters — but ``exit N: <stderr tail>`` for a
    command that exited non-zero (``command_failure``), whose head says nothing."""
    body = _json_body(envelope.result) if envelope.outcome == "succeeded" else None
    failure = command_failure(body) if body is not None else None
    if failure is not None:
        return failure
    text = envelope.describe()
    cut = len(text) > SUMMARY_WINDOW
    if cut:  # summarise the head: a large result is never copied whole
        text = text[:SUMMARY_WINDOW]
    text = text.strip().replace("\n", " ")
    return text if len(text) <= SUMMARY_LIMIT and not cut else text[: SUMMARY_LIMIT - 1] + "…"


def command_failure(body: Mapping[str, Any]) -> str | None:
    """``exit N: <the last lines of stderr>`` for the result of a command that exited non-zero
    (a JSON object with an integer ``exit_code`` and a ``stderr`` text, as ``exec`` returns),
    ``exit N, stdout: <its last lines>`` when stderr is empty, ``exit N, no output`` when both
    are; None for anything else, a zero exit included. The tail is the last ``COMMAND_LINES``
    non-blank lines joined by `` ⏎ ``, at most ``COMMAND_TAIL`` characters (``…`` in front when
    cut): where a failing command says why."""
    code, stderr = body.get("exit_code"), body.get("stderr")
    if type(code) is not int or code == 0 or not isinstance(stderr, str):
        return None
    stdout = body.get("stdout")
    if tail := _tail(stderr):
        return f"exit {code}: {tail}"
    if isinstance(stdout, str) and (tail := _tail(stdout)):
        return f"exit {code}, stdout: {tail}"
    return f"exit {code}, no output"


def _tail(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tail = " ⏎ ".join(lines[-COMMAND_LINES:])
    if len(tail) > COMMAND_TAIL - 1:
        return "…" + tail[-(COMMAND_TAIL - 1):]
    return "… " + tail if len(lines) > COMMAND_LINES else tail


def _json_body(result: ToolResult | None) -> Mapping[str, Any] | None:
    """The JSON object a result holds as its one content block; None otherwise."""
    if result is None or len(result.content) != 1 or not isinstance(result.content[0], JsonBlock):
        return None
    data = result.content[0].data
    return data if isinstance(data, Mapping) else None


def stored_response(result: ToolResult | None) -> ModelResponse | None:
    """The model response a model operation's result holds; None without one (or when it is
    not a response the gateway can read)."""
    if result is None or len(result.content) != 1 or not isinstance(result.content[0], JsonBlock):
        return None
    try:
        return response_from_dict(result.content[0].data)
    except ValueError:
        return None


# The loop's logical key of a model call: ``<invocation>/t<turn>/<model|compact>[#k]``.
_TURN = re.compile(r"/t(\d+)/[^/]+$")


def _turn(logical_key: str) -> int | None:
    found = _TURN.search(logical_key)
    return int(found.group(1)) if found else None


def _kind(event_type: str) -> str:
    return {"model": "model", "delegation": "delegation"}.get(event_type, "tool")


def _model_events(run_id: str, op: OperationRecord, store: Store) -> list[RunEvent]:
    base = ModelCallStarted(role=op.role, turn=_turn(op.logical_key), logical_key=op.logical_key,
                            operation_id=op.operation_id, capability=op.capability_key,
                            purpose=op.purpose)
    events = [RunEvent("model.call.started", run_id, op.created_at, base)]
    envelope = stored_envelope(op.to_row(), store) if op.terminal else None
    if envelope is not None:
        response = stored_response(envelope.result or envelope.raw)
        events.append(RunEvent("model.call.completed", run_id, op.updated_at,
                               ModelCallCompleted(
            **base, status=envelope_status(envelope), attempts=envelope.attempts,
            error_code=envelope.error.code if envelope.error is not None else None,
            finish_reason=response.finish_reason if response is not None else None,
            tool_calls=len(response.tool_calls) if response is not None else None)))
    return events


def _call_events(run_id: str, kind: str, op: OperationRecord, store: Store) -> list[RunEvent]:
    base = ToolCallStarted(role=op.role, call_id=op.call_id, capability=op.capability_key,
                           operation_id=op.operation_id)
    events = [RunEvent(f"{kind}.call.started", run_id, op.created_at, base)]
    envelope = stored_envelope(op.to_row(), store) if op.terminal else None
    if envelope is not None:
        events.append(RunEvent(f"{kind}.call.completed", run_id, op.updated_at,
                               ToolCallCompleted(**base, status=envelope_status(envelope),
                                                 attempts=envelope.attempts,
                                                 summary=summary_of(envelope))))
    return events


def run_events(store: Store, run_id: str) -> list[RunEvent]:
    """The run's events, rebuilt from what was committed, oldest first."""
    run = get_run(store, run_id, lenient=True)  # shown as stored, even a damaged row
    if run is None:
        return []
    events = [RunEvent("run.started", run_id, run.created_at,
                       RunStarted(agent=run.agent, task=run.task))]
    for op in operations(store, run_id, lenient=True):
        kind = _kind(op.event_type)
        events += (_model_events(run_id, op, store) if kind == "model"
                   else _call_events(run_id, kind, op, store))
    events += _node_events(store, run_id)
    if run.ended is not None:  # ``error`` as stored: the JSON of an OperationError
        events.append(RunEvent("run.finished", run_id, run.updated_at, RunFinished(
            status=run.ended, output=run.output, error=run.data.get("error"), steps=run.steps,
            workspace=run.workspace)))
    events.sort(key=lambda e: e.at)
    return events


def _node_events(store: Store, run_id: str) -> list[RunEvent]:
    """A workflow run's node events, from its committed node records (``workflow_nodes``):
    each activation's start (at its call's start) and its end with its real status."""
    nodes = node_records(store, run_id)
    if not nodes:
        return []
    started = {op.operation_id: op.created_at for op in operations(store, run_id, lenient=True)}
    run = get_run(store, run_id, lenient=True)
    workflow = (run.data.get("workflow") or {}).get("name") if run is not None else None
    events = []
    for node in nodes:
        error = node.data.get("error") or {}
        base = NodeStarted(workflow=workflow, node=node.node, attempt=node.attempt,
                           call_id=node.data.get("call_id"))
        at = started.get(node.operation_id or "", node.created_at)
        events.append(RunEvent("node.started", run_id, at, base))
        if node.status in ("succeeded", "failed"):
            events.append(RunEvent("node.completed", run_id, node.updated_at, NodeCompleted(
                **base, operation_id=node.operation_id, status=node.status,
                error_code=error.get("code"))))
    return events
