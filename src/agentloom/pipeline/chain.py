"""The ordered hook chain of one operation (000 §5.2, §5.5), as a mixin of the pipeline.

Each hook runs on a read-only event; its decision and normalised change set are
validated, applied and committed with the advanced cursor before the next hook
runs. A deny ends the chain. A patch is checked against the hook point's shape
(the payload against the capability's input schema, a result against the result's
form) before it is used. A stop of the run while a hook runs ends the chain: the
hook is ``abandoned`` and the call ``cancelled``. After a crash, a hook that
started without a committed decision is ``indeterminate``: recorded, not run
again, fail-open. A hook with ``on_failure: deny`` that fails, times out, returns no
valid decision, has its patch dropped or is ``indeterminate`` denies the call instead.
"""

from __future__ import annotations

from typing import Any

from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.context.manager import ContextManager, call_record_id
from agentloom.errors import CatalogError, RevisionConflict
from agentloom.hooks.manager import HookManager
from agentloom.hooks.patch import CallRecord, ChangeSet, PatchInvalid, apply_ops, normalise
from agentloom.hooks.shapes import check_payload, check_result
from agentloom.hooks.spec import FAILURE_STATUSES, HookSpec
from agentloom.pipeline import crashpoints
from agentloom.pipeline.context import Request
from agentloom.pipeline.ports import Observer
from agentloom.pipeline.records import OperationState, hook_row
from agentloom.results import OperationResult, ToolResult
from agentloom.store.ports import Op, Store

BEFORE_WRITABLE = ("/payload",)
AFTER_WRITABLE = ("/result/content", "/result/metadata", "/result/artifacts")


