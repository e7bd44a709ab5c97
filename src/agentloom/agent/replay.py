"""``agentloom runs replay``: re-drive a finished agent run against today's config and code,
serving the record in place of every execution, and report the first call that comes out
differently — as Temporal's replayer checks a workflow's history against new code.

::

    origin store (read only) ──► recorded_calls ──────────────────────────┐
                                       │ served by key                    │ compared, call by
    throwaway Runtime (memory://) ─► loop ─► ServedPipeline ─► hooks LIVE │ call, in the
         same run id, same task         model turns and tool results      │ record's order
                                        served from the record            ▼
                                                                      Divergence | None

The re-drive runs on a runtime its caller built on a ``memory://`` store and a throwaway
workspace root (``cli/run_replay.py``), under the origin's run id, so every call has the
logical key it had (``<run>/t<n>/model``, ``<run>/t<n>/c<i>``). Nothing reaches the origin's
store: it is only read. What is compared, per call of the record (``RecordedCall``):

1. the proposal: for a model call the whole request (messages, tools, format) — a different
   one is "the model request of turn k differs", and the replay cannot go past it, since the
   record cannot say what the model would have answered; for a tool call its capability and
   arguments;
2. each hook's decision, patch and status, in chain order;
3. the arguments the Attempt was handed;
4. the outcome and the effective result (after the live after-hooks);

then any call the re-drive made that the record does not have, and finally how the run ended.

Owns: ``replay_run``, ``replay_refusal``, ``Divergence``, ``ReplayReport``. Does not own: what
is served (``agent._replay_serve``), building the throwaway runtime or printing (the CLI).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Literal

from agentloom.agent._replay_serve import RecordedCall as RecordedCall
from agentloom.agent._replay_serve import ServedPipeline, plain, recorded_calls
from agentloom.agent.runtime import Runtime
from agentloom.canonical import indented_json, readable_json
from agentloom.results import ToolResult
from agentloom.store import Store
from agentloom.store.records import RunRecord

__all__ = ["Divergence", "DivergenceKind", "RecordedCall", "ReplayReport", "first_divergence",
           "replay_refusal", "replay_run"]

DivergenceKind = Literal["model_request", "proposed", "hook", "arguments", "result",
                         "not_recorded", "stopped_early", "run_end"]
"""What differs first: the model request of a turn; the call proposed (capability or
arguments); a hook's decision, patch or status; the arguments executed; the outcome or
effective result; a call the record does not have; a recorded call the re-drive never made;
how the run ended."""

ENDED = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
DIFF_LINES = 24  # at most this many lines of a request's diff are shown
_TURN = re.compile(r"/t(\d+)/")


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """The first place the re-drive differs from the record, with both sides.

    ``operation_id`` is the recorded call's (None for a call the record does not have);
    ``diff`` a short unified diff of the two sides when they are large (a model request)."""

    kind: DivergenceKind
    logical_key: str
    capability: str
    message: str
    operation_id: str | None = None
    recorded: Any = None
    replayed: Any = None
    diff: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "operation_id": self.operation_id,
                "logical_key": self.logical_key, "capability": self.capability,
                "message": self.message, "recorded": self.recorded, "replayed": self.replayed,
                "diff": list(self.diff)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """What a replay found: the calls compared and the first divergence (None: the whole run
    replays the same)."""

    run_id: str
    agent: str
    calls: int
    status: str  # how the re-drive ended
    divergence: Divergence | None = None
    replayed_calls: int = 0

    @property
    def same(self) -> bool:
        return self.divergence is None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "agent": self.agent, "same": self.same,
                "calls": self.calls, "replayed_calls": self.replayed_calls,
                "status": self.status,
                "divergence": self.divergence.to_dict() if self.divergence else None}


def replay_refusal(run: RunRecord | None, run_id: str, *,
                   workflows: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """Why ``run`` cannot be replayed, as ``(code, message)``; None when it can. ``workflows``:
    the run names (``workflow:<name>``) of the config's workflows."""
    if run is None:
        return "RUN_NOT_FOUND", f"no run {run_id!r} in this store"
    if run.stored_status not in ENDED:
        return "RUN_NOT_FINISHED", (
            f"run {run_id} is {run.stored_status}, not finished; replay compares a finished "
            "run's record (resume it, or stop it, first)")
    agent = run.agent or ""
    if agent.startswith("workflow:") or agent in workflows:
        return "REPLAY_UNSUPPORTED", (
            f"run {run_id} is a workflow run ({agent}); runs replay re-drives agent runs only")
    if run.session_id is not None:
        return "REPLAY_UNSUPPORTED", (
            f"run {run_id} is a turn of session {run.session_id!r}; runs replay re-drives runs "
            "without a session only (their history is not part of the run's record)")
    if not run.task:
        return "REPLAY_UNSUPPORTED", f"run {run_id} records no task to re-drive"
    return None


