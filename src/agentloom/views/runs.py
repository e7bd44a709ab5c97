"""What the ``runs`` commands and the host's ``/v1/runs`` routes show, as plain JSON-ready data
read from the store (here, below both, so the CLI and the host share one shape).

``run_detail`` is the shape of ``agentloom runs show --json``: the run (with the
``sandbox_backend`` it was started with; null for a run recorded before it was) and one entry per
operation — its status in the spec's vocabulary, every Attempt (``attempts`` table), every hook
run (``hook_invocations`` table), the arguments the model proposed beside the ones that were
executed, and the raw result beside the effective one. Runs and operations are read as typed
records (``store.records``; attempts, hook runs and cleanup jobs likewise: ``store.operations``,
``store.cleanup``) and an operation's data decoded with ``pipeline.records.OperationState``,
never by hand.

Cleanup: ``cleanup`` is the run's run-end cleanup job (000 §7.4) — ``pending`` (a failure
left it to be retried by ``agentloom worker`` or ``agentloom cleanup``), ``state``,
``attempts``, ``last_error`` and ``next_try`` (when a worker tries it again) — or null when
the run has none (it has not ended).

Usage: a model operation's ``usage`` is the token counts its provider reported with the raw
response (``null`` fields: not reported); ``duration_s`` of an operation is the time its
Attempts ran; a run's ``usage`` sums its model operations (the whole run tree's, compaction
included) and its ``duration_s`` is the wall-clock time from start to end.
"""

from __future__ import annotations

from typing import Any

from agentloom.agent.events import envelope_status, stored_response, summary_of
from agentloom.agent.fork import fork_facts
from agentloom.agent.leases import is_interrupted
from agentloom.agent.spec import DELEGATE_PREFIX
from agentloom.pipeline.records import OperationState
from agentloom.refs import NodeRef
from agentloom.results import ToolResult
from agentloom.store import Store
from agentloom.store.approvals import ApprovalRecord, get_approval
from agentloom.store.cleanup import run_cleanup_jobs
from agentloom.store.operations import AttemptRecord, hook_invocations
from agentloom.store.operations import attempts as attempt_records
from agentloom.store.records import OperationRecord, RunRecord, get_run, operations, runs
from agentloom.views.diagnosis import Surface, diagnose
from agentloom.views.workflow import workflow_detail

__all__ = ["TASK_EXCERPT", "USAGE_FIELDS", "approval_detail", "cleanup_detail", "excerpt",
           "operation_detail", "run_detail", "run_summaries"]

TASK_EXCERPT = 120
USAGE_FIELDS = ("input_tokens", "output_tokens", "reasoning_tokens")


