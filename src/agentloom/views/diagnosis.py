"""What ``runs show`` says about a run that has not ended (issue 17, 003 A2): who holds it,
what it waits for, its last committed step, the calls whose effect is not known, and what
happens next — so nobody has to read the tables to learn why a run does not move.

``next_step`` names what to do on the surface that shows it: the CLI's commands in ``runs show``
(``agentloom runs approve RUN OP``), the HTTP routes in the API's run view (``POST
/v1/runs/{run_id}/operations/{operation_id}/approve``) — an HTTP client may have no shell.

Owns: the ``diagnosis`` object of ``runs show --json`` and its lines. Does not own: the run's
record or operations (``views.runs``), nor deciding anything (it only reads).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from agentloom.agent.leases import holder_gone, lease_left_s
from agentloom.store import Store
from agentloom.store.approvals import ApprovalRecord, pending_approvals
from agentloom.store.records import RunRecord

__all__ = ["Surface", "diagnose", "diagnosis_lines"]

Surface = Literal["cli", "http"]
"""Who reads a diagnosis: ``runs show`` (its next step names commands) or the HTTP API (routes)."""

IN_FLIGHT_PHASES = ("attempt_started",)  # an Attempt began and its result is not committed


def diagnose(store: Store, run: RunRecord, state: str,
             operations: list[dict[str, Any]], now: float | None = None, *,
             surface: Surface = "cli") -> dict[str, Any] | None:
    """The diagnosis of a run in ``state`` (``pending``, ``running``, ``waiting``,
    ``suspended``, ``interrupted``); None for a run that ended. ``next_step`` names the
    commands of ``surface`` (``cli``) or its routes (``http``)."""
    if run.ended is not None:
        return None
    now = time.time() if now is None else now
    out: dict[str, Any] = {"state": state, "holder": None, "waiting_for": None,
                           "last_step": _last_step(operations),
                           "unknown_calls": _unknown_calls(operations)}
    if state == "running":
        out["holder"] = _holder(run, now)
        out["waiting_for"] = {"kind": "lease", "detail": "its holder drives it and renews its "
                              "lease; nothing waits"}
        out["next_step"] = ("its holder goes on; if the holder dies, a worker resumes the run "
                            "once its lease expires")
    elif state == "interrupted":
        out["holder"] = _holder(run, now)
        out["waiting_for"] = {"kind": "worker", "detail": "its holder is gone"
                              if holder_gone(run.lease_owner) else "its lease expired"}
        out["next_step"] = (f"a worker (agentloom worker CONFIG) resumes it, or at once: "
                            f"agentloom runs resume {run.run_id}") if surface == "cli" else (
            f"POST /v1/runs/{run.run_id}/resume puts it back in the queue; a worker of the "
            "host resumes it")
    elif state == "pending":
        out["waiting_for"] = {"kind": "queue", **_queue_place(store, run)}
        out["next_step"] = ("a worker of its configuration claims it (agentloom worker "
                            "CONFIG), or at once: agentloom runs resume " + run.run_id
                            ) if surface == "cli" else (
            "a worker of its configuration claims it (the host's own, or agentloom worker); "
            f"GET /v1/runs/{run.run_id}/events follows it")
    elif state == "waiting":
        approvals = [_approval(a) for a in pending_approvals(store, run.run_id)]
        out["waiting_for"] = {"kind": "approval", "approvals": approvals}
        op = approvals[0]["operation_id"] if approvals else "OPERATION"
        out["next_step"] = (f"a person answers: agentloom runs approve {run.run_id} {op} "
                            f"(or runs reject …) --reason TEXT; then a worker resumes it"
                            ) if surface == "cli" else (
            f"a person answers: POST /v1/runs/{run.run_id}/operations/{op}/approve (or "
            f"…/reject) with {{\"reason\": TEXT}}; then a worker resumes it")
    elif state == "suspended":
        suspended = run.data.get("suspended")
        reason = suspended.get("reason") if isinstance(suspended, dict) else None
        out["holder"] = _holder(run, now)
        out["waiting_for"] = {"kind": "revocation", "detail": reason or
                              "the old holder's processes could not be confirmed gone"}
        doubled = ", ".join(c["capability"] for c in out["unknown_calls"]) or "no call"
        out["next_step"] = (f"only agentloom runs resume {run.run_id} --force goes on; "
                            f"{doubled} may then run twice") if surface == "cli" else (
            f"only a forced resume goes on, which the API does not offer: agentloom runs "
            f"resume {run.run_id} --force on the host's store; {doubled} may then run twice")
    return out


def _holder(run: RunRecord, now: float) -> dict[str, Any] | None:
    if not run.lease_owner:
        return None
    return {"worker_id": run.lease_owner, "lease_epoch": run.lease_epoch,
            "lease_expires_at": run.lease_expires_at,
            "lease_left_s": round(lease_left_s(run, now), 3)}


def _queue_place(store: Store, run: RunRecord) -> dict[str, Any]:
    """Its place in the queue among the pending runs of its release: 1 is claimed next
    (counted in the store: a pending run's view costs the same however long the queue)."""
    ahead = store.queue_position(run.run_id) or 0
    return {"priority": run.priority, "position": ahead + 1, "ahead": ahead}


def _approval(approval: ApprovalRecord) -> dict[str, Any]:
    return {"operation_id": approval.operation_id, "question": approval.question,
            "capability": approval.capability_key, "arguments": dict(approval.arguments),
            "deadline": approval.deadline, "asked_at": approval.created_at}


def _last_step(operations: list[dict[str, Any]]) -> dict[str, Any] | None:
    done = [op for op in operations if op.get("phase") == "delivered"]
    if not done:
        return None
    op = done[-1]
    return {"operation_id": op["operation_id"], "capability": op["capability"],
            "outcome": op.get("outcome"), "at": op.get("updated_at")}


def _unknown_calls(operations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Calls that may have taken effect without a committed result: in flight under an old
    holder, or recorded ``unknown`` — with their executed arguments (what they may have done)."""
    return [{"operation_id": op["operation_id"], "capability": op["capability"],
             "phase": op.get("phase"), "outcome": op.get("outcome"),
             "arguments": op.get("executed_arguments") or op.get("proposed_arguments")}
            for op in operations
            if op.get("outcome") == "unknown" or op.get("phase") in IN_FLIGHT_PHASES]


def diagnosis_lines(diagnosis: dict[str, Any]) -> list[str]:
    """The diagnosis as lines for people (``runs show`` without ``--json``)."""
    lines = []
    holder = diagnosis.get("holder")
    if holder:
        lines.append(f"held by {holder['worker_id']} (epoch {holder['lease_epoch']}, lease "
                     f"{'expires' if holder['lease_left_s'] > 0 else 'expired'} "
                     f"{abs(holder['lease_left_s']):.0f}s "
                     f"{'from now' if holder['lease_left_s'] > 0 else 'ago'})")
    waiting = diagnosis.get("waiting_for") or {}
    if waiting.get("kind") == "queue":
        lines.append(f"queued: position {waiting['position']} ({waiting['ahead']} ahead), "
                     f"priority {waiting['priority']}")
    elif waiting.get("kind") == "approval":
        for a in waiting["approvals"]:
            lines.append(f"waits for approval of {a['capability']} (op {a['operation_id']}): "
                         f"{a['question']}")
    elif waiting.get("detail"):
        lines.append(f"waits for: {waiting['detail']}")
    last = diagnosis.get("last_step")
    lines.append(f"last committed step: {last['capability']} ({last['outcome']})" if last
                 else "last committed step: none yet")
    for call in diagnosis.get("unknown_calls", []):
        lines.append(f"effect not known: {call['capability']} (op {call['operation_id']}, "
                     f"{call['phase']}) — it may have run")
    lines.append(f"next: {diagnosis['next_step']}")
    return lines
