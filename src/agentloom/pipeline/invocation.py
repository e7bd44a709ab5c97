"""InvocationPipeline: what every call shares, and where each call starts (000 §3.1).

::

    unknown name / stale catalog / refused by its sender ─► failed (no hook, no Attempt)
    known logical key ─► resume the stored call (never run it twice)
    otherwise ─► a new ``Call`` through its phases (``pipeline.call``)

Owns: the collaborators every call shares — store, ``CommitPath`` (the hot path: carried
commits, delta bases, the known-key index; ``pipeline.commits``), capability registry, hook
manager, context manager, observer — and the start of a call: recovery of a known logical
key, refusal of what cannot resolve, the initial working state. Does not own: the phases of
a call (``pipeline.call``), its hook chains (``pipeline.chain``) or one Attempt
(``pipeline.attempt``).
"""

from __future__ import annotations

from typing import Any

from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.context.manager import ContextManager
from agentloom.errors import CatalogError, OperationError, RevisionConflict
from agentloom.hooks.manager import HookManager
from agentloom.pipeline.call import Call
from agentloom.pipeline.commits import CommitPath
from agentloom.pipeline.context import InvocationContext, Request
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.ports import CapabilityHandler, Observer
from agentloom.pipeline.records import OperationState, arguments_delta
from agentloom.results import OperationResult
from agentloom.store.ports import Store
from agentloom.telemetry import CallTracer


class InvocationPipeline:
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
        self.commits = CommitPath(store, coordinator, self.context)
        self.tracer: CallTracer | None = None
        """Spans of this pipeline's calls (``agentloom.telemetry``); ``None``: not traced."""

    # -- entry points ------------------------------------------------------------------
    async def invoke(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        """Run (or, for a known logical key, recover) one logical call to a terminal envelope."""
        self.commits.active += 1
        try:
            return await self._invoke(request, handler)
        finally:
            self.commits.active -= 1

    async def _invoke(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        ctx = request.context
        if request.logical_key != request.operation_id:
            # A caller-named logical call may already exist: recover it, never run it twice.
            # (A key equal to the freshly minted operation id cannot exist yet.)
            existing = self.commits.find(ctx, request.logical_key)
            if existing is not None:
                return await self.resume(existing, request, handler)
        if request.refusal is not None:
            known = ctx.catalog.specs.get(request.exposed_name)
            return await self._refuse(request, handler, request.refusal, known.capability_key
                                      if known is not None else request.exposed_name)
        try:
            spec = self.registry.resolve(ctx.catalog, request.exposed_name)
        except CatalogError as exc:
            return await self._refuse(request, handler, exc.error, request.exposed_name)
        return await Call(self, request, handler, state=self._new_state(request, spec), spec=spec).run()

    async def resume(
        self, state: OperationState, request: Request, handler: CapabilityHandler
    ) -> OperationResult:
        """Finish an operation from its last committed phase; never re-execute after an Attempt."""
        if state.envelope is not None:
            return state.envelope_result()
        spec = request.context.catalog.by_key(state.capability_key)
        return await Call(self, request, handler, state=state, spec=spec).resume()

    async def lost_race(self, request: Request, handler: CapabilityHandler) -> OperationResult:
        """Another caller created this logical call first: wait on theirs, do not run a second."""
        existing = self.commits.find(request.context, request.logical_key, indexed=False)
        if existing is None:
            raise RevisionConflict(
                f"logical call {request.logical_key!r} conflicted but cannot be found"
            )
        return await self.resume(existing, request, handler)

    async def flush(self, ctx: InvocationContext) -> None:
        """Commit what is carried for ``ctx``'s invocation (nothing to do when nothing is).

        Call it when the invocation ends: its last model call has no later commit to ride on.
        """
        await self.commits.flush(ctx)

    # -- the start of a call -----------------------------------------------------------------
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
                "exposed_name": request.exposed_name,
                "resource_version_id": spec.resource_version_id,
                "catalog_version": ctx.catalog.version,
                "role": ctx.role,
                "owner_ref": ctx.owner_ref.to_dict(),
                "workspace_scope_id": ctx.workspace_scope_id,
                "causation_id": request.causation_id,
                "purpose": request.purpose,
                "call_id": request.call_id,
                "context_scope": ctx.context_scope,
                "proposed_arguments": args,
            },
            payload=args,
            hooks_version=self.hooks.version,
        )
        if ctx.message_scope is not None:  # where a model call's message edits are recorded
            state.request["message_scope"] = ctx.message_scope
        if ctx.node is not None:  # the workflow node the call serves (issue 37)
            state.request["node"] = ctx.node.to_dict()
        base = self.commits.delta_base(ctx, spec.capability_key)
        if base is not None:
            base_id, base_args = base
            # e.g. a model call: the history of the previous call plus a few messages
            delta = arguments_delta(base_args, args)
            if delta is not None:
                state.stored_request = {**state.request, "proposed_arguments": None,
                                        "proposed_delta": {"base": base_id, **delta}}
        return state

    async def _refuse(self, request: Request, handler: CapabilityHandler,
                      error: OperationError, capability_key: str) -> OperationResult:
        """Record a call that cannot even be resolved — an unknown name, a stale catalog, a
        refusal its sender made (``Request.refusal``) — as ``failed`` with ``error``: no
        hook runs, no Attempt is made; a replay returns the stored envelope."""
        ctx = request.context
        request_data: dict[str, Any] = {
            "exposed_name": request.exposed_name, "role": ctx.role,
            "proposed_arguments": dict(request.arguments),
            "causation_id": request.causation_id, "purpose": request.purpose,
            "call_id": request.call_id}
        state = OperationState(
            operation_id=request.operation_id, run_id=ctx.run_id,
            logical_key=request.logical_key, capability_key=capability_key,
            event_type=request.event_type, request=request_data,
            payload=dict(request.arguments),
        )
        return await Call(self, request, handler, state=state, spec=None).refuse(error)

    def observe(self, kind: str, state: OperationState) -> None:
        """Tell the tracer and the observer (if any) of ``kind`` (``operation.started`` /
        ``.completed``)."""
        if self.tracer is not None:
            self.tracer.observe(kind, state)
        if self.observer is None:
            return
        payload: dict[str, Any] = {"operation_id": state.operation_id, "run_id": state.run_id,
                                   "capability": state.capability_key}
        if state.envelope is not None:
            payload["outcome"] = state.envelope["outcome"]
        self.observer(kind, payload)
