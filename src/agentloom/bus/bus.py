"""EventBus: routes each request to its one owner through the pipeline, and fans out
observations.

* Request / response: exactly one owner per event type. No owner is an explicit
  routing-error *result* (never a hang); a second owner is a registration error.
* ``request_many``: each item keeps its own identity and status, runs with bounded
  concurrency, and results come back in request order; one denial or failure never
  drops the others. A member that waits for a person (a hook answered ``ask``) does not
  either: the others run to their envelopes, then ``ApprovalPending`` names the waiting
  member(s) and carries the others' envelopes.
* Observations: any number of subscribers; their return values and exceptions never
  change a result.

Identity (operation id), causation, event type and the trusted context are set
here, by the runtime. A handler that asks the bus for its own capability again is
refused (no recursion into the same request chain).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentloom.approvals import ApprovalPending
from agentloom.catalog import CapabilitySpec
from agentloom.errors import AgentLoomError, ErrorCategory, OperationError, RegistrationError
from agentloom.ids import new_id
from agentloom.pipeline.context import InvocationContext, Request
from agentloom.pipeline.invocation import InvocationPipeline
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import OperationResult

log = logging.getLogger("agentloom.bus")

Subscriber = Callable[[str, dict[str, Any]], Any]

_active: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar(
    "agentloom_active_requests", default=()
)
MAX_DEPTH = 8


class RequestOwner(Protocol):
    """The one domain manager that owns an event type and supplies the raw handler."""

    def handler_for(self, spec: CapabilitySpec) -> CapabilityHandler | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestItem:
    """One member of a batch: what the model asked for, with its own logical key.
    ``refusal``: the call cannot run (e.g. a tool that was not offered); it is recorded as
    failed with that error and no Attempt (``Request.refusal``)."""

    name: str
    arguments: Mapping[str, Any]
    event_type: str = "tool"
    logical_key: str | None = None
    purpose: str | None = None
    call_id: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    refusal: OperationError | None = None


class BatchError(AgentLoomError):
    """Raised by ``request_many`` after *every* member settled, when some member hit a
    runtime failure (e.g. a persistence error). ``results`` holds the others."""

    default_code = "BATCH_FAILED"
    default_category: ErrorCategory = "unknown"

    def __init__(self, results: list[OperationResult | None], errors: list[BaseException]):
        super().__init__(f"{len(errors)} batch member(s) failed in the runtime: {errors[0]}")
        self.results = results
        self.errors = errors


class EventBus:
    """Routes each capability request to its one owner through the ``InvocationPipeline`` and
    fans observations out to subscribers (000 §1, §3.2).

    Owns: the owner per event type, the request's identity (operation id, causation, trusted
    context), ``request_many``'s bounded concurrency and ordering, refusing recursion into the
    same request. Does not own: the phases of a call (the pipeline), hooks, or storage."""

    def __init__(self, pipeline: InvocationPipeline) -> None:
        self.pipeline = pipeline
        self._owners: dict[str, RequestOwner] = {}
        self._subscribers: list[Subscriber] = []
        pipeline.observer = self.notify

    # -- registration ------------------------------------------------------------------
    def register_owner(self, event_type: str, owner: RequestOwner) -> None:
        if event_type in self._owners:
            raise RegistrationError(
                f"event type {event_type!r} already has an owner "
                f"({type(self._owners[event_type]).__name__}); one request has exactly one owner"
            )
        self._owners[event_type] = owner

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    # -- observation -------------------------------------------------------------------
    def notify(self, kind: str, payload: dict[str, Any]) -> None:
        """Tell every subscriber; nothing a subscriber returns or raises changes a result."""
        for subscriber in tuple(self._subscribers):
            try:
                outcome = subscriber(kind, dict(payload))
                if asyncio.iscoroutine(outcome):
                    task = asyncio.ensure_future(outcome)
                    task.add_done_callback(_swallow)
            except Exception:
                log.warning("observer %r failed on %s", subscriber, kind, exc_info=True)

    # -- requests ----------------------------------------------------------------------
    async def request(
        self,
        name: str,
        arguments: Mapping[str, Any],
        context: InvocationContext,
        *,
        event_type: str = "tool",
        logical_key: str | None = None,
        purpose: str | None = None,
        call_id: str | None = None,
        prevalidated: bool = False,
        defer_commit: bool = False,
        refusal: OperationError | None = None,
        ask: str | None = None,
    ) -> OperationResult:
        """Send one request and wait for its terminal envelope.

        ``logical_key`` names the call within the run: the same key recovers the same
        operation (same ``operation_id``); no key means a new call with a new identity.
        ``refusal`` records the call as failed with that error, without running it.
        ``ask``: a person is asked this question before the call runs (``Request.ask``).
        """
        operation_id = new_id()
        stack = _active.get()
        request = Request(
            operation_id=operation_id,
            event_type=event_type,
            exposed_name=name,
            arguments=dict(arguments),
            context=context,
            logical_key=logical_key or operation_id,
            causation_id=stack[-1][0] if stack else None,
            purpose=purpose,
            call_id=call_id,
            prevalidated=prevalidated,
            defer_commit=defer_commit,
            refusal=refusal,
            ask=ask,
        )
        if refusal is not None:  # nothing will run: no owner or handler is needed
            return await self.pipeline.invoke(request, _Unresolved())
        owner = self._owners.get(event_type)
        if owner is None:
            return _routing_error(request, "NO_OWNER",
                                  f"no owner is registered for event type {event_type!r}")
        spec = context.catalog.specs.get(name)
        handler = owner.handler_for(spec) if spec is not None else _Unresolved()
        if handler is None:
            return _routing_error(
                request, "NO_HANDLER",
                f"{type(owner).__name__} has no handler for {name!r} "
                f"({spec.handler_ref if spec else '?'})",
            )
        key = spec.capability_key if spec is not None else name
        if any(capability == key for _, capability in stack):
            return _routing_error(
                request, "RECURSIVE_REQUEST",
                f"a handler of {key!r} asked the bus for {key!r} again; refused",
            )
        if len(stack) >= MAX_DEPTH:
            return _routing_error(request, "REQUEST_TOO_DEEP",
                                  f"request chain deeper than {MAX_DEPTH}")
        token = _active.set((*stack, (operation_id, key)))
        try:
            return await self.pipeline.invoke(request, handler)
        finally:
            _active.reset(token)

    async def flush(self, context: InvocationContext) -> None:
        """Commit the calls of ``context``'s invocation still carried (``defer_commit``)."""
        await self.pipeline.flush(context)

    async def request_many(
        self,
        items: Sequence[RequestItem],
        context: InvocationContext,
        *,
        concurrency: int = 4,
    ) -> list[OperationResult]:
        """Run a batch with at most ``concurrency`` members in flight; results in request order.

        Raises:
            BatchError: a member hit a runtime failure (after every member settled).
            ApprovalPending: no member failed so, and some wait for a person: ``calls`` names
                each (in request order), ``results`` holds every member's envelope (None
                for a waiting one).
        """
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        semaphore = asyncio.Semaphore(concurrency)

        async def one(item: RequestItem) -> OperationResult:
            async with semaphore:
                return await self.request(
                    item.name, item.arguments, context, event_type=item.event_type,
                    logical_key=item.logical_key, purpose=item.purpose, call_id=item.call_id,
                    refusal=item.refusal,
                )

        settled = await asyncio.gather(*(one(i) for i in items), return_exceptions=True)
        results: list[OperationResult | None] = []
        errors: list[BaseException] = []
        waiting: list[ApprovalPending] = []
        for outcome in settled:
            if isinstance(outcome, OperationResult):
                results.append(outcome)
                continue
            results.append(None)
            if isinstance(outcome, ApprovalPending):
                waiting.append(outcome)
            else:
                errors.append(outcome)
        if errors:
            for error in errors:
                if not isinstance(error, Exception):
                    raise error
            raise BatchError(results, [*errors, *waiting])
        if waiting:
            raise ApprovalPending([c for w in waiting for c in w.calls], results)
        return [r for r in results if r is not None]


class _Unresolved:
    """Stands in for the handler of an unknown name or a refused call: the pipeline refuses
    it before execution."""

    rerunnable = False
    recoverable = False

    async def invoke_once(self, request: Any, context: Any) -> Any:  # pragma: no cover
        raise AssertionError("an unresolved capability can never execute")


def _routing_error(request: Request, code: str, message: str) -> OperationResult:
    return OperationResult(
        operation_id=request.operation_id,
        capability=request.exposed_name,
        outcome="failed",
        error=OperationError(code=code, category="not_found", message=message,
                             phase="route", external_outcome="not_started"),
        proposed_arguments=dict(request.arguments),
    )


def _swallow(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("async observer failed", exc_info=task.exception())

