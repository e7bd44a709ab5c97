"""The spans of a traced runtime (imported only when it traces; see ``agentloom.telemetry``).

The run, each invocation, each Attempt and each hook run are live spans: current while their
work runs, so what that work starts — an Executor's invocation, an HTTP hook's request, an MCP
call — nests under them and carries their context. An operation's span is built from the
pipeline's records: opened at ``operation.started`` (starting at the operation's
``created_at``) in the context of the invocation that issued it, its attributes set from the
delivered envelope and result at ``operation.completed``; a call made for a workflow node
carries it (``agentloom.workflow_run.id``, ``agentloom.node.name``,
``agentloom.node.attempt``). A call finished from a later phase (resumed) or refused before
it resolved is only seen completing: its span is opened and ended then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
)

from agentloom.telemetry.ports import AgentModels, OperationView

__all__ = ["Tracing"]

T = TypeVar("T")

_ERROR_OUTCOMES = frozenset({"failed", "unknown"})
_ERROR_STATUSES = frozenset({"failed", "timed_out"})
_HOOK_FAILURES = frozenset({"failed", "timed_out", "invalid", "indeterminate"})


def _own_version() -> str:
    try:
        return version("agentloom")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


class Tracing:
    """Spans of one runtime on ``provider``; ``owned``: made for this runtime, shut down with it."""

    def __init__(self, provider: Any, *, models: AgentModels, owned: bool = False) -> None:
        self._provider = provider
        self._tracer: trace.Tracer = provider.get_tracer("agentloom", _own_version())
        self._models = {agent: _model_names(model) for agent, model in models.items()}
        self._owned = owned
        self._open: dict[str, tuple[Span, OperationView]] = {}
        self._routes: dict[str, dict[str, tuple[str | None, str | None]]] = {}

    def route(self, run_id: str, models: AgentModels) -> None:
        """Run ``run_id``'s agents talk to these models (its project's route), not the release's."""
        self._routes[run_id] = {agent: _model_names(model) for agent, model in models.items()}

    def unroute(self, run_id: str) -> None:
        self._routes.pop(run_id, None)

    def _model_of(self, run_id: str, agent: str) -> tuple[str | None, str | None]:
        routed = self._routes.get(run_id, {}).get(agent)
        return routed if routed is not None else self._models.get(agent, (None, None))

    # -- the runtime's spans ------------------------------------------------------------------
    async def run(self, run_id: str, *, agent: str, session_id: str | None,
                  work: Awaitable[T], first: Mapping[str, str] | None = None) -> T:
        caller = trace.get_current_span().get_span_context()
        attributes: dict[str, Any] = {"agentloom.run.id": run_id, "gen_ai.agent.name": agent}
        if session_id:
            attributes["gen_ai.conversation.id"] = session_id
        # a run is the root of its own trace, linked to whatever started it (a host request)
        # and, when this drive resumes it, to the span of its first drive
        links = [Link(caller)] if caller.is_valid else []
        earlier = _span_context(first)
        if earlier is not None:
            links.append(Link(earlier, {"agentloom.link": "run.resumed"}))
            attributes["agentloom.run.resumed"] = True
        span = self._tracer.start_span(
            f"agentloom.run {agent}", context=otel_context.Context(), kind=SpanKind.INTERNAL,
            attributes=attributes, links=links or None)
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                result = await work
            status = getattr(result, "status", None)
            span.set_attribute("agentloom.run.status", str(status))
            _error_status(span, status in _ERROR_STATUSES, getattr(result, "error", None))
            return result
        except BaseException as exc:
            span.set_attribute("agentloom.run.status", "interrupted")
            span.set_attribute("error.type", type(exc).__qualname__)
            raise
        finally:
            self._close_left(run_id)
            span.end()

    async def invocation(self, invocation_id: str, *, run_id: str, agent: str,
                         work: Awaitable[T]) -> T:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
            "agentloom.run.id": run_id, "agentloom.invocation.id": invocation_id}
        model, provider = self._model_of(run_id, agent)
        if model:
            attributes["gen_ai.request.model"] = model
        if provider:
            attributes["gen_ai.provider.name"] = provider
        with self._tracer.start_as_current_span(
                f"invoke_agent {agent}", kind=SpanKind.INTERNAL, attributes=attributes,
                record_exception=False, set_status_on_exception=False) as span:
            outcome = await work
            status = getattr(outcome, "status", None)
            span.set_attribute("agentloom.outcome", str(status))
            _error_status(span, status in _ERROR_STATUSES, getattr(outcome, "error", None))
            return outcome

    def current_ids(self) -> dict[str, str] | None:
        found = trace.get_current_span().get_span_context()
        if not found.is_valid:
            return None
        return {"trace_id": format(found.trace_id, "032x"), "span_id": format(found.span_id, "016x")}

    def shutdown(self) -> None:
        if self._owned:
            self._provider.shutdown()

    # -- the pipeline's spans -----------------------------------------------------------------
    def observe(self, kind: str, state: OperationView) -> None:
        if kind == "operation.started":
            self._operation(state)
        elif kind == "operation.completed":
            span = self._operation(state)
            self._open.pop(state.operation_id, None)
            self._complete(span, state)

    async def attempt(self, state: OperationView, attempt_no: int, work: Awaitable[T]) -> T:
        parent = trace.set_span_in_context(self._operation(state))
        with self._tracer.start_as_current_span(
                "agentloom.attempt", context=parent, kind=SpanKind.INTERNAL,
                record_exception=False, set_status_on_exception=False,
                attributes={"agentloom.operation.id": state.operation_id,
                            "agentloom.attempt.number": attempt_no}) as span:
            result = await work
            status = getattr(result, "status", None)
            span.set_attribute("agentloom.attempt.status", str(status))
            _error_status(span, status not in ("succeeded", None), getattr(result, "error", None))
            return result

    async def hook(self, state: OperationView, *, hook_id: str, timing: str, position: int,
                   work: Awaitable[T]) -> T:
        parent = trace.set_span_in_context(self._operation(state))
        with self._tracer.start_as_current_span(
                f"agentloom.hook {hook_id}", context=parent, kind=SpanKind.INTERNAL,
                record_exception=False, set_status_on_exception=False,
                attributes={"agentloom.operation.id": state.operation_id,
                            "agentloom.hook.id": hook_id, "agentloom.hook.timing": timing,
                            "agentloom.hook.position": position}) as span:
            ran = await work
            status = getattr(ran, "status", None)
            decision = getattr(getattr(ran, "decision", None), "decision", None)
            span.set_attribute("agentloom.hook.status", str(status))
            if decision is not None:
                span.set_attribute("agentloom.hook.decision", str(decision))
            if status in _HOOK_FAILURES:
                span.set_status(Status(StatusCode.ERROR, str(getattr(ran, "diagnostic", "")
                                                              or status)))
            return ran

    # -- operation spans ----------------------------------------------------------------------
    def _operation(self, state: OperationView) -> Span:
        """The open span of ``state``'s operation, opened now (in the current context: the
        invocation that issued it) when it has none."""
        held = self._open.get(state.operation_id)
        if held is not None:
            return held[0]
        name, kind, attributes = self._describe(state)
        span = self._tracer.start_span(name, kind=kind, attributes=attributes,
                                       start_time=int(state.created_at * 1e9))
        self._open[state.operation_id] = (span, state)
        return span

    def _describe(self, state: OperationView) -> tuple[str, SpanKind, dict[str, Any]]:
        request = state.request
        attributes: dict[str, Any] = {
            "agentloom.run.id": state.run_id, "agentloom.operation.id": state.operation_id,
            "agentloom.capability": state.capability_key, "agentloom.event_type": state.event_type}
        for key in ("role", "purpose"):
            if request.get(key):
                attributes[f"agentloom.{key}"] = str(request[key])
        node = request.get("node")
        if isinstance(node, Mapping):  # the workflow node the call serves (issue 37)
            attributes["agentloom.workflow_run.id"] = str(node["workflow_run_id"])
            attributes["agentloom.node.name"] = str(node["name"])
            attributes["agentloom.node.attempt"] = int(node["attempt"])
        if state.event_type == "model":
            model, provider = self._model_of(state.run_id,
                                             state.capability_key.removeprefix("model."))
            attributes["gen_ai.operation.name"] = "chat"
            if model:
                attributes["gen_ai.request.model"] = model
            if provider:
                attributes["gen_ai.provider.name"] = provider
            return (f"chat {model}" if model else "chat"), SpanKind.CLIENT, attributes
        if state.event_type in ("tool", "delegation"):
            tool = str(request.get("exposed_name") or state.capability_key)
            attributes["gen_ai.operation.name"] = "execute_tool"
            attributes["gen_ai.tool.name"] = tool
            attributes["gen_ai.tool.type"] = ("extension" if state.capability_key.startswith("mcp.")
                                              else "function")
            if request.get("call_id"):
                attributes["gen_ai.tool.call.id"] = str(request["call_id"])
            return f"execute_tool {tool}", SpanKind.INTERNAL, attributes
        return f"agentloom.operation {state.capability_key}", SpanKind.INTERNAL, attributes

    def _complete(self, span: Span, state: OperationView) -> None:
        envelope = state.envelope or {}
        outcome = envelope.get("outcome")
        error = envelope.get("error") or {}
        span.set_attribute("agentloom.outcome", str(outcome))
        span.set_attribute("agentloom.phase", "delivered")
        span.set_attribute("agentloom.attempts", state.attempts)
        if error.get("code"):
            span.set_attribute("error.type", str(error["code"]))
        if outcome in _ERROR_OUTCOMES:
            span.set_status(Status(StatusCode.ERROR, str(error.get("message") or outcome)))
        if state.event_type == "model":
            _response_attributes(span, state)
        span.end()

    def _close_left(self, run_id: str) -> None:
        """End the spans of ``run_id``'s operations that did not complete in this drive (a
        call waiting for a person), with the phase each reached."""
        for operation_id, (span, state) in list(self._open.items()):
            if state.run_id == run_id:
                del self._open[operation_id]
                span.set_attribute("agentloom.phase", state.phase)
                span.end()


