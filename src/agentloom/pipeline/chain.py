"""The ordered hook chain of one timing of one call (000 §5.2, §5.5).

Each hook runs on a read-only event; its decision and normalised change set are
validated, applied and committed with the advanced cursor before the next hook
runs. A deny ends the chain. An ``ask`` (a before-hook of a tool, model or delegation call;
anywhere else it is an invalid decision) is recorded and the chain goes on: when it ends
without a deny, the call waits for a person, its wait committed with the last hook's
decision (``pipeline.approval``). A patch may change only what the hook point's versioned
writable-field schema allows (``hooks.fields``; its version is recorded on every row): a model
request's messages are never removed, moved or re-fielded, and an edit of one is recorded, in
the same commit, as the next revision of that message's context record by its stable id, so
it lasts (000 §5.3); a record of another, executed call only takes an attributed note. A patch
is checked against the hook point's shape
(the payload against the capability's input schema, a result against the result's
form; a model call's payload also against the window set for the call, see
``hooks.shapes.check_window``) before it is used. The stop and the run deadline come
first (000 §5.5): each hook
is waited for at most min(its timeout, the time left to the run deadline); a stop or the
deadline before or while a hook runs ends the chain, the hook ``abandoned`` (its late
decision discarded, ``ended_by`` recorded) and the call ``cancelled`` (stop) or failed with
``RUN_DEADLINE_EXCEEDED`` (deadline). After a crash, a hook that
started without a committed decision is ``indeterminate``: recorded, not run
again, fail-open. A hook with ``on_failure: deny`` that fails, times out, returns no
valid decision, has its patch dropped or is ``indeterminate`` denies the call instead; a
command hook the runtime could not start (``HookRun.not_started``) always does (000 §5.2:
a runtime execution failure is never passed over by fail-open).

Owns: running, recording and resuming the hooks of one timing. Does not own: the call's
other phases or how a deny or a stop ends it (``pipeline.call``), nor which hooks match
(``hooks.manager``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentloom.context.manager import MessageEdit, call_record_id, message_record_id
from agentloom.errors import CatalogError, RevisionConflict
from agentloom.hooks.decision import may_ask
from agentloom.hooks.fields import FIELDS_VERSION, check_model_ops, writable_paths
from agentloom.hooks.manager import HookRun
from agentloom.hooks.patch import CallRecord, ChangeSet, PatchInvalid, apply_ops, normalise
from agentloom.hooks.shapes import check_payload, check_result, check_window
from agentloom.hooks.spec import FAILURE_STATUSES, HookSpec, Timing
from agentloom.limits import current_window
from agentloom.pipeline import crashpoints
from agentloom.pipeline.approval import awaiting_ops, default_question
from agentloom.pipeline.records import OperationState, hook_row
from agentloom.results import OperationResult, ToolResult
from agentloom.store.operations import hook_invocations
from agentloom.store.ports import Op

if TYPE_CHECKING:
    from agentloom.pipeline.call import Call

class HookChain:
    """The hooks of one call at one timing, in order; ``run`` and ``resume`` return the
    call's envelope when a hook ends it (a deny, a stop), else ``None``."""

    __slots__ = ("call", "hooks", "timing")

    def __init__(self, call: Call, timing: Timing, hooks: tuple[HookSpec, ...]) -> None:
        self.call = call
        self.timing = timing
        self.hooks = hooks

    @classmethod
    def recorded(cls, call: Call, timing: Timing) -> HookChain:
        """The chain ``call``'s operation recorded for ``timing`` when it reached it."""
        state, manager = call.state, call.pipeline.hooks
        chain: list[HookSpec] = []
        for hook_id in state.chain.get(timing, []):
            hook = manager.get(hook_id)
            if hook is None:
                raise CatalogError(
                    f"operation {state.operation_id} was started with hook {hook_id!r}, "
                    "which is no longer configured; restore it to recover this run",
                    code="HOOK_CONFIG_CHANGED",
                )
            chain.append(hook)
        return cls(call, timing, tuple(chain))

    def started(self, position: int) -> Op:
        """The row saying hook ``position`` started (committed before it runs)."""
        state = self.call.state
        hook_id = self.hooks[position].hook_id
        return hook_row(state.operation_id, self.timing, position, hook_id=hook_id,
                        status="started",
                        data={"hook_id": hook_id, "input_version": state.payload_version})

    async def run(self, start: int = 0) -> OperationResult | None:
        """Run hooks ``start..`` in order, committing each; return the envelope on a deny."""
        call, timing = self.call, self.timing
        state, manager = call.state, call.pipeline.hooks
        for position in range(start, len(self.hooks)):
            hook = self.hooks[position]
            event = self._event()
            ctx = call.request.context
            running = manager.run(hook, event, cancel=ctx.cancel, deadline=ctx.deadline)
            tracer = call.pipeline.tracer
            run = self._refuse_misplaced_ask(await (running if tracer is None else tracer.hook(
                state, hook_id=hook.hook_id, timing=timing, position=position, work=running)), hook)
            record: dict[str, Any] = {
                "hook_id": hook.hook_id, "config_version": manager.version,
                "input_version": state.payload_version, "status": run.status,
                "diagnostic": run.diagnostic, "fields_version": FIELDS_VERSION,
            }
            if run.status == "abandoned":
                record["ended_by"] = run.ended_by
                return await call.stopped(hook, position, timing, record,
                                          by=run.ended_by or "stop")
            if run.not_started:  # a runtime failure, never passed over (000 §5.2)
                return await self._deny_not_started(hook, position, record,
                                                    run.diagnostic or run.status)
            if run.status in FAILURE_STATUSES and hook.on_failure == "deny":
                return await self._deny_on_failure(hook, position, record,
                                                   run.diagnostic or run.status)
            if run.status in FAILURE_STATUSES:
                self._warn(record)
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
                        changes, new_doc, context_ops = self._prepare_changes(parsed, event, hook)
                    except PatchInvalid as exc:
                        patch_error = exc
                if patch_error is not None:
                    changes, new_doc, context_ops = ChangeSet((), ()), None, []
                    record["patch_error"] = {"code": patch_error.code,
                                             "message": patch_error.message}
                    if parsed.decision != "deny" and hook.on_failure == "deny":
                        self._warn(record)
                        return await self._deny_on_failure(
                            hook, position, record,
                            f"its patch was dropped ({patch_error.code}: {patch_error.message})")
                record["change_hash"] = None if changes.empty else changes.digest()
                record["changes"] = changes.to_dict() if not changes.empty else None
                if patch_error is not None:
                    self._warn(record)
                if parsed.decision == "deny":
                    return await call.deny(hook, position, timing, record)
                if parsed.decision == "ask":
                    record["reason"] = parsed.reason or default_question(call)
                    state.asks.append({"hook_id": hook.hook_id, "question": record["reason"]})
            snapshot = (state.payload, state.payload_version, state.call_revision, state.result)
            accepted: list[Op] = []
            if new_doc is not None and not changes.empty:
                accepted = self._accept_changes(new_doc, hook)
            try:
                await self._commit_hook(position, record, [*accepted, *context_ops],
                                        status=run.status)
            except RevisionConflict:
                if not context_ops:
                    raise
                # A record this hook patched changed concurrently: its whole patch is stale.
                state.payload, state.payload_version, state.call_revision, state.result = snapshot
                record["patch_error"] = {"code": "HOOK_PATCH_STALE", "message":
                                         "a context record changed concurrently; patch dropped"}
                record["change_hash"] = record["changes"] = None
                await self._commit_hook(position, record, [], status=run.status)
            crashpoints.reached("hook_committed")
        return None

    async def resume(self) -> OperationResult | None:
        """Continue an interrupted chain at its committed cursor; the envelope on a deny."""
        call, timing = self.call, self.timing
        state = call.state
        cursor = state.cursor or {"timing": timing, "position": 0}
        position = int(cursor.get("position", 0))
        if position >= len(self.hooks):
            return None
        rows = hook_invocations(call.pipeline.store, state.operation_id, timing=timing,
                                position=position)
        if rows and rows[0].status == "started":
            hook = self.hooks[position]
            if hook.on_failure == "deny":
                record: dict[str, Any] = {
                    "hook_id": hook.hook_id, "config_version": call.pipeline.hooks.version,
                    "input_version": state.payload_version, "status": "indeterminate",
                    "diagnostic": "the runtime stopped while this hook ran; its decision "
                    "was lost and it was not run again"}
                return await self._deny_on_failure(hook, position, record,
                                                   "its decision was lost in a crash")
            position = await self._settle_interrupted_hook(position)
            if position >= len(self.hooks):
                return None
        return await self.run(position)

    # -- steps -------------------------------------------------------------------------------
    def _next(self, position: int) -> list[Op]:
        """What is committed with a hook's decision besides it: the next hook's start, or at
        the end of a before chain in which a hook asked, the call's wait for a person."""
        if position < len(self.hooks):
            return [self.started(position)]
        if self.timing == "before" and self.call.state.asks:
            return awaiting_ops(self.call)
        return []

    def _refuse_misplaced_ask(self, run: HookRun, hook: HookSpec) -> HookRun:
        """``ask`` is a before-hook's answer on a tool, model or delegation call only;
        anywhere else it is no valid decision (the hook's status ``invalid``)."""
        event_type = self.call.request.event_type
        if run.decision is None or run.decision.decision != "ask" \
                or may_ask(self.timing, event_type):
            return run
        return HookRun("invalid", None, f"hook {hook.hook_id!r} answered 'ask', which only a "
                       "before-hook of a tool, model or delegation call may; this is an "
                       f"{self.timing}-hook of a {event_type} call")

    def _warn(self, record: dict[str, Any]) -> None:
        """Announce a hook that failed, could not decide or had its patch dropped
        (``hook.warning``: the CLI prints one line for it while the run goes on)."""
        observer = self.call.pipeline.observer
        status = str(record.get("status"))
        dropped = record.get("patch_error")
        if observer is None or (status not in FAILURE_STATUSES and not dropped):
            return
        if dropped:
            code, message = dropped["code"], dropped["message"]
        else:
            code, message = f"HOOK_{status.upper()}", str(record.get("diagnostic") or status)
        state = self.call.state
        observer("hook.warning", {
            "run_id": state.run_id, "operation_id": state.operation_id,
            "capability": state.capability_key, "hook_id": record.get("hook_id"),
            "timing": self.timing, "status": status, "code": code, "message": message,
            "denied": record.get("on_failure") == "deny" or bool(record.get("not_started"))})

    async def _deny_on_failure(
        self, hook: HookSpec, position: int, record: dict[str, Any], why: str,
    ) -> OperationResult:
        """``on_failure: deny``: the hook could not decide, so the call is denied; the hook's
        own status (``failed``, ``timed_out``, ``invalid``, ``indeterminate``) is kept."""
        record["decision"] = "deny"
        record["on_failure"] = "deny"
        record["reason"] = f"hook {hook.hook_id} could not decide: {why} (on_failure: deny)"
        if record["status"] in FAILURE_STATUSES:
            self._warn(record)
        return await self.call.deny(hook, position, self.timing, record,
                                    status=str(record["status"]))

    async def _deny_not_started(
        self, hook: HookSpec, position: int, record: dict[str, Any], why: str,
    ) -> OperationResult:
        """A command hook the runtime could not start (its sandbox refused, its folder or
        program unreachable): a runtime execution failure, which fail-open never bypasses
        (000 §5.2), so the call is denied with why, whatever the hook's ``on_failure``."""
        record["decision"] = "deny"
        record["not_started"] = True
        record["reason"] = f"{why} — a hook that could not start denies the call"
        self._warn(record)
        return await self.call.deny(hook, position, self.timing, record, status="failed")

    async def _commit_hook(self, position: int, record: dict[str, Any], extra: list[Op], *,
                           status: str) -> None:
        """Commit one hook's decision, accepted change set and the advanced cursor together."""
        state = self.call.state
        next_position = position + 1
        record["cursor"] = next_position
        state.cursor = {"timing": self.timing, "position": next_position}
        ops: list[Op] = [*extra, hook_row(state.operation_id, self.timing, position,
                                          hook_id=self.hooks[position].hook_id, status=status,
                                          data=record, decision=record.get("decision")),
                         *self._next(next_position)]
        await self.call.commit([state.row(), *ops])

    def _prepare_changes(
        self, parsed: Any, event: dict[str, Any], hook: HookSpec,
    ) -> tuple[ChangeSet, dict[str, Any], list[Op]]:
        call, timing = self.call, self.timing
        state, ctx = call.state, call.request.context
        model = call.request.event_type == "model"
        record = None
        if ctx.context_scope is not None and timing == "before":
            record = CallRecord(call_record_id(state.operation_id), state.call_revision,
                                "/arguments", "/payload")
        messages: list[Any] = []
        records: dict[str, CallRecord] = {}
        if model and timing == "before":
            messages = list(event["payload"].get("messages") or [])
            if ctx.message_scope is not None and parsed.context_patch is not None:
                records = self._message_records(messages)
        changes = normalise(
            parsed.payload_patch, parsed.context_patch, call=record, records=records,
            writable=writable_paths(timing, call.request.event_type),
            payload_version=state.payload_version,
        )
        if model and timing == "before":
            check_model_ops(changes.ops, messages)
        new_doc = apply_ops(event, changes.ops)
        edits: list[MessageEdit] = []
        if timing == "before":
            payload = new_doc.get("payload")
            check_payload(payload)
            validator = call.pipeline.registry.validator(ctx.catalog, call.capability.capability_key)
            errors = validator.errors(payload)
            if errors and changes.ops:
                raise PatchInvalid(
                    "HOOK_PATCH_INVALID",
                    "patched arguments do not match the schema: " + "; ".join(errors[:3]),
                )
            window = current_window() if model else None
            if window is not None and changes.ops:
                check_window(event["payload"], payload, window)
            if model and changes.ops:
                edits = _message_edits(messages, payload.get("messages") or [])
        else:
            check_result(new_doc.get("result"))
            try:
                patched = ToolResult.from_dict(new_doc["result"])
            except Exception as exc:  # a shape check_result let through is still refused here
                raise PatchInvalid("HOOK_PATCH_INVALID", f"patched result is invalid: {exc}") from exc
            if state.raw is not None and patched.status != state.raw["status"]:
                raise PatchInvalid("HOOK_PATCH_PROTECTED", "a hook cannot change a result's status")
        context_ops = call.pipeline.context.prepare_changes(
            changes.context_changes, private_scope=ctx.context_scope,
            shared_scope=ctx.shared_scope, run_id=ctx.run_id, source=f"hook:{hook.hook_id}",
        )
        if edits and ctx.message_scope is not None:  # lasting: every later request shows them
            context_ops += call.pipeline.context.message_edit_ops(
                edits, scope_id=ctx.message_scope, run_id=ctx.run_id,
                source=f"hook:{hook.hook_id}", operation_id=state.operation_id)
        return changes, new_doc, context_ops

    def _message_records(self, messages: list[Any]) -> dict[str, CallRecord]:
        """The context records of a model request's messages (by stable id), each mapping onto
        its message's ``/content`` in the payload, at its current revision (0: never edited)."""
        scope = self.call.request.context.message_scope
        assert scope is not None
        revisions = self.call.pipeline.context.message_revisions(scope)
        records = {}
        for index, message in enumerate(messages):
            mid = message.get("id") if isinstance(message, dict) else None
            if isinstance(mid, str):
                rid = message_record_id(mid)
                records[rid] = CallRecord(rid, revisions.get(mid, 0), "/content",
                                          f"/payload/messages/{index}/content")
        return records

    def _accept_changes(self, new_doc: dict[str, Any], hook: HookSpec) -> list[Op]:
        state = self.call.state
        if self.timing == "after":
            state.result = new_doc["result"]
            return []
        state.payload = new_doc["payload"]
        state.payload_version += 1
        return self.call.call_record_ops(source=f"hook:{hook.hook_id}")

    async def _settle_interrupted_hook(self, position: int) -> int:
        """A hook that started without a committed decision is ``indeterminate``: record it,
        keep the last effective value (fail-open) and never run it again. Returns the next
        position."""
        state = self.call.state
        hook = self.hooks[position]
        record = {"hook_id": hook.hook_id, "config_version": self.call.pipeline.hooks.version,
                  "input_version": state.payload_version, "status": "indeterminate",
                  "diagnostic": "the runtime stopped while this hook ran; its decision "
                  "was lost and it was not run again (fail-open)",
                  "cursor": position + 1}
        state.cursor = {"timing": self.timing, "position": position + 1}
        ops: list[Op] = [hook_row(state.operation_id, self.timing, position,
                                  hook_id=hook.hook_id, status="indeterminate", data=record),
                         *self._next(position + 1)]
        await self.call.commit([state.row(), *ops])
        self._warn(record)
        return position + 1

    def _event(self) -> dict[str, Any]:
        call = self.call
        request, ctx = call.request, call.request.context
        scope = ctx.message_scope
        return call_event(
            self.timing, call.state, event_type=request.event_type,
            exposed_name=request.exposed_name, role=ctx.role, run_id=ctx.run_id,
            purpose=request.purpose, context_scope=ctx.context_scope,
            message_revisions=None if scope is None
            else lambda: call.pipeline.context.message_revisions(scope))


