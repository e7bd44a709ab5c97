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
``run.waiting``                               ``RunWaiting`` (one per call a person is asked)
``run.resumed``                               ``RunResumed`` (stored; the answer that let it go on)
``run.finished``                              ``RunFinished``
``context.compacted`` (live only)             ``ContextCompacted``
``hook.warning`` (live only)                  ``HookWarning``
``node.started`` / ``.completed``             ``NodeStarted`` / ``NodeCompleted`` (workflows)
``node.waiting`` (live only)                  ``NodeCompleted``
``model.delta`` (live, asked for only)        ``ModelDelta``
============================================  =============================================

``model.delta`` is the one exception to "no token deltas": a piece of a model's text or
reasoning as it arrives, given only to a subscriber that asks for it
(``RunHandle.events(deltas=True)``), never stored, never seen by hooks (000 §4).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, assert_never

from agentloom.agent.event_types import (
    PAYLOADS,
    TERMINAL,
    CallStatus,
    ContextCompacted,
    EventData,
    EventSink,
    HookWarning,
    ModelCallCompleted,
    ModelCallStarted,
    ModelDelta,
    NodeCompleted,
    NodeStarted,
    RunEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    RunWaiting,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentloom.agent.fork import fork_facts
from agentloom.models.gateway import response_from_dict
from agentloom.models.types import ModelResponse
from agentloom.pipeline.records import stored_envelope
from agentloom.results import JsonBlock, OperationResult, ToolResult
from agentloom.store import Store
from agentloom.store.approvals import ApprovalRecord, run_approvals
from agentloom.store.records import OperationRecord, get_run, operations
from agentloom.store.workflow_nodes import node_records

__all__ = [
    "PAYLOADS", "TERMINAL", "CallStatus", "ContextCompacted", "EventData", "EventSink",
    "HookWarning", "ModelCallCompleted", "ModelCallStarted", "ModelDelta", "NodeCompleted",
    "NodeStarted", "RunEvent", "RunFinished", "RunResumed", "RunStarted", "RunWaiting",
    "ToolCallCompleted", "ToolCallStarted", "command_failure", "envelope_status", "run_events",
    "stored_response", "summary_of",
]

SUMMARY_LIMIT = 200
SUMMARY_WINDOW = 16 * SUMMARY_LIMIT  # characters of a result looked at for its summary
COMMAND_TAIL = 300  # characters of a failed command's output its summary ends with …
COMMAND_LINES = 5  # … and at most this many of its last lines


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
                       RunStarted(agent=run.agent, task=run.task,
                                  **fork_facts(run.data)))]
    for op in operations(store, run_id, lenient=True):
        kind = _kind(op.event_type)
        events += (_model_events(run_id, op, store) if kind == "model"
                   else _call_events(run_id, kind, op, store))
    events += _node_events(store, run_id)
    events += _approval_events(run_id, run_approvals(store, run_id))
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


def _approval_events(run_id: str, approvals: list[ApprovalRecord]) -> list[RunEvent]:
    """``run.waiting`` for every call a person was asked about (when it was asked), and
    ``run.resumed`` at each answer after which none of the run's calls waited any more."""
    events = [RunEvent("run.waiting", run_id, a.created_at, RunWaiting(
        approval_id=a.operation_id, operation_id=a.operation_id, capability=a.capability_key,
        question=a.question, deadline=a.deadline)) for a in approvals]
    for a in approvals:
        if a.answered_at is None:
            continue
        done = (a.answered_at, a.operation_id)
        if any(b.created_at <= a.answered_at and (b.answered_at is None
                                                  or (b.answered_at, b.operation_id) > done)
               for b in approvals if b is not a):
            continue  # another call of the run still waited: the run did not go on yet
        events.append(RunEvent("run.resumed", run_id, a.answered_at, RunResumed(
            approval_id=a.operation_id, operation_id=a.operation_id,
            capability=a.capability_key, status=a.status, decision=a.answer, actor=a.actor,
            reason=a.reason)))
    return events