def _span_context(ids: Mapping[str, str] | None) -> SpanContext | None:
    """The span ``current_ids`` gave, as a remote span context (None: none, or not ids)."""
    if not ids:
        return None
    try:
        found = SpanContext(trace_id=int(ids["trace_id"], 16), span_id=int(ids["span_id"], 16),
                            is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    except (KeyError, TypeError, ValueError):
        return None  # a damaged record links nothing
    return found if found.is_valid else None


def _model_names(model: object) -> tuple[str | None, str]:
    """What ``model`` requests and its provider (see ``ports.AgentModels``)."""
    requested = getattr(model, "model", None)
    if hasattr(model, "base_url"):  # a Connection
        return requested, str(getattr(model, "name", None) or "openai")
    return requested, "agentloom"


def _response_attributes(span: Span, state: OperationView) -> None:
    """A model call's response model, id, finish reason and token usage, from its effective
    (else raw) result."""
    result = state.result if state.result is not None else state.raw
    content = (result or {}).get("content") or ()
    data = content[0].get("data") if content and isinstance(content[0], dict) else None
    if not isinstance(data, dict):
        return
    usage = data.get("usage") or {}
    for field, attribute in (("input_tokens", "gen_ai.usage.input_tokens"),
                             ("output_tokens", "gen_ai.usage.output_tokens")):
        if isinstance(usage.get(field), int):
            span.set_attribute(attribute, usage[field])
    if data.get("model"):
        span.set_attribute("gen_ai.response.model", str(data["model"]))
    if data.get("response_id"):
        span.set_attribute("gen_ai.response.id", str(data["response_id"]))
    if data.get("finish_reason"):
        span.set_attribute("gen_ai.response.finish_reasons", [str(data["finish_reason"])])


def _error_status(span: Span, failed: bool, error: Any) -> None:
    code = getattr(error, "code", None)
    if code:
        span.set_attribute("error.type", str(code))
    if failed:
        span.set_status(Status(StatusCode.ERROR, str(getattr(error, "message", "") or "")))
