"""InvocationPipeline: one logical call through the recorded phases of 000 §3.1.

::

    unknown name / stale catalog / refused by its sender ─► failed (no hook, no Attempt)
    intent saved ─► before-hooks (each decision + change set + cursor committed)
       │ deny ─────────────────────────────► denied_before_execution (no Attempt)
       ▼
    final checks (catalog version, schema, deadline, stop) ─► frozen request
       ▼
    attempt started ─► handler.invoke_once ─► raw saved ─► after-hooks
       ▼                                                  │ deny ─► denied_after_execution
    effective result + context + delivery record saved ─► waiter gets the envelope

Commits are merged where nothing can happen in between: with no before-hooks the
intent and the Attempt start share one commit; with no after-hooks the raw and
the effective result share one. A durable call without hooks costs two commits.

A re-runnable call (a model generation) without hooks is one commit; when its caller
asks for it (``Request.defer_commit``) even that commit is *carried*: its rows go out
with the next commit of the same invocation (the intent of the tool calls it asked
for) or with ``flush``. A crash before then loses a call that had no external effect
and whose result nothing durable depends on yet, so it is issued again on resume.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.context.blobs import BlobText
from agentloom.context.manager import ContextManager, call_record_id
from agentloom.errors import CatalogError, FencedOut, OperationError, RevisionConflict, StoreError
from agentloom.hooks.manager import HookManager
from agentloom.hooks.spec import HookSpec
from agentloom.pipeline import crashpoints
from agentloom.pipeline.attempt import run_attempt, sleep_unless_cancelled
from agentloom.pipeline.chain import HookChain
from agentloom.pipeline.context import InvocationContext, Request
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.ports import CapabilityHandler, Observer
from agentloom.pipeline.records import (
    OperationState,
    arguments_delta,
    attempt_row,
    hook_row,
    remember_arguments,
)
from agentloom.pipeline.stored import blobs_to_write, committed
from agentloom.results import (
    SIDE_EFFECTS_NOT_ROLLED_BACK,
    OperationResult,
    Outcome,
    ToolResult,
)
from agentloom.store.ports import Fence, Op, Store, WriteSet

BASES_LIMIT = 10_000  # (run, capability, role) bases kept for delta-encoded arguments
KNOWN_LIMIT = 10_000  # runs whose committed logical keys are indexed (see _find)
_COMMIT_REFUSED = (FencedOut, RevisionConflict, StoreError)  # rolled back: nothing written


class InvocationPipeline(HookChain):
    """Takes one request through every phase, committing each before the next begins."""

    def __init__(
        self,
        *,
        store: Store,
        coordinator: CommitCoordinator,
        registry: CapabilityRegistry,
        hooks: HookManager | None = None,
        context: ContextManager | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.store = store
        self.coordinator = coordinator
        self.registry = registry
        self.hooks = hooks or HookManager()
        self.context = context or ContextManager(store)
        self.observer = observer
        self._active = 0  # calls in flight; a lone call commits without the writer thread
        # (run, capability, role, invocation) -> the last stored call's (lease epoch,
        # operation id, proposed arguments); a base is only used under its own epoch: a
        # carried call is committed (or lost) with the lease it was made under
        self._bases: dict[tuple[str, str, str | None, str | None],
                          tuple[int, str, dict[str, Any]]] = {}
        # run -> (lease epoch, logical keys committed under it): see _find
        self._known: dict[str, tuple[int, set[str]]] = {}
        # (run, invocation) -> (lease epoch, the rows of finished calls waiting to be
        # committed with that invocation's next commit): see _finish
        self._carried: dict[tuple[str, str], tuple[int, list[Op]]] = {}

    # -- entry points ------------------------------------------------------------------
    async def invoke(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        """Run (or, for a known logical key, recover) one logical call to a terminal envelope."""
        self._active += 1
        try:
            return await self._invoke(request, handler)
        finally:
            self._active -= 1

    async def _invoke(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        ctx = request.context
        if request.logical_key != request.operation_id:
            # A caller-named logical call may already exist: recover it, never run it twice.
            # (A key equal to the freshly minted operation id cannot exist yet.)
            existing = self._find(request)
            if existing is not None:
                return await self.resume(existing, request, handler)
        if request.refusal is not None:
            known = ctx.catalog.specs.get(request.model_name)
            return await self._refuse(request, request.refusal, known.capability_key
                                      if known is not None else request.model_name)
        try:
            spec = self.registry.resolve(ctx.catalog, request.model_name)
        except CatalogError as exc:
            return await self._refuse(request, exc.error, request.model_name)
        state = self._new_state(request, spec)
        before = self.hooks.chain(
            "before", request.event_type, capability=spec.capability_key,
            role=ctx.role, purpose=request.purpose,
        )
        state.chain["before"] = [h.hook_id for h in before]
        ops: list[Op] = [*self._call_record_ops(state, request)]
        if before:
            state.phase = "hooks_before"
            state.cursor = {"timing": "before", "position": 0}
            ops.append(self._hook_started(state, "before", 0, before[0]))
            try:
                await self._commit(request, [state.row(new=True), *ops])
            except RevisionConflict:
                return await self._lost_race(request, handler)
            crashpoints.reached("intent_saved")
            self._observe("operation.started", state)
            denied = await self._run_chain(state, request, spec, before, 0, "before")
            if denied is not None:
                return denied
            ops = []
        return await self._execute_phase(state, request, spec, handler, ops)

    def _find(self, request: Request, *, indexed: bool = True) -> OperationState | None:
        """The stored operation of ``request``'s logical key, if any.

        While this process holds the run's lease nobody else can add operations to it, so
        the keys committed before the lease was taken are read once (per run and epoch)
        and the ones this pipeline commits are added: a key not in that set is not looked
        up. ``indexed=False`` always asks the store.
        """
        ctx = request.context
        if indexed:
            known = self._known.get(ctx.run_id)
            if known is None or known[0] != ctx.lease_epoch:
                keys = {r["logical_key"] for r in self.store.query(
                    "operations", {"run_id": ctx.run_id})}
                self._known.pop(ctx.run_id, None)
                if len(self._known) >= KNOWN_LIMIT:
                    del self._known[next(iter(self._known))]
                known = self._known[ctx.run_id] = (ctx.lease_epoch, keys)
            if request.logical_key not in known[1]:
                return None
        rows = self.store.query(
            "operations",
            {"run_id": request.context.run_id, "logical_key": request.logical_key}, limit=1,
        )
        return OperationState.from_row(rows[0], self.store) if rows else None

    async def _lost_race(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        """Another caller created this logical call first: wait on theirs, do not run a second."""
        existing = self._find(request, indexed=False)
        if existing is None:
            raise RevisionConflict(
                f"logical call {request.logical_key!r} conflicted but cannot be found"
            )
        return await self.resume(existing, request, handler)

    async def resume(
        self, state: OperationState, request: Request, handler: CapabilityHandler
    ) -> OperationResult:
        """Finish an operation from its last committed phase; never re-execute after an Attempt."""
        if state.envelope is not None:
            return state.envelope_result()
        ctx = request.context
        spec = ctx.catalog.by_key(state.capability_key)
        if state.phase in ("intent_saved", "hooks_before"):
            before = self._recorded_chain(state, "before")
            denied = await self._resume_chain(state, request, spec, before, "before")
            if denied is not None:
                return denied
            return await self._execute_phase(state, request, spec, handler, [])
        if state.phase == "attempt_started":
            if getattr(handler, "recoverable", False):
                # A recoverable handler (a delegation) is itself made of durable calls: running
                # it again replays what it committed and continues; it creates no new Attempt.
                raw = await run_attempt(state, request, spec, handler, state.attempts,
                                        dict(state.payload))
                return await self._after_attempt(state, request, spec, raw, state.attempts)
            if getattr(handler, "rerunnable", False):
                # the lost Attempt of a re-runnable call had no side effect: a new Attempt
                await self._commit(request, [attempt_row(state.operation_id, state.attempts,
                                                         "lost", {}, finished=True)])
                return await self._execute_phase(state, request, spec, handler, [])
            return await self._attempt_lost(state, request)
        if state.phase in ("raw_saved", "hooks_after"):
            after = self._recorded_chain(state, "after")
            assert state.raw is not None
            denied = await self._resume_chain(state, request, spec, after, "after")
            if denied is not None:
                return denied
            return await self._deliver(state, request, [])
        raise RuntimeError(f"operation {state.operation_id} is in unknown phase {state.phase!r}")

    # -- phases ------------------------------------------------------------------------
    def _new_state(self, request: Request, spec: CapabilitySpec) -> OperationState:
        ctx = request.context
        args = dict(request.arguments)
        state = OperationState(
            operation_id=request.operation_id,
            run_id=ctx.run_id,
            logical_key=request.logical_key,
            capability_key=spec.capability_key,
            event_type=request.event_type,
            request={
                "model_name": request.model_name,
                "resource_version_id": spec.resource_version_id,
                "catalog_version": ctx.catalog.version,
                "role": ctx.role,
                "owner_ref": ctx.owner_ref.to_dict(),
                "workspace_scope_ref": ctx.workspace_scope_ref,
                "causation_id": request.causation_id,
                "purpose": request.purpose,
                "call_id": request.call_id,
                "context_scope": ctx.context_scope,
                "proposed_arguments": args,
            },
            payload=args,
            hooks_version=self.hooks.version,
        )
        base = self._bases.get((ctx.run_id, spec.capability_key, ctx.role, ctx.invocation_id))
        if base is not None and base[0] == ctx.lease_epoch:
            _, base_id, base_args = base
            # e.g. a model call: the history of the previous call plus a few messages
            delta = arguments_delta(base_args, args)
            if delta is not None:
                state.stored_request = {**state.request, "proposed_arguments": None,
                                        "proposed_delta": {"base": base_id, **delta}}
        return state

    def _call_record_ops(self, state: OperationState, request: Request) -> list[Op]:
        scope = request.context.context_scope
        if scope is None:
            return []
        state.call_revision = 1
        return [
            self.context.record_op(
                scope_id=scope, run_id=state.run_id, record_id=call_record_id(state.operation_id),
                revision=1, kind="tool_call", position=f"{state.operation_id}:0",
                data={
                    "operation_id": state.operation_id,
                    "capability": state.capability_key,
                    "arguments": state.payload,
                    "proposed_arguments": state.request["proposed_arguments"],
                    "source": "model",
                },
            )
        ]

    async def _execute_phase(
        self,
        state: OperationState,
        request: Request,
        spec: CapabilitySpec,
        handler: CapabilityHandler,
        pending: list[Op],
    ) -> OperationResult:
        ctx = request.context
        refusal = self._final_checks(state, request, spec)
        if refusal is not None:
            outcome, error = refusal
            return await self._finish(state, request, outcome, None, error=error, pending=pending)
        while True:
            state.attempts += 1
            attempt_no = state.attempts
            state.phase = "attempt_started"
            state.cursor = None
            frozen = dict(state.payload)
            first = bool(pending) or (attempt_no == 1 and not state.chain["before"])
            started = attempt_row(state.operation_id, attempt_no, "started", {}, finished=False)
            if first and not pending and getattr(handler, "rerunnable", False):
                # A re-runnable call (a model generation: no external side effect) with no
                # before-hook: its intent and Attempt start are committed with its result. A
                # crash in between leaves nothing, and the caller issues the call again.
                state.unsaved, state.deferred = True, [started]
            else:
                try:
                    await self._commit(request, [*pending, state.row(new=first), started])
                except RevisionConflict:
                    if not first:
                        raise
                    return await self._lost_race(request, handler)
            pending = []
            if first:
                crashpoints.reached("intent_saved")
                self._observe("operation.started", state)
            crashpoints.reached("attempt_started")
            raw = await run_attempt(state, request, spec, handler, attempt_no, frozen)
            crashpoints.reached("effect_done")
            wait = None
            if raw.error is not None and raw.status != "succeeded":
                wait = ctx.retry.next_wait(
                    raw.error, attempt_no=attempt_no, now=time.time(), deadline=ctx.deadline
                )
            if wait is None or ctx.cancel.is_set:
                break
            await self._commit(
                request,
                [state.row(), attempt_row(state.operation_id, attempt_no, "failed",
                                          {"raw": raw.to_dict(), "retry_wait_s": wait}, finished=True)],
                state=state,
            )
            await sleep_unless_cancelled(wait, ctx.cancel)
        return await self._after_attempt(state, request, spec, raw, attempt_no)

    async def _after_attempt(
        self, state: OperationState, request: Request, spec: CapabilitySpec, raw: ToolResult,
        attempt_no: int,
    ) -> OperationResult:
        ctx = request.context
        state.raw = raw.to_dict()
        raw_row = attempt_row(state.operation_id, attempt_no, raw.status,
                              state.encoded({"raw": state.raw}), finished=True)
        after = self.hooks.chain(
            "after", request.event_type, capability=spec.capability_key, role=ctx.role,
            purpose=request.purpose, status=raw.status,
        )
        state.chain["after"] = [h.hook_id for h in after]
        if after:
            state.phase = "hooks_after"
            state.cursor = {"timing": "after", "position": 0}
            await self._commit(
                request, [state.row(), raw_row, self._hook_started(state, "after", 0, after[0])],
                state=state,
            )
            crashpoints.reached("raw_saved")
            denied = await self._run_chain(state, request, spec, after, 0, "after")
            if denied is not None:
                return denied
            return await self._deliver(state, request, [])
        return await self._deliver(state, request, [raw_row], raw_merged=True, raw_obj=raw)

    def _final_checks(
        self, state: OperationState, request: Request, spec: CapabilitySpec
    ) -> tuple[Outcome, OperationError] | None:
        ctx = request.context
        if ctx.cancel.is_set:
            return "cancelled", OperationError(
                code="RUN_STOPPED", category="cancelled",
                message=f"the run was stopped ({ctx.cancel.reason}) before this call ran",
                external_outcome="not_started",
            )
        if time.time() >= ctx.deadline:
            return "failed", OperationError(
                code="RUN_DEADLINE_EXCEEDED", category="timeout",
                message="the run deadline passed before this call could run",
                external_outcome="not_started",
            )
        try:  # also refuses a catalog whose release moved on to another version
            validator = self.registry.validator(ctx.catalog, spec.capability_key)
        except CatalogError as exc:
            return "failed", exc.error
        if request.prevalidated and state.payload_version == 0:
            return None  # the sender's part-by-part check stands for the unchanged payload
        errors = validator.errors(state.payload)
        if errors:
            return "failed", OperationError(
                code="INVALID_ARGUMENTS", category="validation", phase="validate",
                message=f"arguments for {spec.model_name} do not match its schema: "
                + "; ".join(errors[:5]),
                external_outcome="not_started",
            )
        return None

    async def _deny(
        self, state: OperationState, request: Request, hook: HookSpec, position: int,
        timing: str, record: dict[str, Any], *, status: str = "succeeded",
    ) -> OperationResult:
        reason = record.get("reason") or f"denied by hook {hook.hook_id}"
        record["cursor"] = None
        ops: list[Op] = [hook_row(state.operation_id, timing, position, hook.hook_id,
                                  status, record, "deny")]
        state.cursor = None
        if timing == "before":
            return await self._finish(
                state, request, "denied_before_execution", None, reason=reason, pending=ops,
                crash_after="hook_committed",
            )
        return await self._finish(
            state, request, "denied_after_execution", None, reason=reason, pending=ops,
            crash_after="hook_committed",
        )

    async def _stopped(
        self, state: OperationState, request: Request, hook: HookSpec, position: int,
        timing: str, record: dict[str, Any],
    ) -> OperationResult:
        """The run was stopped while ``hook`` ran (or before it could): the hook is recorded
        ``abandoned`` and the call ends ``cancelled`` — before execution nothing ran; after
        it, the raw result is kept and no effective result is saved."""
        stop = request.context.cancel.reason
        record["cursor"] = None
        ops: list[Op] = [hook_row(state.operation_id, timing, position, hook.hook_id,
                                  "abandoned", record)]
        state.cursor = None
        if timing == "before":
            error = OperationError(
                code="RUN_STOPPED", category="cancelled",
                message=f"the run was stopped ({stop}) before this call ran",
                external_outcome="not_started")
        else:
            raw_error = (state.raw or {}).get("error")
            error = OperationError(
                code="RUN_STOPPED", category="cancelled", phase="deliver",
                message=f"the run was stopped ({stop}) while the call's after-hooks ran; "
                "it had run, and its result was not delivered",
                external_outcome=raw_error["external_outcome"] if raw_error else "known")
        return await self._finish(state, request, "cancelled", None, error=error, pending=ops,
                                  crash_after="hook_committed")

    async def _deliver(
        self, state: OperationState, request: Request, pending: list[Op], *,
        raw_merged: bool = False, raw_obj: ToolResult | None = None,
    ) -> OperationResult:
        assert state.raw is not None
        if state.result is None and raw_obj is not None:
            result = raw_obj
        else:
            result = ToolResult.from_dict(state.result if state.result is not None else state.raw)
        outcome: Outcome = result.status
        if result.error is not None and result.error.category == "cancelled":
            outcome = "cancelled"
        return await self._finish(
            state, request, outcome, result, error=result.error, pending=pending,
            raw_merged=raw_merged,
        )

    async def _finish(
        self,
        state: OperationState,
        request: Request,
        outcome: Outcome,
        result: ToolResult | None,
        *,
        error: OperationError | None = None,
        reason: str | None = None,
        pending: list[Op],
        raw_merged: bool = False,
        crash_after: str | None = None,
    ) -> OperationResult:
        """Commit the terminal state, the effective result, its context record and the
        delivery record together; only then is the waiter given the envelope."""
        ctx = request.context
        if outcome == "denied_after_execution":
            reason = f"{reason} ({SIDE_EFFECTS_NOT_ROLLED_BACK})"
        state.phase = "delivered"
        state.cursor = None
        state.envelope = {"outcome": outcome, "error": error.to_dict() if error else None,
                          "reason": reason}
        envelope = state.envelope_result(live_result=result)
        delivered = result if outcome == "succeeded" else None
        stored = self.context.result_ops(
            scope_id=ctx.context_scope, run_id=state.run_id, role=ctx.role,
            operation_id=state.operation_id, capability=state.capability_key,
            outcome=outcome, result=delivered,
            summary="" if delivered is not None else envelope.describe(),
            stored=None if delivered is None
            else state.stored_effective(self.context.preview_limit),
            text=None if delivered is None else state.text_of(delivered),
        )
        if stored.result_ref is not None:  # the transcript may name it: it reads
            state.envelope["result_ref"] = stored.result_ref
            envelope = replace(envelope, result_ref=stored.result_ref)
        ops = [*pending, state.row(), *stored.ops]
        if (request.defer_commit and state.unsaved and outcome == "succeeded"
                and ctx.invocation_id is not None):
            # The whole call is in ``ops`` and nothing durable depends on it yet: carry it
            # into the invocation's next commit (or ``flush``) instead of paying a commit.
            self._carry(ctx, [*state.deferred, *ops])
            state.unsaved, state.deferred = False, []
            self._remember(state, ctx)
        else:
            await self._commit(request, ops, state=state)
            self._remember(state, ctx)
            if crash_after:
                crashpoints.reached(crash_after)
            if raw_merged:
                crashpoints.reached("raw_saved")
            crashpoints.reached("effective_saved")
        self._observe("operation.completed", state)
        crashpoints.reached("delivered")
        return envelope

    async def _attempt_lost(self, state: OperationState, request: Request) -> OperationResult:
        """An Attempt started and no raw result was saved: its outcome is unknown; never re-run."""
        error = OperationError(
            code="ATTEMPT_OUTCOME_UNKNOWN", category="unknown",
            message="the runtime stopped while this call was running; it may or may not have "
            "taken effect and was not run again", external_outcome="unknown",
        )
        lost = ToolResult.unknown(error)
        state.raw = lost.to_dict()
        ops: list[Op] = [attempt_row(state.operation_id, state.attempts, "lost",
                                     {"raw": state.raw}, finished=True)]
        return await self._finish(state, request, "unknown", lost, error=error, pending=ops)

    async def _refuse(self, request: Request, error: OperationError,
                      capability_key: str) -> OperationResult:
        """Record a call that cannot even be resolved — an unknown name, a stale catalog, a
        refusal its sender made (``Request.refusal``) — as ``failed`` with ``error``: no
        hook runs, no Attempt is made; a replay returns the stored envelope."""
        ctx = request.context
        state = OperationState(
            operation_id=request.operation_id, run_id=ctx.run_id,
            logical_key=request.logical_key, capability_key=capability_key,
            event_type=request.event_type,
            request={"model_name": request.model_name, "role": ctx.role,
                     "proposed_arguments": dict(request.arguments),
                     "causation_id": request.causation_id, "purpose": request.purpose,
                     "call_id": request.call_id},
            payload=dict(request.arguments),
        )
        return await self._finish(state, request, "failed", None, error=error, pending=[])

    # -- plumbing ----------------------------------------------------------------------------
    def _remember(self, state: OperationState, ctx: InvocationContext) -> None:
        """A stored call's proposed arguments: the base the next call of the same capability
        and role in this run is stored as a delta of (it is committed, so it can be read)."""
        args = state.request["proposed_arguments"]
        if not any(isinstance(v, list) for v in args.values()):
            return
        key = (ctx.run_id, state.capability_key, ctx.role, ctx.invocation_id)
        self._bases.pop(key, None)
        if len(self._bases) >= BASES_LIMIT:
            del self._bases[next(iter(self._bases))]
        self._bases[key] = (ctx.lease_epoch, state.operation_id, args)
        remember_arguments(state.operation_id, args)

    async def _commit(self, request: Request, ops: list[Op], *,
                      state: OperationState | None = None) -> None:
        ctx = request.context
        if state is not None and state.deferred:
            ops = [*state.deferred, *ops]
        await self._write(ctx, ops)
        if state is not None:
            state.unsaved, state.deferred = False, []

    async def _write(self, ctx: InvocationContext, ops: list[Op]) -> None:
        """Commit ``ops`` (after the calls carried for ``ctx``'s invocation) as one write set,
        with the blobs their results name (``pipeline.stored``)."""
        carried = self._take_carried(ctx)
        if carried:
            ops = [*carried, *ops]
        fence = Fence(ctx.run_id, ctx.lease_epoch)
        blobs, named = blobs_to_write(ops, self.context.preview_limit)
        try:
            if blobs:
                ops = [*await self._blob_rows(blobs, fence), *ops]
            await self.coordinator.commit(WriteSet(tuple(ops), fence), inline=self._active <= 1)
        except _COMMIT_REFUSED:
            if carried:  # rolled back with the rest: they wait for the next commit
                self._carry(ctx, carried, first=True)
            raise
        committed(named)
        known = self._known.get(ctx.run_id)
        if known is not None and known[0] == ctx.lease_epoch:
            known[1].update(op.row["logical_key"] for op in ops if op.table == "operations"
                            and "logical_key" in op.row)

    async def _blob_rows(self, blobs: list[BlobText], fence: Fence) -> list[Op]:
        """The ``blobs`` rows to commit with the rows naming them. A chunked blob's chunks are
        committed first, a few per write set, unless it is stored already: a large result
        is never held as bytes, or quoted into one query, all at once."""
        rows: list[Op] = []
        for blob in blobs:
            if blob.chunked:
                if self.store.get("blobs", {"digest": blob.digest}) is not None:
                    continue  # content-addressed: the same text, with all its chunks
                for group in blob.chunk_groups():
                    await self.coordinator.commit(WriteSet(tuple(group), fence),
                                                  inline=self._active <= 1)
            rows.append(blob.row())
        return rows

    def _carry(self, ctx: InvocationContext, ops: list[Op], *, first: bool = False) -> None:
        assert ctx.invocation_id is not None
        key = (ctx.run_id, ctx.invocation_id)
        held = self._carried.get(key)
        if held is None or held[0] != ctx.lease_epoch:  # an older lease's rows are fenced out
            self._carried[key] = (ctx.lease_epoch, list(ops))
        elif first:
            held[1][:0] = ops
        else:
            held[1].extend(ops)

    def _take_carried(self, ctx: InvocationContext) -> list[Op]:
        if ctx.invocation_id is None or not self._carried:
            return []
        held = self._carried.pop((ctx.run_id, ctx.invocation_id), None)
        if held is None or held[0] != ctx.lease_epoch:
            return []
        return held[1]

    async def flush(self, ctx: InvocationContext) -> None:
        """Commit what is carried for ``ctx``'s invocation (nothing to do when nothing is).

        Call it when the invocation ends: its last model call has no later commit to ride on.
        """
        if self._carried and ctx.invocation_id is not None \
                and (ctx.run_id, ctx.invocation_id) in self._carried:
            await self._write(ctx, [])

    def _observe(self, kind: str, state: OperationState) -> None:
        if self.observer is None:
            return
        payload: dict[str, Any] = {"operation_id": state.operation_id, "run_id": state.run_id,
                                   "capability": state.capability_key}
        if state.envelope is not None:
            payload["outcome"] = state.envelope["outcome"]
        self.observer(kind, payload)
