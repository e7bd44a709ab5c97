"""Call: one logical call taken through the recorded phases of 000 §3.1.

::

    intent saved ─► before-hooks (each decision + change set + cursor committed)
       │ deny ─────────────────────────────► denied_before_execution (no Attempt)
       │ ask ─► awaiting_approval ─► ApprovalPending; issued again: by the answer
       │        (``pipeline.approval``) ─► denied_before_execution, or on ▼
       ▼
    final checks (catalog version, schema, deadline, stop) ─► frozen request
       ▼
    attempt started ─► handler.invoke_once ─► raw saved ─► after-hooks
       │     └ context.checkpoint(handle) ─► handle committed on the operation row
       ▼                                                  │ deny ─► denied_after_execution
    effective result + context + delivery record saved ─► waiter gets the envelope

Resumed at ``attempt_started`` (the runtime stopped during the Attempt): a recoverable
handler (a delegation) is run again, replaying its calls; a re-runnable one (a model
generation) gets a new Attempt; a resumable one (``ResumableHandler``: a remote A2A task)
whose handle of this Attempt was committed is given it back (``resume_once``: the same
Attempt, the remote call followed, never sent again); anything else is ``unknown``.

Commits are merged where nothing can happen in between: with no before-hooks the
intent and the Attempt start share one commit; with no after-hooks the raw and
the effective result share one. A durable call without hooks costs two commits; a
re-runnable one (a model generation) without hooks costs one, or none of its own when its
caller asks for it (``Request.defer_commit``): see ``pipeline.commits``.

Owns: the phases of one call and its working state. Does not own: what calls share — the
store, commit path, hooks, context manager and observer (``pipeline.invocation``) — nor the
steps of a hook chain (``pipeline.chain``) or of one Attempt (``pipeline.attempt``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec
from agentloom.context.manager import call_record_id
from agentloom.errors import CatalogError, OperationError, RevisionConflict
from agentloom.hooks.manager import EndedBy
from agentloom.hooks.spec import HookSpec
from agentloom.pipeline import approval, crashpoints
from agentloom.pipeline.attempt import run_attempt, sleep_unless_cancelled
from agentloom.pipeline.chain import HookChain
from agentloom.pipeline.context import Request
from agentloom.pipeline.ports import CapabilityHandler, ResumableHandler, as_resumable
from agentloom.pipeline.records import OperationState, attempt_row, hook_row
from agentloom.results import SIDE_EFFECTS_NOT_ROLLED_BACK, OperationResult, Outcome, ToolResult
from agentloom.store.ports import Op

if TYPE_CHECKING:
    from agentloom.pipeline.invocation import InvocationPipeline


class Call:
    """One logical call: its request, handler, capability and working state, and its phases
    as methods. Made by ``InvocationPipeline`` for one ``invoke`` or ``resume``."""

    __slots__ = ("handler", "pipeline", "request", "spec", "state")

    def __init__(self, pipeline: InvocationPipeline, request: Request, handler: CapabilityHandler,
                 *, state: OperationState, spec: CapabilitySpec | None) -> None:
        self.pipeline = pipeline
        self.request = request
        self.handler = handler
        self.state = state
        self.spec = spec  # None only for a call refused before it resolved (``refuse``)

    @property
    def capability(self) -> CapabilitySpec:
        """The resolved capability (every call past ``refuse`` has one)."""
        assert self.spec is not None
        return self.spec

    # -- entry points ----------------------------------------------------------------------
    async def run(self) -> OperationResult:
        """Take a new call through every phase, committing each before the next begins."""
        state, request = self.state, self.request
        ctx = request.context
        hooks = self.pipeline.hooks.chain(
            "before", request.event_type, capability=state.capability_key,
            role=ctx.role, purpose=request.purpose, node=_node_name(state.request),
        )
        state.chain["before"] = [h.hook_id for h in hooks]
        if request.ask is not None:  # the caller asks a person before it runs (a workflow wait)
            state.asks.append({"hook_id": "caller", "question": request.ask})
        ops = self.call_record_ops(source="model")
        if hooks:
            before = HookChain(self, "before", hooks)
            state.phase = "hooks_before"
            state.cursor = {"timing": "before", "position": 0}
            ops.append(before.started(0))
            try:
                await self.commit([state.row(new=True), *ops])
            except RevisionConflict:
                return await self.pipeline.lost_race(self.request, self.handler)
            crashpoints.reached("intent_saved")
            self.pipeline.observe("operation.started", state)
            denied = await before.run()
            if denied is not None:
                return denied
            if state.phase == "awaiting_approval":
                raise approval.pending(self)
            ops = []
        elif state.asks:  # no hooks, and the caller asks: the wait is the intent's commit
            waits = approval.awaiting_ops(self)
            try:
                await self.commit([state.row(new=True), *ops, *waits])
            except RevisionConflict:
                return await self.pipeline.lost_race(self.request, self.handler)
            crashpoints.reached("intent_saved")
            self.pipeline.observe("operation.started", state)
            raise approval.pending(self)
        return await self.execute(ops)

    async def resume(self) -> OperationResult:
        """Finish an operation from its last committed phase; never re-execute after an Attempt."""
        state = self.state
        if state.phase in ("intent_saved", "hooks_before"):
            denied = await HookChain.recorded(self, "before").resume()
            if denied is not None:
                return denied
            if state.asks:  # the wait is committed with the chain's last decision
                raise approval.pending(self)
            return await self.execute([])
        if state.phase == "awaiting_approval":
            return await approval.answered(self)
        if state.phase == "attempt_started":
            if self.handler.recoverable:
                # A recoverable handler (a delegation) is itself made of durable calls: running
                # it again replays what it committed and continues; it creates no new Attempt.
                raw = await self._attempt(state.attempts, dict(state.payload))
                return await self.after_attempt(raw, state.attempts)
            resumable = as_resumable(self.handler)
            handle = state.handle
            if (resumable is not None and handle is not None
                    and handle.get("attempt") == state.attempts):
                # the remote call was made and its handle committed: follow it (same Attempt)
                raw = await self._attempt(state.attempts, dict(state.payload),
                                          resume=(resumable, handle["data"]))
                return await self.after_attempt(raw, state.attempts)
            if self.handler.rerunnable:
                # the lost Attempt of a re-runnable call had no side effect: a new Attempt
                await self.commit([attempt_row(state.operation_id, state.attempts,
                                               "lost", {}, finished=True)])
                return await self.execute([])
            return await self._attempt_lost()
        if state.phase in ("raw_saved", "hooks_after"):
            assert state.raw is not None
            denied = await HookChain.recorded(self, "after").resume()
            if denied is not None:
                return denied
            return await self._deliver([])
        raise RuntimeError(f"operation {state.operation_id} is in unknown phase {state.phase!r}")

    async def refuse(self, error: OperationError) -> OperationResult:
        """Record a call that cannot even be resolved as ``failed`` with ``error``: no hook
        runs, no Attempt is made; a replay returns the stored envelope."""
        return await self.finish("failed", None, error=error, pending=[])

    # -- phases ------------------------------------------------------------------------------
    async def execute(self, pending: list[Op]) -> OperationResult:
        """Final checks, then Attempts until one is not retried (``pending`` rides along)."""
        state, ctx = self.state, self.request.context
        refusal = self._final_checks()
        if refusal is not None:
            outcome, error = refusal
            return await self.finish(outcome, None, error=error, pending=pending)
        while True:
            state.attempts += 1
            attempt_no = state.attempts
            state.phase = "attempt_started"
            state.cursor = None
            state.handle = None  # a handle belongs to one Attempt
            frozen = dict(state.payload)
            # the first commit of the call, unless a before-hook or a wait for a person
            # committed it already
            first = bool(pending) or (attempt_no == 1 and not state.chain["before"]
                                      and not state.asks)
            started = attempt_row(state.operation_id, attempt_no, "started", {}, finished=False)
            if first and not pending and self.handler.rerunnable:
                # A re-runnable call (a model generation: no external side effect) with no
                # before-hook: its intent and Attempt start are committed with its result. A
                # crash in between leaves nothing, and the caller issues the call again.
                state.unsaved, state.deferred = True, [started]
            else:
                try:
                    await self.commit([*pending, state.row(new=first), started])
                except RevisionConflict:
                    if not first:
                        raise
                    return await self.pipeline.lost_race(self.request, self.handler)
            pending = []
            if first:
                crashpoints.reached("intent_saved")
                self.pipeline.observe("operation.started", state)
            crashpoints.reached("attempt_started")
            raw = await self._attempt(attempt_no, frozen)
            crashpoints.reached("effect_done")
            wait = None
            if raw.error is not None and raw.status != "succeeded":
                wait = ctx.retry.next_wait(
                    raw.error, attempt_no=attempt_no, now=time.time(), deadline=ctx.deadline
                )
            if wait is None or ctx.cancel.is_set:
                break
            await self.commit(
                [state.row(), attempt_row(state.operation_id, attempt_no, "failed",
                                          {"raw": raw.to_dict(), "retry_wait_s": wait},
                                          finished=True)],
            )
            await sleep_unless_cancelled(wait, ctx.cancel)
        return await self.after_attempt(raw, attempt_no)

    async def after_attempt(self, raw: ToolResult, attempt_no: int) -> OperationResult:
        """Save the raw result, run the after-hooks, deliver."""
        state, request = self.state, self.request
        state.raw = raw.to_dict()
        raw_row = attempt_row(state.operation_id, attempt_no, raw.status,
                              state.encoded({"raw": state.raw}), finished=True)
        hooks = self.pipeline.hooks.chain(
            "after", request.event_type, capability=state.capability_key,
            role=request.context.role, purpose=request.purpose, status=raw.status,
            node=_node_name(state.request),
        )
        state.chain["after"] = [h.hook_id for h in hooks]
        if hooks:
            after = HookChain(self, "after", hooks)
            state.phase = "hooks_after"
            state.cursor = {"timing": "after", "position": 0}
            await self.commit([state.row(), raw_row, after.started(0)])
            crashpoints.reached("raw_saved")
            denied = await after.run()
            if denied is not None:
                return denied
            return await self._deliver([])
        return await self._deliver([raw_row], raw_merged=True, raw_obj=raw)

    async def deny(self, hook: HookSpec, position: int, timing: str, record: dict[str, Any], *,
                   status: str = "succeeded") -> OperationResult:
        """Hook ``position`` of ``timing`` denied the call: record it and end the call."""
        reason = record.get("reason") or f"denied by hook {hook.hook_id}"
        record["cursor"] = None
        ops: list[Op] = [hook_row(self.state.operation_id, timing, position,
                                  hook_id=hook.hook_id, status=status, data=record,
                                  decision="deny")]
        self.state.cursor = None
        outcome: Outcome = ("denied_before_execution" if timing == "before"
                            else "denied_after_execution")
        return await self.finish(outcome, None, reason=reason, pending=ops,
                                 crash_after="hook_committed")

    async def stopped(self, hook: HookSpec, position: int, timing: str,
                      record: dict[str, Any], *, by: EndedBy = "stop") -> OperationResult:
        """The run was stopped (``by`` ``stop``) or reached its deadline (``run_deadline``)
        while ``hook`` ran, or before it could: the hook is recorded ``abandoned`` and the call
        ends ``cancelled`` (``RUN_STOPPED``) or ``failed`` (``RUN_DEADLINE_EXCEEDED``; ``unknown``
        when the raw result's effect is unknown), as an Attempt would (000 §3.3, §5.5) — before
        execution nothing ran; after it, the raw result is kept and no effective result is
        saved."""
        state = self.state
        stop = self.request.context.cancel.reason
        record["cursor"] = None
        ops: list[Op] = [hook_row(state.operation_id, timing, position, hook_id=hook.hook_id,
                                  status="abandoned", data=record)]
        state.cursor = None
        if by == "run_deadline":
            error = self._out_of_time(timing)
            # after an Attempt the deadline cut short (its raw result ``unknown``), still unknown
            outcome: Outcome = "unknown" if error.external_outcome == "unknown" else "failed"
            return await self.finish(outcome, None, error=error, pending=ops,
                                     crash_after="hook_committed")
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
        return await self.finish("cancelled", None, error=error, pending=ops,
                                 crash_after="hook_committed")

    def _out_of_time(self, timing: str) -> OperationError:
        """The error of a call whose hook wait the run deadline ended (000 §3.3)."""
        if timing == "before":
            return OperationError(
                code="RUN_DEADLINE_EXCEEDED", category="timeout", phase="hooks",
                message="the run deadline passed while the call's before-hooks ran; "
                "the call did not run", external_outcome="not_started")
        raw_error = (self.state.raw or {}).get("error")
        return OperationError(
            code="RUN_DEADLINE_EXCEEDED", category="timeout", phase="deliver",
            message="the run deadline passed while the call's after-hooks ran; "
            "it had run, and its result was not delivered",
            external_outcome=raw_error["external_outcome"] if raw_error else "known")

    async def finish(
        self, outcome: Outcome, result: ToolResult | None, *,
        error: OperationError | None = None, reason: str | None = None, pending: list[Op],
        raw_merged: bool = False, crash_after: str | None = None,
    ) -> OperationResult:
        """Commit the terminal state, the effective result, its context record and the
        delivery record together; only then is the waiter given the envelope."""
        state, request, pipeline = self.state, self.request, self.pipeline
        ctx = request.context
        if outcome == "denied_after_execution":
            reason = f"{reason} ({SIDE_EFFECTS_NOT_ROLLED_BACK})"
        state.phase = "delivered"
        state.cursor = None
        state.envelope = {"outcome": outcome, "error": error.to_dict() if error else None,
                          "reason": reason}
        envelope = state.envelope_result(live_result=result)
        delivered = result if outcome == "succeeded" else None
        stored = pipeline.context.result_ops(
            scope_id=ctx.context_scope, run_id=state.run_id, role=ctx.role,
            operation_id=state.operation_id, capability=state.capability_key,
            outcome=outcome, result=delivered,
            summary="" if delivered is not None else envelope.describe(),
            stored=None if delivered is None
            else state.stored_effective(pipeline.context.preview_limit),
            text=None if delivered is None else state.text_of(delivered),
        )
        if stored.result_ref is not None:  # the transcript may name it: it reads
            state.envelope["result_ref"] = stored.result_ref
            envelope = replace(envelope, result_ref=stored.result_ref)
        ops = [*pending, state.row(), *stored.ops]
        commits = pipeline.commits
        if (request.defer_commit and state.unsaved and outcome == "succeeded"
                and ctx.invocation_id is not None):
            # The whole call is in ``ops`` and nothing durable depends on it yet: carry it
            # into the invocation's next commit (or ``flush``) instead of paying a commit.
            commits.carry(ctx, [*state.deferred, *ops])
            state.unsaved, state.deferred = False, []
            commits.remember(state, ctx)
        else:
            # the terminal record of what has happened: complete and visible now, on the disk
            # with the next synced commit — the next intent, before anything else leaves the
            # process (WriteSet.sync); a power loss in between leaves the call ``unknown``
            await commits.commit(ctx, ops, state=state, sync=False)
            commits.remember(state, ctx)
            if crash_after:
                crashpoints.reached(crash_after)
            if raw_merged:
                crashpoints.reached("raw_saved")
            crashpoints.reached("effective_saved")
        pipeline.observe("operation.completed", state)
        crashpoints.reached("delivered")
        return envelope

    # -- steps -------------------------------------------------------------------------------
    async def commit(self, ops: list[Op]) -> None:
        """Commit ``ops`` as one write set, after the rows this call deferred (if any)."""
        await self.pipeline.commits.commit(self.request.context, ops, state=self.state)

    def call_record_ops(self, *, source: str) -> list[Op]:
        """The next revision of the call's context record (the arguments as they now stand),
        or nothing when the call has no context scope."""
        state, scope = self.state, self.request.context.context_scope
        if scope is None:
            return []
        state.call_revision += 1
        return [
            self.pipeline.context.record_op(
                scope_id=scope, run_id=state.run_id, record_id=call_record_id(state.operation_id),
                revision=state.call_revision, kind="tool_call",
                position=f"{state.operation_id}:0",
                data={
                    "operation_id": state.operation_id,
                    "capability": state.capability_key,
                    "arguments": state.payload,
                    "proposed_arguments": state.request["proposed_arguments"],
                    "source": source,
                },
            )
        ]

    async def _attempt(
        self, attempt_no: int, frozen: dict[str, Any], *,
        resume: tuple[ResumableHandler, Mapping[str, Any]] | None = None,
    ) -> ToolResult:
        ctx, spec = self.request.context, self.capability
        operation_id = self.state.operation_id
        attempt = run_attempt(
            self.handler if resume is None else _Resumed(*resume),
            CapabilityRequest(operation_id=operation_id,
                              resource_version_id=spec.resource_version_id,
                              capability_key=spec.capability_key, arguments=frozen),
            AttemptContext(operation_id=operation_id, attempt_no=attempt_no,
                           run_id=ctx.run_id, role=ctx.role, deadline=ctx.deadline,
                           cancel=ctx.cancel, workspace_scope_id=ctx.workspace_scope_id,
                           lease_epoch=ctx.lease_epoch, node=ctx.node,
                           checkpoint_to=self._checkpoint_to(attempt_no),
                           observer=self.pipeline.observer),
        )
        tracer = self.pipeline.tracer
        return await (attempt if tracer is None else tracer.attempt(self.state, attempt_no, attempt))

    def _checkpoint_to(self, attempt_no: int) -> Callable[[Mapping[str, Any]], Awaitable[None]]:
        """What ``AttemptContext.checkpoint`` calls: commit the handle of Attempt
        ``attempt_no`` on the operation row (still ``attempt_started``).

        Not synced (``WriteSet.sync``): it is visible at once and survives the process, and
        reaches the disk with the next synced commit. A power loss before then loses only the
        handle, and the call is then ``unknown`` — never sent again — as if it had none."""
        state = self.state

        async def checkpoint(handle: Mapping[str, Any]) -> None:
            crashpoints.reached("handle_received")
            state.handle = {"attempt": attempt_no, "data": dict(handle)}
            await self.pipeline.commits.commit(self.request.context, [state.row()],
                                               state=state, sync=False)
            crashpoints.reached("handle_saved")

        return checkpoint

    def _final_checks(self) -> tuple[Outcome, OperationError] | None:
        ctx, spec = self.request.context, self.capability
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
            validator = self.pipeline.registry.validator(ctx.catalog, spec.capability_key)
        except CatalogError as exc:
            return "failed", exc.error
        if self.request.prevalidated and self.state.payload_version == 0:
            return None  # the sender's part-by-part check stands for the unchanged payload
        errors = validator.errors(self.state.payload)
        if errors:
            return "failed", OperationError(
                code="INVALID_ARGUMENTS", category="validation", phase="validate",
                message=f"arguments for {spec.exposed_name} do not match its schema: "
                + "; ".join(errors[:5]),
                external_outcome="not_started",
            )
        return None

    async def _deliver(self, pending: list[Op], *, raw_merged: bool = False,
                       raw_obj: ToolResult | None = None) -> OperationResult:
        state = self.state
        assert state.raw is not None
        if state.result is None and raw_obj is not None:
            result = raw_obj
        else:
            result = ToolResult.from_dict(state.result if state.result is not None else state.raw)
        outcome: Outcome = result.status
        if result.error is not None and result.error.category == "cancelled":
            outcome = "cancelled"
        return await self.finish(outcome, result, error=result.error, pending=pending,
                                 raw_merged=raw_merged)

    async def _attempt_lost(self) -> OperationResult:
        """An Attempt started and no raw result was saved: its outcome is unknown; never re-run."""
        state = self.state
        error = OperationError(
            code="ATTEMPT_OUTCOME_UNKNOWN", category="unknown",
            message="the runtime stopped while this call was running; it may or may not have "
            "taken effect and was not run again", external_outcome="unknown",
        )
        lost = ToolResult.unknown(error)
        state.raw = lost.to_dict()
        ops: list[Op] = [attempt_row(state.operation_id, state.attempts, "lost",
                                     {"raw": state.raw}, finished=True)]
        return await self.finish("unknown", lost, error=error, pending=ops)


class _Resumed:
    """A resumable handler seen by ``run_attempt`` as one whose ``invoke_once`` follows the
    interrupted Attempt from its committed ``handle`` (``resume_once``)."""

    __slots__ = ("handle", "handler")
    rerunnable = False
    recoverable = False

    def __init__(self, handler: ResumableHandler, handle: Mapping[str, Any]) -> None:
        self.handler = handler
        self.handle = handle

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        return await self.handler.resume_once(request, context, self.handle)


def _node_name(request: dict[str, Any]) -> str | None:
    """The name of the workflow node a call serves (its request's ``node``), or ``None``."""
    node = request.get("node")
    return str(node["name"]) if isinstance(node, dict) else None