def call_event(
    timing: Timing, state: OperationState, *, event_type: str, exposed_name: str,
    role: str | None, run_id: str, purpose: str | None, context_scope: str | None,
    message_revisions: Callable[[], Mapping[str, int]] | None,
) -> dict[str, Any]:
    """The event one hook of ``timing`` sees of the call ``state`` holds (as ``HookManager.run``
    takes it); the one builder, also used by ``agentloom hooks replay`` on recorded calls.
    ``message_revisions``: a model call's message records' revisions (``None``: no scope)."""
    event: dict[str, Any] = {
        "timing": timing,
        "event": event_type,
        "capability": state.capability_key,
        "exposed_name": exposed_name,
        "role": role,
        "run_id": run_id,
        "operation_id": state.operation_id,
        "purpose": purpose,
        "payload": state.payload,
        "payload_version": state.payload_version,
        "proposed_payload": state.request["proposed_arguments"],
    }
    node = state.request.get("node")  # the workflow node the call serves (issue 37)
    if node is not None:
        event["node"] = node
    if context_scope is not None:
        event["context"] = {"call_record": {"record_id": call_record_id(state.operation_id),
                                            "revision": state.call_revision}}
    elif message_revisions is not None and timing == "before":
        # a model request: each message's context record, for a context_patch by stable id
        revisions = message_revisions()
        event["context"] = {"message_records": [
            {"index": i, "record_id": message_record_id(m["id"]),
             "revision": revisions.get(m["id"], 0)}
            for i, m in enumerate(state.payload.get("messages") or [])
            if isinstance(m, dict) and isinstance(m.get("id"), str)]}
    if timing == "after":
        event["result"] = state.result if state.result is not None else state.raw
    return event


def _message_edits(before: list[Any], after: list[Any]) -> list[MessageEdit]:
    """The messages of a model request whose text a patch changed, by stable id (the rules of
    ``hooks.fields`` keep every existing message, its id and its role)."""
    seen = {m["id"]: m for m in before if isinstance(m, dict) and isinstance(m.get("id"), str)}
    edits = []
    for message in after:
        mid = message.get("id") if isinstance(message, dict) else None
        old = seen.get(mid) if isinstance(mid, str) else None
        if old is not None and message.get("content") != old.get("content"):
            edits.append(MessageEdit(str(mid), str(old.get("role")), old.get("content"),
                                     message.get("content")))
    return edits
