"""What the ``runs`` commands show, as plain JSON-ready data read from the store.

``run_detail`` is the shape of ``agentloom runs show --json``: the run (with the
``sandbox_backend`` it was started with; null for a run recorded before it was) and one entry per
operation — its status in the spec's vocabulary, every Attempt (``attempts`` table), every hook
run (``hook_invocations`` table), the arguments the model proposed beside the ones that were
executed, and the raw result beside the effective one. Rows are decoded with
``pipeline.records.OperationState`` / ``stored_envelope``, never by hand.
"""

from __future__ import annotations

from typing import Any

from agentloom.agent import list_runs
from agentloom.agent.events import envelope_status, summary_of
from agentloom.agent.spec import DELEGATE_PREFIX
from agentloom.pipeline.records import OperationState
from agentloom.results import ToolResult
from agentloom.store import Store

__all__ = ["TASK_EXCERPT", "excerpt", "operation_detail", "run_detail", "run_summaries"]

TASK_EXCERPT = 120


def excerpt(text: str | None, limit: int = TASK_EXCERPT) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis)."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def run_summaries(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """Runs newest first: ``run_id``, ``status``, ``agent``, ``created_at``, ``updated_at`` and
    ``task`` (an excerpt; ``runs show`` has the whole task)."""
    return [{"run_id": r["run_id"], "status": r["status"], "agent": r["agent"],
             "created_at": r["created_at"], "updated_at": r["updated_at"],
             "task": excerpt(r["task"])} for r in list_runs(store, limit)]


def run_detail(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run with its operations (oldest first), or None when the store has no such run."""
    row = store.get("runs", {"run_id": run_id})
    if row is None:
        return None
    data = row["data"]
    operations = store.query("operations", {"run_id": run_id}, order_by=("created_at",))
    return {
        "run_id": run_id,
        "status": row["status"],
        "agent": data.get("agent"),
        "task": data.get("task"),
        "session_id": data.get("session_id"),
        "release_id": data.get("release_id"),
        "sandbox_backend": data.get("sandbox_backend"),
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "lease_epoch": row["lease_epoch"],
        "lease_owner": row["lease_owner"],
        "lease_expires_at": row["lease_expires_at"],
        "output": data.get("output"),
        "error": data.get("error"),
        "failures": data.get("failures"),
        "steps": data.get("steps"),
        "operations": [operation_detail(store, op) for op in operations],
    }


def _kind(row: dict[str, Any]) -> str:
    if row["event_type"] == "model":
        return "model"
    if row["event_type"] == "delegation" or row["capability_key"].startswith(DELEGATE_PREFIX):
        return "delegation"
    return "tool"


def _text(result: ToolResult | None) -> str | None:
    if result is None:
        return None
    text = result.text()
    if result.error is not None:
        text = f"{text}\n{result.error.code}: {result.error.message}".strip()
    return text


def operation_detail(store: Store, row: dict[str, Any]) -> dict[str, Any]:
    """One operation as ``runs show`` prints it.

    ``status`` is ``succeeded`` / ``failed`` / ``denied`` / ``unknown`` / ``cancelled`` once
    the operation is terminal, ``running`` before (``phase`` says how far it got).
    """
    state = OperationState.from_row(row, store)
    envelope = state.envelope_result() if state.envelope is not None else None
    request = state.request
    attempts = store.query("attempts", {"operation_id": state.operation_id},
                           order_by=("attempt_no",))
    hooks = store.query("hook_invocations", {"operation_id": state.operation_id})
    hooks.sort(key=lambda h: (h["timing"] != "before", h["position"]))
    raw = envelope.raw if envelope is not None else (
        ToolResult.from_dict(state.raw) if state.raw is not None else None)
    effective = envelope.result if envelope is not None else None
    executed = dict(state.payload) if state.attempts else None
    proposed = dict(request["proposed_arguments"])
    detail: dict[str, Any] = {
        "operation_id": state.operation_id,
        "capability": state.capability_key,
        "kind": _kind(row),
        "event_type": state.event_type,
        "role": request.get("role"),
        "call_id": request.get("call_id"),
        "logical_key": state.logical_key,
        "purpose": request.get("purpose"),
        "phase": state.phase,
        "status": envelope_status(envelope) if envelope is not None else "running",
        "outcome": envelope.outcome if envelope is not None else None,
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "attempts": {
            "count": state.attempts,
            "items": [{"attempt_no": a["attempt_no"], "status": a["status"],
                       "started_at": a["started_at"], "finished_at": a["finished_at"]}
                      for a in attempts],
        },
        "hooks": [{"hook_id": h["hook_id"], "timing": h["timing"], "position": h["position"],
                   "status": h["status"], "decision": h["decision"],
                   "reason": (h["data"] or {}).get("reason"),
                   "diagnostic": (h["data"] or {}).get("diagnostic"),
                   "patch_error": (h["data"] or {}).get("patch_error"),
                   "on_failure": (h["data"] or {}).get("on_failure")} for h in hooks],
        "proposed_arguments": proposed,
        "executed_arguments": executed,
        "arguments_changed": executed is not None and executed != proposed,
        "raw_result": _text(raw),
        "effective_result": _text(effective),
        "result_changed": raw is not None and effective is not None
        and effective.to_dict() != raw.to_dict(),
        "error": envelope.error.to_dict() if envelope is not None and envelope.error else None,
        "reason": envelope.reason if envelope is not None else None,
        "summary": summary_of(envelope) if envelope is not None else None,
    }
    return detail
