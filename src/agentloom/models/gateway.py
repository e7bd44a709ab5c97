"""The model gateway: one model call = one request on the bus, through the pipeline (000 §3, §4).

::

    ModelGateway.generate(request, context, model="main", purpose=…)
        │  payload = encode_request(request)       (models.codec: stored, hook-patchable JSON)
        ▼
    bus.request("model_<name>", payload, event_type="model", purpose=…)
        │  intent → before-hooks (event: model) → frozen payload
        ▼
    ModelHandler.invoke_once (models/manager.py) — ONE Attempt: stream → clocks → Aggregator
        │  the typed request (``sent_request``; decoded only when a hook changed the payload)
        │  → the adapter builds the provider's wire body from it
        │  success: ToolResult(JsonBlock(response_to_dict(response))) + the typed response
        │  failure: ToolResult(failed, e.error, metadata["incomplete"]); the pipeline retries
        ▼           transport / rate_limit with a *new* Attempt and a fresh Aggregator
    after-hooks → effective result saved → envelope
        ▼
    the typed response (decoded only when an after-hook changed it, or the call was
    recovered from the store) + check_response  →  ModelResponse   (else ``ModelCallFailed``)
        ▼  each call that cannot run (not offered, arguments not an object) gets its
           ``problem`` (``models.calls.mark_calls``): the response is still delivered

The typed request and response pass between ``generate`` and the handler beside the bus, in
a context variable of the calling task (``sent_request`` / ``hand_back``): the pipeline
between them handles JSON only, and the JSON forms (``models.codec``, re-exported here) are
what it stores and what hooks patch.

Owns: the caller-facing ``generate``, the typed hand-off to the handler and the ``model.*``
observations (one ``model.started`` and one ``model.completed`` / ``model.failed`` per call,
never per token; they carry ids, outcome, finish reason and usage — never text). Does not
own: the JSON forms (``models.codec``), adapters and presets, retries, hooks and persistence
(the pipeline), the handlers and the ownership of ``event_type="model"``
(``models/manager.py``).

Deltas (``watch_deltas``): where a task watches, each Attempt's text and reasoning pieces
are told to its observer as the provider sends them (``OutputPiece``: role, capability,
operation, Attempt number), beside the pipeline — never recorded, never seen by hooks (000
§4: token fragments are not events). The observer is called synchronously from the stream
and must not block; one that raises is logged once and told nothing more of that Attempt, and
the call goes on: what is recorded is always the complete, validated response.

Model calls are sent with the caller's ``context_scope`` cleared: the pipeline records a
call's payload and result as ``tool_call`` / ``tool_result`` context records, which for a
model call would copy the whole history into the context on every turn. They carry a
``message_scope`` instead (``message_scope``): where a before-hook's lasting edits of the
request's messages are recorded, by each message's stable id (000 §5.3, ``hooks.fields``). The operation, its
Attempts, the raw and the effective response are stored as for any other call.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from agentloom.catalog import CapabilitySpec
from agentloom.errors import AgentLoomError, OperationError
from agentloom.models.calls import MODEL_RESPONSE_INVALID, check_response, mark_calls
from agentloom.models.codec import (  # the JSON forms are re-exported (see __all__)
    encode_request,
    message_to_dict,
    payload_to_request,
    request_to_payload,
    response_from_dict,
    response_to_dict,
    tool_to_dict,
    usage_to_dict,
)
from agentloom.models.ports import AttemptInfo, DeltaKind, DeltaObserver, OutputPiece
from agentloom.models.types import ModelRequest, ModelResponse, ProviderEvent, ReasoningDelta, TextDelta
from agentloom.results import JsonBlock, OperationResult

if TYPE_CHECKING:
    from agentloom.models.manager import ModelManager

__all__ = [
    "MODEL_EVENT",
    "CallerContext",
    "ModelCallFailed",
    "ModelGateway",
    "RequestBus",
    "check_response",
    "delta_feed",
    "hand_back",
    "is_model_capability",
    "message_to_dict",
    "model_exposed_name",
    "model_key",
    "payload_to_request",
    "request_to_payload",
    "response_from_dict",
    "response_to_dict",
    "sent_request",
    "tool_to_dict",
    "watch_deltas",
]

log = logging.getLogger(__name__)

MODEL_EVENT = "model"
MODEL_REQUEST_INVALID = "MODEL_REQUEST_INVALID"
MODEL_CALL_DENIED = "MODEL_CALL_DENIED"


# -- names ---------------------------------------------------------------


def message_scope(context_scope: str, context: Any) -> str:
    """The scope of an invocation's message records: its role's context scope and its
    invocation id (two invocations of one role keep their messages apart)."""
    invocation = getattr(context, "invocation_id", None)
    return f"{context_scope}/messages/{invocation}" if invocation else f"{context_scope}/messages"


def model_key(name: str) -> str:
    """The capability key of model connection ``name`` (``model.<name>``)."""
    return f"model.{name}"


def model_exposed_name(name: str) -> str:
    """The catalog (model-facing) name of model connection ``name`` (``model_<name>``)."""
    return f"model_{name}"


def is_model_capability(spec: CapabilitySpec) -> bool:
    """Whether ``spec`` is a model connection (never offered to a model as a tool)."""
    return spec.handler_ref.startswith("model:")


# -- the hand-off between the gateway and the handler -------------------------------------


@dataclass(slots=True, eq=False)
class _Sending:
    """The model call this task is making: the typed request, the payload encoded from it and,
    once the handler's Attempt succeeded, its raw result and the typed response."""

    request: ModelRequest
    payload: dict[str, Any]
    received: tuple[dict[str, Any], ModelResponse] | None = None
    watch: OutputPiece | None = None  # the call's piece template, when a task watches deltas
    observer: DeltaObserver | None = None


