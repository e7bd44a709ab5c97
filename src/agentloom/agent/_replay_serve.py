"""What a replay serves in place of execution: the recorded calls of a run, decoded once, and
the pipeline seam that hands each re-driven call a stand-in handler.

::

    origin store ──► recorded_calls(store, run_id) ──► {logical_key: RecordedCall}
                                                              │
    re-drive: loop ─► bus ─► ServedPipeline.invoke(request, handler)
                                   │  handler replaced by Served(recorded call of the key)
                                   ▼
                     pipeline phases, hooks LIVE ─► Served.invoke_once ─► the recorded raw
                                                    result (never the capability)

A stand-in serves the recorded raw result only when the frozen request it is handed (after
the live before-hooks) is the one the record executed: for a model call that is the whole
model request, so "the messages of turn k produce the recorded response k". Anything else —
a call the record does not have, or other arguments — is answered with a known failure
(``REPLAY_NOT_RECORDED``), which ends the re-driven loop; the comparison (``agent.replay``)
names the first divergence from the rows, not from this failure.

Owns: ``RecordedCall`` / ``HookStep`` (an operation as a replay compares it), decoding them,
``ServedPipeline`` and the stand-in handler. Does not own: driving the re-run or comparing
(``agent.replay``), the pipeline's phases (``pipeline``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.errors import OperationError
from agentloom.pipeline.context import Request
from agentloom.pipeline.invocation import InvocationPipeline
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.pipeline.records import OperationState
from agentloom.results import OperationResult, ToolResult
from agentloom.store import Store
from agentloom.store.operations import hook_invocations
from agentloom.store.records import operations

__all__ = ["NOT_RECORDED", "HookStep", "RecordedCall", "ServedPipeline", "plain", "recorded_calls"]

NOT_RECORDED = "REPLAY_NOT_RECORDED"


def plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples as lists, keys as strings): what two records of
    one call are compared as."""
    return json.loads(json.dumps(value, default=str))


@dataclass(frozen=True, slots=True, kw_only=True)
class HookStep:
    """One hook of a call's chain as a replay compares it: which hook, what it decided, the
    normalised patch it committed (``None``: none), and how it ended."""

    timing: str
    position: int
    hook_id: str
    status: str
    decision: str | None
    patch: Any = None
    patch_error: Any = None

    def compared(self) -> dict[str, Any]:
        compared: dict[str, Any] = plain({"hook": self.hook_id, "timing": self.timing, "status": self.status,
                      "decision": self.decision, "patch": self.patch,
                      "patch_error": self.patch_error})
        return compared


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedCall:
    """One operation of a run as a replay compares it (decoded from its rows)."""

    operation_id: str
    logical_key: str
    capability: str
    event_type: str
    created_at: float
    proposed: dict[str, Any]
    executed: dict[str, Any] | None  # the arguments the Attempt was handed (None: no Attempt)
    hooks: tuple[HookStep, ...]
    outcome: str | None
    raw: ToolResult | None
    effective: ToolResult | None
    error: OperationError | None

    def served(self) -> ToolResult | None:
        """What its handler returned, to serve again: the raw result, else the recorded
        ``unknown`` (the Attempt was cut off); None when it never ran."""
        if self.raw is not None:
            return self.raw
        if self.executed is not None and self.outcome == "unknown" and self.error is not None:
            return ToolResult.unknown(self.error)
        return None


def _hook_steps(store: Store, operation_id: str) -> tuple[HookStep, ...]:
    rows = sorted(hook_invocations(store, operation_id),
                  key=lambda h: (h.timing != "before", h.position))
    return tuple(HookStep(timing=h.timing, position=h.position, hook_id=h.hook_id,
                          status=h.status, decision=h.decision, patch=h.data.get("changes"),
                          patch_error=h.data.get("patch_error")) for h in rows)


def recorded_calls(store: Store, run_id: str) -> list[RecordedCall]:
    """The run's operations, oldest first, decoded for comparing."""
    out = []
    for op in operations(store, run_id):
        state = OperationState.from_row(op.to_row(), store)
        envelope = state.envelope_result() if state.envelope is not None else None
        raw = envelope.raw if envelope is not None else (
            ToolResult.from_dict(state.raw) if state.raw is not None else None)
        out.append(RecordedCall(
            operation_id=op.operation_id, logical_key=op.logical_key,
            capability=op.capability_key, event_type=op.event_type, created_at=op.created_at,
            proposed=plain(state.request.get("proposed_arguments") or {}),
            executed=plain(state.payload) if state.attempts else None,
            hooks=_hook_steps(store, op.operation_id),
            outcome=envelope.outcome if envelope is not None else None, raw=raw,
            effective=envelope.result if envelope is not None else None,
            error=envelope.error if envelope is not None else None))
    return out


class _Served:
    """The stand-in handler of one re-driven call: the recorded raw result, never the
    capability. It keeps the replaced handler's traits, so the pipeline takes the same
    phases it took for the original."""

    resumable = False
    rerunnable = False  # each instance takes the replaced handler's (``__init__``)
    recoverable = False  # a delegation's result is served; its Executor is not re-run

    def __init__(self, recorded: RecordedCall | None, replaced: CapabilityHandler) -> None:
        self._recorded = recorded
        self.rerunnable = bool(getattr(replaced, "rerunnable", False))

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        recorded = self._recorded
        if recorded is None:
            return ToolResult.failure(
                f"replay: the record has no call {request.capability_key} here; the re-drive "
                "went past what was recorded", category="protocol", code=NOT_RECORDED)
        served = recorded.served()
        if served is None or recorded.executed != plain(dict(request.arguments)):
            return ToolResult.failure(
                f"replay: the record has no result of {request.capability_key} for these "
                "arguments (the recorded call ran with others, or did not run)",
                category="protocol", code=NOT_RECORDED)
        return served


class ServedPipeline(InvocationPipeline):
    """The kernel's pipeline with every handler replaced by a stand-in serving the record:
    the same store, coordinator, hooks, context and commit path (``commits`` is shared, so the
    kernel still sees its calls in flight); only ``invoke`` differs."""

    def __init__(self, base: InvocationPipeline, record: Mapping[str, RecordedCall],
                 on_call: Callable[[Request], None] | None = None) -> None:
        super().__init__(store=base.store, coordinator=base.coordinator, registry=base.registry,
                         hooks=base.hooks, context=base.context, observer=base.observer)
        self.commits = base.commits
        self.tracer = base.tracer
        self._record = record
        self._on_call = on_call

    async def invoke(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        if self._on_call is not None:
            self._on_call(request)
        served = _Served(self._record.get(request.logical_key), handler)
        return await super().invoke(request, served)