class HookChain:
    """Hook-chain steps of ``InvocationPipeline``; the pipeline supplies the collaborators."""

    store: Store
    registry: CapabilityRegistry
    hooks: HookManager
    context: ContextManager
    observer: Observer | None

    def _warn(self, state: OperationState, timing: str, record: dict[str, Any]) -> None:
        """Announce a hook that failed, could not decide or had its patch dropped
        (``hook.warning``: the CLI prints one line for it while the run goes on)."""
        status = str(record.get("status"))
        dropped = record.get("patch_error")
        if self.observer is None or (status not in FAILURE_STATUSES and not dropped):
            return
        if dropped:
            code, message = dropped["code"], dropped["message"]
        else:
            code, message = f"HOOK_{status.upper()}", str(record.get("diagnostic") or status)
        self.observer("hook.warning", {
            "run_id": state.run_id, "operation_id": state.operation_id,
            "capability": state.capability_key, "hook_id": record.get("hook_id"),
            "timing": timing, "status": status, "code": code, "message": message,
            "denied": record.get("on_failure") == "deny"})

    async def _commit(self, request: Request, ops: list[Op]) -> None:
        raise NotImplementedError

    async def _deny(
        self, state: OperationState, request: Request, hook: HookSpec, position: int,
        timing: str, record: dict[str, Any], *, status: str = "succeeded",
    ) -> OperationResult:
        raise NotImplementedError

    async def _deny_on_failure(
        self, state: OperationState, request: Request, hook: HookSpec, position: int,
        timing: str, record: dict[str, Any], why: str,
    ) -> OperationResult:
        """``on_failure: deny``: the hook could not decide, so the call is denied; the hook's
        own status (``failed``, ``timed_out``, ``invalid``, ``indeterminate``) is kept."""
        record["decision"] = "deny"
        record["on_failure"] = "deny"
        record["reason"] = f"hook {hook.hook_id} could not decide: {why} (on_failure: deny)"
        if record["status"] in FAILURE_STATUSES:
            self._warn(state, timing, record)
        return await self._deny(state, request, hook, position, timing, record,
                                status=str(record["status"]))

    async def _stopped(
        self, state: OperationState, request: Request, hook: HookSpec, position: int,
        timing: str, record: dict[str, Any],
    ) -> OperationResult:
        raise NotImplementedError

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
            run = await self.hooks.run(hook, event, cancel=request.context.cancel)
            record: dict[str, Any] = {
                "hook_id": hook.hook_id, "config_version": self.hooks.version,
                "input_version": state.payload_version, "status": run.status,
                "diagnostic": run.diagnostic,
            }
            if run.status == "abandoned":
                return await self._stopped(state, request, hook, position, timing, record)
            if run.status in FAILURE_STATUSES and hook.on_failure == "deny":
                return await self._deny_on_failure(state, request, hook, position, timing,
                                                   record, run.diagnostic or run.status)
            if run.status in FAILURE_STATUSES:
                self._warn(state, timing, record)
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
                    if parsed.decision != "deny" and hook.on_failure == "deny":
                        self._warn(state, timing, record)
                        return await self._deny_on_failure(
                            state, request, hook, position, timing, record,
                            f"its patch was dropped ({patch_error.code}: {patch_error.message})")
                record["change_hash"] = None if changes.empty else changes.digest()
                record["changes"] = changes.to_dict() if not changes.empty else None
                if patch_error is not None:
                    self._warn(state, timing, record)
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
            check_payload(payload)
            errors = self.registry.validator(ctx.catalog, spec.capability_key).errors(payload)
            if errors and changes.ops:
                raise PatchInvalid(
                    "HOOK_PATCH_INVALID",
                    "patched arguments do not match the schema: " + "; ".join(errors[:3]),
                )
        else:
            check_result(new_doc.get("result"))
            try:
                patched = ToolResult.from_dict(new_doc["result"])
            except Exception as exc:  # a shape check_result let through is still refused here
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

    async def _resume_chain(
        self, state: OperationState, request: Request, spec: CapabilitySpec,
        chain: tuple[HookSpec, ...], timing: str,
    ) -> OperationResult | None:
        """Continue an interrupted chain at its committed cursor; the envelope on a deny."""
        cursor = state.cursor or {"timing": timing, "position": 0}
        position = int(cursor.get("position", 0))
        if position >= len(chain):
            return None
        rows = self.store.query("hook_invocations", {"operation_id": state.operation_id,
                                                     "timing": timing, "position": position})
        if rows and rows[0]["status"] == "started":
            hook = chain[position]
            if hook.on_failure == "deny":
                record: dict[str, Any] = {
                    "hook_id": hook.hook_id, "config_version": self.hooks.version,
                    "input_version": state.payload_version, "status": "indeterminate",
                    "diagnostic": "the runtime stopped while this hook ran; its decision "
                    "was lost and it was not run again"}
                return await self._deny_on_failure(state, request, hook, position, timing,
                                                   record, "its decision was lost in a crash")
            position = await self._settle_interrupted_hook(state, request, timing, chain,
                                                           position)
            if position >= len(chain):
                return None
        return await self._run_chain(state, request, spec, chain, position, timing)

    async def _settle_interrupted_hook(
        self, state: OperationState, request: Request, timing: str,
        chain: tuple[HookSpec, ...], position: int,
    ) -> int:
        """A hook that started without a committed decision is ``indeterminate``: record it,
        keep the last effective value (fail-open) and never run it again. Returns the next
        position."""
        hook = chain[position]
        record = {"hook_id": hook.hook_id, "config_version": self.hooks.version,
                  "input_version": state.payload_version, "status": "indeterminate",
                  "diagnostic": "the runtime stopped while this hook ran; its decision "
                  "was lost and it was not run again (fail-open)",
                  "cursor": position + 1}
        state.cursor = {"timing": timing, "position": position + 1}
        ops: list[Op] = [hook_row(state.operation_id, timing, position, hook.hook_id,
                                  "indeterminate", record)]
        if position + 1 < len(chain):
            ops.append(self._hook_started(state, timing, position + 1, chain[position + 1]))
        await self._commit(request, [state.row(), *ops])
        self._warn(state, timing, record)
        return position + 1

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
