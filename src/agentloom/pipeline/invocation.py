"""InvocationPipeline: one logical call through the recorded phases of 000 §3.1.

::

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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.context.manager import ContextManager, call_record_id
from agentloom.errors import CatalogError, OperationError, RevisionConflict
from agentloom.hooks.manager import HookManager
from agentloom.hooks.patch import CallRecord, ChangeSet, PatchInvalid, apply_ops, normalise
from agentloom.hooks.spec import HookSpec
from agentloom.pipeline import crashpoints
from agentloom.pipeline.context import Request
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.ports import AttemptContext, CapabilityHandler, CapabilityRequest
from agentloom.pipeline.records import OperationState, attempt_row, hook_row
from agentloom.results import (
    SIDE_EFFECTS_NOT_ROLLED_BACK,
    OperationResult,
    Outcome,
    ToolResult,
)
from agentloom.store.ports import Fence, Op, Store, WriteSet

Observer = Callable[[str, dict[str, Any]], None]

BEFORE_WRITABLE = ("/payload",)
AFTER_WRITABLE = ("/result/content", "/result/metadata", "/result/artifacts")


class InvocationPipeline:
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
        try:
            spec = self.registry.resolve(ctx.catalog, request.model_name)
        except CatalogError as exc:
            return await self._refuse_unresolved(request, exc)
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

    def _find(self, request: Request) -> OperationState | None:
        rows = self.store.query(
            "operations",
            {"run_id": request.context.run_id, "logical_key": request.logical_key}, limit=1,
        )
        return OperationState.from_row(rows[0]) if rows else None

    async def _lost_race(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        """Another caller created this logical call first: wait on theirs, do not run a second."""
        existing = self._find(request)
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
            position = await self._settle_interrupted_hook(state, request, "before", before)
            if position is not None:
                denied = await self._run_chain(state, request, spec, before, position, "before")
                if denied is not None:
                    return denied
            return await self._execute_phase(state, request, spec, handler, [])
        if state.phase == "attempt_started":
            return await self._attempt_lost(state, request)
        if state.phase in ("raw_saved", "hooks_after"):
            after = self._recorded_chain(state, "after")
            position = await self._settle_interrupted_hook(state, request, "after", after)
            assert state.raw is not None
            if position is not None:
                denied = await self._run_chain(state, request, spec, after, position, "after")
                if denied is not None:
                    return denied
            return await self._deliver(state, request, [])
        raise RuntimeError(f"operation {state.operation_id} is in unknown phase {state.phase!r}")

    # -- phases ------------------------------------------------------------------------
    def _new_state(self, request: Request, spec: CapabilitySpec) -> OperationState:
        ctx = request.context
        args = dict(request.arguments)
        return OperationState(
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
                "context_scope": ctx.context_scope,
                "proposed_arguments": args,
            },
            payload=args,
            hooks_version=self.hooks.version,
        )

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
            state.request["executed_arguments"] = frozen
            first = bool(pending) or (attempt_no == 1 and not state.chain["before"])
            try:
                await self._commit(
                    request,
                    [*pending, state.row(new=first),
                     attempt_row(state.operation_id, attempt_no, "started",
                                 {"arguments": frozen}, finished=False)],
                )
            except RevisionConflict:
                if not first:
                    raise
                return await self._lost_race(request, handler)
            pending = []
            if first:
                crashpoints.reached("intent_saved")
                self._observe("operation.started", state)
            crashpoints.reached("attempt_started")
            raw = await self._invoke_handler(state, request, spec, handler, attempt_no, frozen)
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
                                          {"arguments": frozen, "raw": raw.to_dict(),
                                           "retry_wait_s": wait}, finished=True)],
            )
            await self._sleep(wait, ctx.cancel)
        state.raw = raw.to_dict()
        raw_row = attempt_row(state.operation_id, attempt_no, raw.status,
                              {"arguments": frozen, "raw": state.raw}, finished=True)
        after = self.hooks.chain(
            "after", request.event_type, capability=spec.capability_key, role=ctx.role,
            purpose=request.purpose, status=raw.status,
        )
        state.chain["after"] = [h.hook_id for h in after]
        if after:
            state.phase = "hooks_after"
            state.cursor = {"timing": "after", "position": 0}
            await self._commit(
                request, [state.row(), raw_row, self._hook_started(state, "after", 0, after[0])]
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
        errors = validator.errors(state.payload)
        if errors:
            return "failed", OperationError(
                code="INVALID_ARGUMENTS", category="validation", phase="validate",
                message=f"arguments for {spec.model_name} do not match its schema: "
                + "; ".join(errors[:5]),
                external_outcome="not_started",
            )
        return None

    async def _invoke_handler(
        self,
        state: OperationState,
        request: Request,
        spec: CapabilitySpec,
        handler: CapabilityHandler,
        attempt_no: int,
        frozen: dict[str, Any],
    ) -> ToolResult:
        ctx = request.context
        actx = AttemptContext(
            operation_id=state.operation_id, attempt_no=attempt_no, run_id=ctx.run_id,
            role=ctx.role, deadline=ctx.deadline, cancel=ctx.cancel,
        )
        creq = CapabilityRequest(
            operation_id=state.operation_id, resource_version_id=spec.resource_version_id,
            capability_key=spec.capability_key, arguments=frozen,
        )
        task = asyncio.current_task()
        assert task is not None
        stopped = False

        def on_cancel() -> None:
            nonlocal stopped
            stopped = True
            task.cancel()

        remove = ctx.cancel.add_callback(on_cancel)
        timeout = asyncio.timeout(ctx.deadline - time.time())
        try:
            async with timeout:
                result = await handler.invoke_once(creq, actx)
            if not isinstance(result, ToolResult):
                return ToolResult.unknown(OperationError(
                    code="INVALID_HANDLER_RESULT", category="protocol",
                    message=f"handler for {spec.capability_key} returned "
                    f"{type(result).__name__}, not a ToolResult",
                    external_outcome="unknown"))
            return result
        except asyncio.CancelledError:
            if not stopped:
                raise
            task.uncancel()
            return ToolResult.unknown(OperationError(
                code="RUN_STOPPED", category="cancelled",
                message=f"stopped ({ctx.cancel.reason}) while the call was running; "
                "it may have taken effect", external_outcome="unknown"))
        except TimeoutError as exc:
            if timeout.expired():
                return ToolResult.unknown(OperationError(
                    code="RUN_DEADLINE_EXCEEDED", category="timeout",
                    message="the run deadline passed while the call was running; "
                    "it may have taken effect", external_outcome="unknown"))
            return _handler_exception(spec, exc)
        except Exception as exc:
            return _handler_exception(spec, exc)
        finally:
            remove()

    async def _run_chain(
        self,
        state: OperationState,
        request: Request,
        spec: CapabilitySpec,
        chain: tuple[HookSpec, ...],
        start: int,
        timing: str,
    ) -> OperationResult | None:
        """Run hooks ``start..`` in order, committing each; return the envelope on a deny."""
        for position in range(start, len(chain)):
            hook = chain[position]
            event = self._hook_event(state, request, timing)
            run = await self.hooks.run(hook, event)
            record: dict[str, Any] = {
                "hook_id": hook.hook_id, "config_version": self.hooks.version,
                "input_version": state.payload_version, "status": run.status,
                "diagnostic": run.diagnostic,
            }
            changes = ChangeSet((), ())
            context_ops: list[Op] = []
            parsed = run.decision
            new_doc: dict[str, Any] | None = None
            if parsed is not None:
                record["decision"] = parsed.decision
                record["reason"] = parsed.reason
                patch_error = parsed.patch_error
                if patch_error is None and (parsed.payload_patch or parsed.context_patch):
                    try:
                        changes, new_doc, context_ops = self._prepare_changes(
                            state, request, spec, parsed, timing, event, hook
                        )
                    except PatchInvalid as exc:
                        patch_error = exc
                if patch_error is not None:
                    changes, new_doc, context_ops = ChangeSet((), ()), None, []
                    record["patch_error"] = {"code": patch_error.code,
                                             "message": patch_error.message}
                record["change_hash"] = None if changes.empty else changes.digest()
                record["changes"] = changes.to_dict() if not changes.empty else None
                if parsed.decision == "deny":
                    return await self._deny(state, request, hook, position, timing, record)
            snapshot = (state.payload, state.payload_version, state.call_revision, state.result)
            accepted: list[Op] = []
            if new_doc is not None and not changes.empty:
                accepted = self._accept_changes(state, request, timing, new_doc, hook)
            try:
                await self._commit_hook(state, request, chain, position, timing, hook, run.status,
                                        record, [*accepted, *context_ops])
            except RevisionConflict:
                if not context_ops:
                    raise
                # A record this hook patched changed concurrently: its whole patch is stale.
                state.payload, state.payload_version, state.call_revision, state.result = snapshot
                record["patch_error"] = {"code": "HOOK_PATCH_STALE", "message":
                                         "a context record changed concurrently; patch dropped"}
                record["change_hash"] = record["changes"] = None
                await self._commit_hook(state, request, chain, position, timing, hook,
                                        run.status, record, [])
            crashpoints.reached("hook_committed")
        return None

    async def _commit_hook(
        self, state: OperationState, request: Request, chain: tuple[HookSpec, ...],
        position: int, timing: str, hook: HookSpec, status: str, record: dict[str, Any],
        extra: list[Op],
    ) -> None:
        """Commit one hook's decision, accepted change set and the advanced cursor together."""
        next_position = position + 1
        record["cursor"] = next_position
        state.cursor = {"timing": timing, "position": next_position}
        ops: list[Op] = [*extra, hook_row(state.operation_id, timing, position, hook.hook_id,
                                          status, record, record.get("decision"))]
        if next_position < len(chain):
            ops.append(self._hook_started(state, timing, next_position, chain[next_position]))
        await self._commit(request, [state.row(), *ops])

    def _prepare_changes(
        self, state: OperationState, request: Request, spec: CapabilitySpec, parsed: Any,
        timing: str, event: dict[str, Any], hook: HookSpec,
    ) -> tuple[ChangeSet, dict[str, Any], list[Op]]:
        ctx = request.context
        call = None
        if ctx.context_scope is not None and timing == "before":
            call = CallRecord(call_record_id(state.operation_id), state.call_revision,
                              "/arguments", "/payload")
        changes = normalise(
            parsed.payload_patch, parsed.context_patch, call=call,
            writable=BEFORE_WRITABLE if timing == "before" else AFTER_WRITABLE,
            payload_version=state.payload_version,
        )
        new_doc = apply_ops(event, changes.ops)
        if timing == "before":
            payload = new_doc.get("payload")
            if not isinstance(payload, dict):
                raise PatchInvalid("HOOK_PATCH_INVALID", "the payload must stay an object")
            errors = self.registry.validator(ctx.catalog, spec.capability_key).errors(payload)
            if errors and changes.ops:
                raise PatchInvalid(
                    "HOOK_PATCH_INVALID",
                    "patched arguments do not match the schema: " + "; ".join(errors[:3]),
                )
        else:
            try:
                patched = ToolResult.from_dict(new_doc["result"])
            except (KeyError, TypeError, ValueError) as exc:
                raise PatchInvalid("HOOK_PATCH_INVALID", f"patched result is invalid: {exc}") from exc
            if state.raw is not None and patched.status != state.raw["status"]:
                raise PatchInvalid("HOOK_PATCH_PROTECTED", "a hook cannot change a result's status")
        context_ops = self.context.prepare_changes(
            changes.context_changes, private_scope=ctx.context_scope,
            shared_scope=ctx.shared_scope, run_id=ctx.run_id, source=f"hook:{hook.hook_id}",
        )
        return changes, new_doc, context_ops

    def _accept_changes(
        self, state: OperationState, request: Request, timing: str,
        new_doc: dict[str, Any], hook: HookSpec,
    ) -> list[Op]:
        ctx = request.context
        if timing == "after":
            state.result = new_doc["result"]
            return []
        state.payload = new_doc["payload"]
        state.payload_version += 1
        if ctx.context_scope is None:
            return []
        state.call_revision += 1
        return [
            self.context.record_op(
                scope_id=ctx.context_scope, run_id=state.run_id,
                record_id=call_record_id(state.operation_id), revision=state.call_revision,
                kind="tool_call", position=f"{state.operation_id}:0",
                data={
                    "operation_id": state.operation_id,
                    "capability": state.capability_key,
                    "arguments": state.payload,
                    "proposed_arguments": state.request["proposed_arguments"],
                    "source": f"hook:{hook.hook_id}",
                },
            )
        ]

    async def _deny(
        self, state: OperationState, request: Request, hook: HookSpec, position: int,
        timing: str, record: dict[str, Any],
    ) -> OperationResult:
        reason = record.get("reason") or f"denied by hook {hook.hook_id}"
        record["cursor"] = None
        ops: list[Op] = [hook_row(state.operation_id, timing, position, hook.hook_id,
                                  "succeeded", record, "deny")]
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
        context_ops, _ = self.context.result_ops(
            scope_id=ctx.context_scope, run_id=state.run_id, role=ctx.role,
            operation_id=state.operation_id, capability=state.capability_key,
            outcome=outcome, result=delivered,
            summary="" if delivered is not None else envelope.describe(),
        )
        await self._commit(request, [*pending, state.row(), *context_ops])
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
                                     {"arguments": state.request.get("executed_arguments"),
                                      "raw": state.raw}, finished=True)]
        return await self._finish(state, request, "unknown", lost, error=error, pending=ops)

    async def _refuse_unresolved(self, request: Request, exc: CatalogError) -> OperationResult:
        ctx = request.context
        state = OperationState(
            operation_id=request.operation_id, run_id=ctx.run_id,
            logical_key=request.logical_key, capability_key=request.model_name,
            event_type=request.event_type,
            request={"model_name": request.model_name, "role": ctx.role,
                     "proposed_arguments": dict(request.arguments),
                     "causation_id": request.causation_id, "purpose": request.purpose},
            payload=dict(request.arguments),
        )
        return await self._finish(state, request, "failed", None, error=exc.error, pending=[])

    # -- recovery helpers ------------------------------------------------------------------
    def _recorded_chain(self, state: OperationState, timing: str) -> tuple[HookSpec, ...]:
        chain: list[HookSpec] = []
        for hook_id in state.chain.get(timing, []):
            hook = self.hooks.get(hook_id)
            if hook is None:
                raise CatalogError(
                    f"operation {state.operation_id} was started with hook {hook_id!r}, "
                    "which is no longer configured; restore it to recover this run",
                    code="HOOK_CONFIG_CHANGED",
                )
            chain.append(hook)
        return tuple(chain)

    async def _settle_interrupted_hook(
        self, state: OperationState, request: Request, timing: str, chain: tuple[HookSpec, ...]
    ) -> int | None:
        """A hook that started without a committed decision is ``indeterminate``: record it,
        keep the last effective value (fail-open) and never run it again."""
        cursor = state.cursor or {"timing": timing, "position": 0}
        position = int(cursor.get("position", 0))
        if position >= len(chain):
            return None
        rows = self.store.query("hook_invocations", {"operation_id": state.operation_id,
                                                     "timing": timing, "position": position})
        if rows and rows[0]["status"] == "started":
            hook = chain[position]
            record = {"hook_id": hook.hook_id, "config_version": self.hooks.version,
                      "input_version": state.payload_version, "status": "indeterminate",
                      "diagnostic": "the runtime stopped while this hook ran; its decision "
                      "was lost and it was not run again (fail-open)",
                      "cursor": position + 1}
            position += 1
            state.cursor = {"timing": timing, "position": position}
            ops: list[Op] = [hook_row(state.operation_id, timing, position - 1, hook.hook_id,
                                      "indeterminate", record)]
            if position < len(chain):
                ops.append(self._hook_started(state, timing, position, chain[position]))
            await self._commit(request, [state.row(), *ops])
        return position if position < len(chain) else None

    # -- plumbing ----------------------------------------------------------------------------
    def _hook_started(self, state: OperationState, timing: str, position: int, hook: HookSpec) -> Op:
        return hook_row(state.operation_id, timing, position, hook.hook_id, "started",
                        {"hook_id": hook.hook_id, "input_version": state.payload_version})

    def _hook_event(self, state: OperationState, request: Request, timing: str) -> dict[str, Any]:
        ctx = request.context
        event: dict[str, Any] = {
            "timing": timing,
            "event": request.event_type,
            "capability": state.capability_key,
            "model_name": request.model_name,
            "role": ctx.role,
            "run_id": ctx.run_id,
            "operation_id": state.operation_id,
            "purpose": request.purpose,
            "payload": state.payload,
            "payload_version": state.payload_version,
            "proposed_payload": state.request["proposed_arguments"],
        }
        if ctx.context_scope is not None:
            event["context"] = {"call_record": {"record_id": call_record_id(state.operation_id),
                                                "revision": state.call_revision}}
        if timing == "after":
            event["result"] = state.result if state.result is not None else state.raw
        return event

    async def _commit(self, request: Request, ops: list[Op]) -> None:
        ctx = request.context
        await self.coordinator.commit(WriteSet(tuple(ops), Fence(ctx.run_id, ctx.lease_epoch)),
                                      inline=self._active <= 1)

    def _observe(self, kind: str, state: OperationState) -> None:
        if self.observer is None:
            return
        payload: dict[str, Any] = {"operation_id": state.operation_id, "run_id": state.run_id,
                                   "capability": state.capability_key}
        if state.envelope is not None:
            payload["outcome"] = state.envelope["outcome"]
        self.observer(kind, payload)

    @staticmethod
    async def _sleep(seconds: float, cancel: Any) -> None:
        waiter = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout=seconds)
        except TimeoutError:
            pass
        finally:
            waiter.cancel()


def _handler_exception(spec: CapabilitySpec, exc: BaseException) -> ToolResult:
    """A handler that raised instead of returning a result: its outcome is unknown."""
    return ToolResult.unknown(OperationError(
        code="HANDLER_EXCEPTION", category="unknown",
        message=f"{spec.capability_key} raised {type(exc).__name__}: {exc}",
        external_outcome="unknown"))


