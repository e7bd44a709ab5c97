"""Low-frequency run events (F14): run, model call and tool call starts and ends.

Each tool call is its own pair, keyed by the model's ``call_id`` (two calls of the same
tool are two pairs); the status is the call's real outcome (``succeeded`` / ``failed`` /
``denied`` / ``unknown`` / ``cancelled``), never a default "ok"; the summary is taken
from the actual result. No token deltas, no message bodies.

Live events go to the run handle's subscribers as the loop makes them. Stored events are
a *projection* of the committed facts (runs and operations rows): nothing is written twice,
and what ``agentloom runs events`` prints is what the store says happened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentloom.pipeline.records import stored_envelope
from agentloom.results import OperationResult
from agentloom.store import Store

__all__ = ["EventSink", "RunEvent", "envelope_status", "run_events", "summary_of"]

SUMMARY_LIMIT = 200
SUMMARY_WINDOW = 16 * SUMMARY_LIMIT  # characters of a result looked at for its summary


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One low-frequency run event (``run.started``, ``tool.call.completed``, …) as the run
    handle and ``agentloom runs events`` show it: a type, the run, a time and a small ``data``
    map — never a token delta or a message body (F14)."""

    type: str
    run_id: str
    at: float
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "run_id": self.run_id, "at": self.at, **self.data}


EventSink = Callable[[RunEvent], None]


def envelope_status(envelope: OperationResult) -> str:
    return "denied" if envelope.outcome.startswith("denied") else envelope.outcome


def summary_of(envelope: OperationResult) -> str:
    """A short summary taken from the call's actual result (or its error / denial)."""
    text = envelope.describe()
    cut = len(text) > SUMMARY_WINDOW
    if cut:  # summarise the head: a large result is never copied whole
        text = text[:SUMMARY_WINDOW]
    text = text.strip().replace("\n", " ")
    return text if len(text) <= SUMMARY_LIMIT and not cut else text[: SUMMARY_LIMIT - 1] + "…"


def _kind(event_type: str) -> str:
    return {"model": "model", "delegation": "delegation"}.get(event_type, "tool")


def run_events(store: Store, run_id: str) -> list[RunEvent]:
    """The run's events, rebuilt from what was committed, oldest first."""
    run = store.get("runs", {"run_id": run_id})
    if run is None:
        return []
    data = run["data"]
    events = [RunEvent("run.started", run_id, run["created_at"],
                       {"agent": data.get("agent"), "task": data.get("task")})]
    for row in store.query("operations", {"run_id": run_id}, order_by=("created_at",)):
        request = row["data"]["request"]
        kind = _kind(row["event_type"])
        base = {"operation_id": row["operation_id"], "capability": row["capability_key"],
                "role": request.get("role"), "call_id": request.get("call_id"),
                "purpose": request.get("purpose")}
        events.append(RunEvent(f"{kind}.call.started", run_id, row["created_at"], base))
        envelope = stored_envelope(row, store)
        if envelope is not None:
            done = {**base, "status": envelope_status(envelope), "attempts": envelope.attempts}
            if kind != "model":
                done["summary"] = summary_of(envelope)
            events.append(RunEvent(f"{kind}.call.completed", run_id, row["updated_at"], done))
    if run["status"] in TERMINAL:
        events.append(RunEvent("run.finished", run_id, run["updated_at"], {
            "status": run["status"], "output": data.get("output"), "error": data.get("error")}))
    events.sort(key=lambda e: e.at)
    return events


TERMINAL = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