_sending: ContextVar[_Sending | None] = ContextVar("agentloom_model_sending", default=None)
_watcher: ContextVar[DeltaObserver | None] = ContextVar("agentloom_model_deltas", default=None)


def watch_deltas(observer: DeltaObserver | None) -> None:
    """Tell ``observer`` the text and reasoning pieces of every model call this task (and the
    tasks it starts from now on) makes, as they arrive (``None``: stop). Set it inside the
    task whose calls are watched, e.g. at the top of a run's task."""
    _watcher.set(observer)


def delta_feed(attempt: AttemptInfo) -> Callable[[ProviderEvent], None] | None:
    """What one Attempt of the call this task is sending hands each provider event to, so that
    its text and reasoning reach the watching observer; ``None`` when nobody watches.

    The feed never raises: an observer that fails is logged once and dropped for the rest of
    the Attempt, and the Attempt goes on unchanged."""
    sending = _sending.get()
    if sending is None or sending.observer is None or sending.watch is None:
        return None
    observer: DeltaObserver | None = sending.observer
    base = dataclasses.replace(sending.watch, operation_id=attempt.operation_id,
                               attempt=attempt.attempt_no)

    def feed(event: ProviderEvent) -> None:
        nonlocal observer
        if observer is None:
            return
        what: DeltaKind
        if isinstance(event, TextDelta):
            text, what = event.text, "text"
        elif isinstance(event, ReasoningDelta):
            text, what = event.text, "reasoning"
        else:
            return
        if not text:
            return
        try:
            observer(dataclasses.replace(base, kind=what, text=text))
        except Exception:  # an observation never changes the call
            log.warning("a model delta observer failed; it gets no more pieces of this "
                        "Attempt", exc_info=True)
            observer = None

    return feed


def sent_request(arguments: Mapping[str, Any]) -> ModelRequest | None:
    """The typed request the gateway is sending in this task, when ``arguments`` (the frozen
    payload a handler is handed) are still exactly its payload: no before-hook changed them.
    ``None`` otherwise (a patched payload, a stored call recovered): decode the arguments.

    Unchanged, the pipeline's frozen payload holds the very objects the gateway encoded, so the
    comparison costs one identity check per key."""
    sending = _sending.get()
    if sending is None or sending.payload != arguments:
        return None
    return sending.request


def hand_back(raw: dict[str, Any], response: ModelResponse) -> None:
    """Give the gateway sending in this task the typed ``response`` of its Attempt along with
    ``raw``, its JSON form in the call's result: the gateway decodes the effective result only
    when it is not ``raw`` (an after-hook changed it)."""
    sending = _sending.get()
    if sending is not None:
        sending.received = (raw, response)


# -- the caller-facing gateway -------------------------------------------------------------------


class RequestBus(Protocol):
    """What the gateway needs of the event bus (``bus.EventBus`` implements it)."""

    async def request(
        self,
        name: str,
        arguments: Mapping[str, Any],
        context: Any,
        *,
        event_type: str = ...,
        logical_key: str | None = ...,
        purpose: str | None = ...,
        prevalidated: bool = ...,
        defer_commit: bool = ...,
    ) -> OperationResult: ...

    def notify(self, kind: str, payload: dict[str, Any]) -> None: ...