def excerpt(text: str | None, limit: int = TASK_EXCERPT) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def run_summaries(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """Runs newest first: ``run_id``, ``status`` (``interrupted`` for a running run nothing
    drives any more), ``agent``, ``created_at``, ``updated_at`` and ``task`` (an excerpt;
    ``runs show`` has the whole task)."""
    return [{"run_id": r.run_id,
             "status": "interrupted" if is_interrupted(r, now) else r.stored_status,
             "agent": r.agent, "created_at": r.created_at, "updated_at": r.updated_at,
             "task": excerpt(r.task)}
            for now in (store.now(),)
            for r in runs(store, newest_first=True, limit=limit, lenient=True)]


def run_detail(store: Store, run_id: str, *, surface: Surface = "cli") -> dict[str, Any] | None:
    """The run with its operations (oldest first), or None when the store has no such run.
    ``surface``: who reads it — the diagnosis's ``next_step`` names the CLI's commands
    (``cli``) or the HTTP API's routes (``http``)."""
    run = get_run(store, run_id, lenient=True)  # a damaged row is shown as it is stored
    if run is None:
        return None
    # a damaged row is shown as it is stored, like the run's own row
    details = [operation_detail(store, op) for op in operations(store, run_id, lenient=True)]
    status = "interrupted" if is_interrupted(run, store.now()) else run.stored_status
    return {
        "run_id": run_id,
        "status": status,
        "agent": run.agent,
        "task": run.task,
        "session_id": run.session_id,
        "release_id": run.release_id,
        "sandbox_backend": run.sandbox_backend,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "lease_epoch": run.lease_epoch,
        "lease_owner": run.lease_owner,
        "lease_expires_at": run.lease_expires_at,
        "output": run.output,
        "error": run.data.get("error"),  # as stored: the JSON of an OperationError
        "failures": run.data.get("failures"),  # as stored (agent.failures)
        "steps": run.steps,
        **_run_totals(run, details),
        "warnings": run_warnings(details),
        "cleanup": cleanup_detail(store, run_id),
        "route": run.data.get("route"),  # its project's model route (agent.routes), no key
        # a fork (issue 38): {run_id, operation_id, turn, release_id, release_changed} of its
        # origin, and where its files came from
        "forked_from": run.data.get("forked_from"),
        "files": fork_facts(run.data).get("files"),
        # for a run that has not ended: who holds it, what it waits for, what comes next
        "diagnosis": diagnose(store, run, status, details, store.now(), surface=surface)
        if run.known_status else None,
        # a workflow run's graph state: its nodes (views.workflow)
        **_graph(store, run, details),
        "operations": details,
    }


def _graph(store: Store, run: RunRecord, details: list[dict[str, Any]]) -> dict[str, Any]:
    graph = workflow_detail(store, run.run_id, run.data.get("workflow"), details)
    return {} if graph is None else {"workflow": graph["workflow"], "current": graph["current"],
                                     "nodes": graph["nodes"], "edges": graph["edges"]}


def cleanup_detail(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's latest cleanup job as ``runs show`` prints it; None when it has none."""
    jobs = sorted(run_cleanup_jobs(store, run_id), key=lambda j: j.created_at)  # oldest first
    if not jobs:
        return None
    pending = [j for j in jobs if j.state == "pending"]
    job = (pending or jobs)[-1]
    errors = job.data.get("errors") or []
    return {"pending": bool(pending), "state": job.state, "job_id": job.job_id,
            "attempts": job.attempts, "last_error": errors[-1] if errors else None,
            "next_try": job.data.get("next_try") if pending else None}


HOOK_FAILURES = ("failed", "timed_out", "invalid", "indeterminate")


def run_warnings(operations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per hook that failed, could not decide or had its patch dropped:
    ``operation_id``, ``capability``, ``hook_id``, ``timing``, ``status``, ``code``
    (``HOOK_TIMED_OUT``, ``HOOK_PATCH_INVALID``, …), ``message`` and ``denied`` (its
    ``on_failure: deny`` denied the call)."""
    warnings = []
    for op in operations:
        for hook in op["hooks"]:
            dropped = hook.get("patch_error")
            if hook["status"] not in HOOK_FAILURES and not dropped:
                continue
            code, message = ((dropped["code"], dropped["message"]) if dropped else
                             (f"HOOK_{hook['status'].upper()}",
                              hook.get("diagnostic") or hook["status"]))
            warnings.append({"operation_id": op["operation_id"], "capability": op["capability"],
                             "hook_id": hook["hook_id"], "timing": hook["timing"],
                             "status": hook["status"], "code": code, "message": message,
                             "denied": hook.get("on_failure") == "deny"
                             or bool(hook.get("not_started"))})
    return warnings


def _run_totals(run: RunRecord, operations: list[dict[str, Any]]) -> dict[str, Any]:
    """``usage`` (each field summed over the model operations that reported it; ``null`` when
    none did) and ``duration_s`` (start to end; ``null`` while the run has not ended) of a run
    and its ``operation_detail``s."""
    reported = [op["usage"] for op in operations if op["usage"] is not None]
    usage = {f: sum(u[f] for u in reported if u[f] is not None)
             if any(u[f] is not None for u in reported) else None for f in USAGE_FIELDS}
    ended = run.ended is not None
    return {"usage": usage,
            "duration_s": round(run.updated_at - run.created_at, 3) if ended else None}


def _usage(result: ToolResult | None) -> dict[str, int | None] | None:
    """What a model call's provider reported using, from its raw response; None without one."""
    response = stored_response(result)
    usage = response.usage if response is not None else None
    return None if usage is None else {f: getattr(usage, f) for f in USAGE_FIELDS}


def _duration(attempts: list[AttemptRecord]) -> float | None:
    """Seconds the operation's Attempts ran (their sum); None when none has finished."""
    spans = [a.finished_at - a.started_at for a in attempts
             if a.started_at is not None and a.finished_at is not None]
    return round(sum(spans), 3) if spans else None


def _kind(op: OperationRecord) -> str:
    if op.event_type == "model":
        return "model"
    if op.event_type == "delegation" or op.capability_key.startswith(DELEGATE_PREFIX):
        return "delegation"
    return "tool"


def _text(result: ToolResult | None) -> str | None:
    if result is None:
        return None
    text = result.text()
    if result.error is not None:
        text = f"{text}\n{result.error.code}: {result.error.message}".strip()
    return text


def operation_detail(store: Store, op: OperationRecord) -> dict[str, Any]:
    """One operation as ``runs show`` prints it.

    ``status`` is ``succeeded`` / ``failed`` / ``denied`` / ``unknown`` / ``cancelled`` once
    the operation is terminal, ``running`` before (``phase`` says how far it got).
    """
    state = OperationState.from_row(op.to_row(), store)
    envelope = state.envelope_result() if state.envelope is not None else None
    request = state.request
    attempts = attempt_records(store, state.operation_id)
    hooks = sorted(hook_invocations(store, state.operation_id),
                   key=lambda h: (h.timing != "before", h.position))
    raw = envelope.raw if envelope is not None else (
        ToolResult.from_dict(state.raw) if state.raw is not None else None)
    effective = envelope.result if envelope is not None else None
    executed = dict(state.payload) if state.attempts else None
    proposed = dict(request["proposed_arguments"])
    detail: dict[str, Any] = {
        "operation_id": state.operation_id,
        "capability": state.capability_key,
        "kind": _kind(op),
        "event_type": state.event_type,
        "role": request.get("role"),
        "call_id": request.get("call_id"),
        "logical_key": state.logical_key,
        "purpose": request.get("purpose"),
        # the workflow node the call served (issue 37): {workflow_run_id, name, attempt}
        "node": request.get("node"),
        "node_task_id": _node_task_id(request.get("node")),
        "phase": state.phase,
        "status": envelope_status(envelope) if envelope is not None else "running",
        "outcome": envelope.outcome if envelope is not None else None,
        "created_at": op.created_at,
        "updated_at": op.updated_at,
        "attempts": {
            "count": state.attempts,
            "items": [{"attempt_no": a.attempt_no, "status": a.status,
                       "started_at": a.started_at, "finished_at": a.finished_at}
                      for a in attempts],
        },
        "hooks": [{"hook_id": h.hook_id, "timing": h.timing, "position": h.position,
                   "status": h.status, "decision": h.decision,
                   "reason": h.data.get("reason"),
                   "diagnostic": h.data.get("diagnostic"),
                   "patch_error": h.data.get("patch_error"),
                   "on_failure": h.data.get("on_failure"),
                   "not_started": bool(h.data.get("not_started"))} for h in hooks],
        "proposed_arguments": proposed,
        "executed_arguments": executed,
        "arguments_changed": executed is not None and executed != proposed,
        "raw_result": _text(raw),
        "effective_result": _text(effective),
        "result_changed": raw is not None and effective is not None
        and effective.to_dict() != raw.to_dict(),
        "usage": _usage(raw) if op.event_type == "model" else None,
        "duration_s": _duration(attempts),
        "error": envelope.error.to_dict() if envelope is not None and envelope.error else None,
        "reason": envelope.reason if envelope is not None else None,
        "summary": summary_of(envelope) if envelope is not None else None,
        "approval": approval_detail(get_approval(store, state.operation_id)),
    }
    return detail


def _node_task_id(node: Any) -> str | None:
    """The call context's ``node_task_id`` of a recorded node, or ``None``."""
    if not isinstance(node, dict):
        return None
    return NodeRef(workflow_run_id=str(node["workflow_run_id"]), name=str(node["name"]),
                   attempt=int(node["attempt"])).task_id


def approval_detail(record: ApprovalRecord | None) -> dict[str, Any] | None:
    """A call's approval as ``runs show`` gives it beside the call (None: no hook asked a
    person about it): ``approval_id`` (the call's operation id: one approval per call),
    ``status`` (``pending`` / ``approved`` / ``rejected`` / ``expired``), ``decision`` (what
    applies: ``approve`` / ``deny``; the default once expired; null while pending),
    ``actor`` (who answered: ``cli:<user>``, a ``--as`` name, or an API key's actor; null
    while pending or expired), ``reason``, ``answered_at``, and what was asked:
    ``question``, ``asked_by`` (the hooks), ``asked_at``, ``deadline``, ``default`` and
    ``summary`` (one line: ``approved by alice at … (reason: …)``)."""
    if record is None:
        return None
    return {"approval_id": record.operation_id, "status": record.status,
            "decision": record.answer, "actor": record.actor, "reason": record.reason,
            "answered_at": record.answered_at, "question": record.question,
            "asked_by": list(record.asked_by), "asked_at": record.created_at,
            "deadline": record.deadline, "default": record.default,
            "summary": record.describe()}