async def replay_run(origin: Store, run: RunRecord, runtime: Runtime) -> ReplayReport:
    """Re-drive ``run`` (from ``origin``, only read) on ``runtime`` — a runtime of its own on a
    ``memory://`` store, closed by the caller — and compare it with the record."""
    record = recorded_calls(origin, run.run_id)
    kernel = runtime.kernel
    served = ServedPipeline(kernel.pipeline, {c.logical_key: c for c in record})
    kernel.pipeline = kernel.bus.pipeline = served
    agent = run.agent or "main"
    result = await runtime.run(run.task or "", agent=agent, run_id=run.run_id)
    replayed = recorded_calls(runtime.store, run.run_id)
    divergence = first_divergence(record, replayed)
    if divergence is None and (result.status != run.stored_status
                               or plain(result.output) != plain(run.output)):
        divergence = Divergence(
            kind="run_end", logical_key=run.run_id, capability=agent,
            message=f"every call replays the same, but the run ends {result.status} where the "
            f"record ended {run.stored_status}",
            recorded={"status": run.stored_status, "output": plain(run.output)},
            replayed={"status": result.status, "output": plain(result.output)})
    return ReplayReport(run_id=run.run_id, agent=agent, calls=len(record),
                        replayed_calls=len(replayed), status=result.status,
                        divergence=divergence)


def first_divergence(record: list[RecordedCall], replayed: list[RecordedCall]
                     ) -> Divergence | None:
    """The first difference between the recorded calls and the re-driven ones, in the
    record's order (calls are paired by logical key)."""
    again = {c.logical_key: c for c in replayed}
    for call in record:
        other = again.get(call.logical_key)
        if other is None:
            return Divergence(
                kind="stopped_early", logical_key=call.logical_key, capability=call.capability,
                operation_id=call.operation_id,
                message=f"the re-drive never made the recorded call {call.logical_key} "
                f"({call.capability}): it stopped before", recorded=call.proposed)
        found = _compare(call, other)
        if found is not None:
            return found
    known = {c.logical_key for c in record}
    for other in replayed:
        if other.logical_key not in known:
            what = (f"a model turn past the recorded ones ({_turn(other.logical_key)})"
                    if other.event_type == "model" else f"a call of {other.capability}")
            return Divergence(
                kind="not_recorded", logical_key=other.logical_key,
                capability=other.capability,
                message=f"the re-drive asked for {what} that the record does not have",
                replayed=other.proposed)
    return None


def _compare(call: RecordedCall, other: RecordedCall) -> Divergence | None:
    def at(kind: DivergenceKind, message: str, recorded: Any, replayed: Any,
           diff: tuple[str, ...] = ()) -> Divergence:
        return Divergence(kind=kind, logical_key=call.logical_key, capability=call.capability,
                          operation_id=call.operation_id, message=message, recorded=recorded,
                          replayed=replayed, diff=diff)

    if call.event_type == "model" and call.proposed != other.proposed:
        return at("model_request",
                  f"the model request of turn {_turn(call.logical_key)} differs; the record "
                  "cannot say what the model would have answered, so the replay stops here",
                  call.proposed, other.proposed, _diff(call.proposed, other.proposed))
    if call.capability != other.capability or call.proposed != other.proposed:
        return at("proposed",
                  f"a different call is proposed at {call.logical_key}: {other.capability} "
                  f"{_short(other.proposed)} where the record has {call.capability} "
                  f"{_short(call.proposed)}",
                  {"capability": call.capability, "arguments": call.proposed},
                  {"capability": other.capability, "arguments": other.proposed})
    mine = [h.compared() for h in call.hooks]
    theirs = [h.compared() for h in other.hooks]
    for i in range(max(len(mine), len(theirs))):
        was = mine[i] if i < len(mine) else None
        now = theirs[i] if i < len(theirs) else None
        if was != now:
            named = (now or was or {}).get("hook")
            return at("hook", f"hook {named} of {call.capability} ({call.logical_key}) "
                      f"decides {_decided(now)} where the record has {_decided(was)}", was, now)
    if other.outcome is None and call.outcome is not None:
        return at("result", f"{call.capability} ({call.logical_key}) never ends in the "
                  "re-drive: it waits for a person's answer (a hook asked), which a replay "
                  "never gives", {"outcome": call.outcome}, {"outcome": None})
    if call.executed != other.executed:
        return at("arguments",
                  f"{call.capability} ({call.logical_key}) is executed with other arguments",
                  call.executed, other.executed)
    was_result, now_result = _result(call.effective), _result(other.effective)
    if call.outcome != other.outcome or was_result != now_result:
        return at("result",
                  f"{call.capability} ({call.logical_key}) ends {other.outcome} where the "
                  f"record has {call.outcome}" if call.outcome != other.outcome else
                  f"the effective result of {call.capability} ({call.logical_key}) differs",
                  {"outcome": call.outcome, "result": was_result},
                  {"outcome": other.outcome, "result": now_result})
    return None


def _turn(logical_key: str) -> str:
    found = _TURN.search(logical_key)
    return found.group(1) if found else "?"


def _result(result: ToolResult | None) -> Any:
    return plain(result.to_dict()) if result is not None else None


def _short(value: Any, limit: int = 120) -> str:
    text = readable_json(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _decided(step: dict[str, Any] | None) -> str:
    if step is None:
        return "nothing (the hook is not in the chain)"
    said = str(step["decision"] or step["status"])
    patch = step.get("patch")
    ops = patch.get("ops") if isinstance(patch, dict) else None
    return f"{said} with patch {_short(ops)}" if ops else f"{said} (no patch)"


def _diff(recorded: Any, replayed: Any) -> tuple[str, ...]:
    lines = list(difflib.unified_diff(
        indented_json(recorded).splitlines(), indented_json(replayed).splitlines(),
        "recorded", "replayed", n=1, lineterm=""))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more lines"]
    return tuple(lines)