class CallerContext(Protocol):
    """The trusted invocation context of a call (``pipeline.context.InvocationContext``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def role(self) -> str | None: ...

    @property
    def context_scope(self) -> str | None: ...


class ModelCallFailed(AgentLoomError):
    """A model call that did not deliver a response: failed, unknown, denied or cancelled.

    ``envelope`` is the call's terminal ``OperationResult``; ``outcome`` its outcome;
    ``incomplete`` what the last Attempt had received before it failed (evidence, never a
    response).
    """

    default_code = "MODEL_CALL_FAILED"

    def __init__(self, envelope: OperationResult, *, error: OperationError | None = None) -> None:
        if error is None:
            error = envelope.error or OperationError(
                code=MODEL_CALL_DENIED, category="permission", phase="hooks",
                message=envelope.describe(),
                external_outcome="not_started" if envelope.outcome == "denied_before_execution"
                else "known")
        super().__init__(f"model call {envelope.capability} {envelope.outcome}: {error.message}",
                         code=error.code, category=error.category, phase=error.phase,
                         external_outcome=error.external_outcome)
        self.error = error
        self.envelope = envelope
        self.outcome = envelope.outcome

    @property
    def incomplete(self) -> dict[str, Any] | None:
        raw = self.envelope.raw
        found = raw.metadata.get("incomplete") if raw is not None else None
        return cast(dict[str, Any], found) if isinstance(found, dict) else None


class ModelGateway:
    """``generate``: send one ``ModelRequest`` through the bus and wait for its complete,
    post-processed, stored response (000 §4)."""

    def __init__(self, bus: RequestBus, manager: ModelManager | None = None) -> None:
        self._bus = bus
        self._manager = manager
        # The last caller context and its copy without a context scope (contexts are frozen;
        # an agent makes its model calls with one context).
        self._unscoped: tuple[CallerContext, CallerContext] | None = None

    async def generate(
        self,
        request: ModelRequest,
        context: CallerContext,
        *,
        model: str = "main",
        purpose: str | None = None,
        logical_key: str | None = None,
        defer_commit: bool = False,
    ) -> ModelResponse:
        """The complete response of model connection ``model`` to ``request``.

        ``purpose`` (default ``request.purpose``) is what hook matchers see, e.g.
        ``compaction``; ``logical_key`` names the call within the run, so the same key
        returns the stored call instead of calling the model again. ``defer_commit``
        lets a hook-free call's record ride on the invocation's next commit; the caller
        then owes ``EventBus.flush`` when its invocation ends.

        Raises:
            ModelCallFailed: the call failed, its outcome is unknown, a hook denied it, the
                run was stopped, or the effective response does not validate.
        """
        purpose = purpose if purpose is not None else request.purpose
        scope = context.context_scope
        if scope is not None:
            last = self._unscoped
            if last is not None and last[0] is context:
                context = last[1]
            else:
                unscoped = cast(CallerContext, dataclasses.replace(
                    cast(Any, context), context_scope=None,
                    message_scope=message_scope(scope, context)))
                self._unscoped, context = (context, unscoped), unscoped
        observed: dict[str, Any] = {
            "run_id": context.run_id, "role": context.role, "capability": model_key(model),
            "purpose": purpose,
        }
        self._bus.notify("model.started", observed)
        payload, checked = encode_request(request)
        sending = _Sending(request, payload)
        watcher = _watcher.get()
        if watcher is not None:
            sending.observer = watcher
            sending.watch = OutputPiece(kind="text", text="", role=context.role,
                                        capability=model_key(model), purpose=purpose)
        token = _sending.set(sending)
        try:
            envelope = await self._bus.request(
                model_exposed_name(model), payload, context, event_type=MODEL_EVENT,
                logical_key=logical_key, purpose=purpose, prevalidated=checked,
                defer_commit=defer_commit)
        finally:
            _sending.reset(token)
        observed.update(operation_id=envelope.operation_id, outcome=envelope.outcome,
                        attempts=envelope.attempts)
        try:
            response = self._effective(envelope, sending)
        except ModelCallFailed as exc:
            self._bus.notify("model.failed", {**observed, "error_code": exc.error.code})
            raise
        self._bus.notify("model.completed", {
            **observed, "finish_reason": response.finish_reason,
            "tool_calls": len(response.tool_calls),
            "usage": usage_to_dict(response.usage)})
        return response

    def _effective(self, envelope: OperationResult, sending: _Sending) -> ModelResponse:
        result = envelope.result
        if envelope.outcome != "succeeded" or result is None:
            raise ModelCallFailed(envelope)
        problem: str | None
        try:
            (block,) = result.content
            if not isinstance(block, JsonBlock):
                raise ValueError("the result is not one JSON block")
            received = sending.received
            # the handler's own response, unless an after-hook changed it (or it was stored)
            response = received[1] if received is not None and received[0] == block.data \
                else response_from_dict(block.data)
            problem = check_response(response)
            if problem is None and response.tool_calls:
                executed = envelope.executed_arguments or {}
                # The tools the model was offered: those of ``request`` unless a before-hook
                # changed the payload (then parse what was executed; a history is not re-read
                # on every call only to find the tool names).
                offered = sending.request.tools if executed == sending.payload \
                    else payload_to_request(executed).tools
                response = mark_calls(response, offered)
        except ValueError as exc:
            problem = str(exc)
        if problem is not None:
            raise ModelCallFailed(envelope, error=OperationError(
                code=MODEL_RESPONSE_INVALID, category="protocol", phase="deliver",
                message=f"the effective model response is invalid: {problem}",
                external_outcome="known"))
        return response

    async def aclose(self) -> None:
        """Close the provider connections the model handlers opened."""
        if self._manager is not None:
            await self._manager.aclose()
