"""ModelManager: the one owner of ``event_type="model"`` requests on the bus (000 §1), and the
raw handler of one model connection.

Like ``tools.ToolManager`` for tools, the manager maps a catalog spec's ``handler_ref``
(``model:<name>``) to the ``ModelHandler`` of that connection. It consumes only final,
hook-processed model requests (the pipeline hands the handler the frozen payload); it never
executes a tool a model asked for and records no token delta (an Attempt hands them to a
watching observer: ``gateway.delta_feed``). The low-frequency ``model.*`` observations
are emitted by ``ModelGateway``, once per call.

A model connection's catalog entry (``model_capability``): key ``model.<name>``, exposed name
``model_<name>``, kind ``builtin``, handler ``model:<name>``, input schema
``MODEL_PAYLOAD_SCHEMA`` — the payload before-hooks may patch, closed at the top.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec
from agentloom.errors import AgentLoomError, ConfigError, OperationError, RegistrationError
from agentloom.models.codec import MODEL_PAYLOAD_SCHEMA, payload_to_request, response_to_dict
from agentloom.models.gateway import (
    MODEL_REQUEST_INVALID,
    delta_feed,
    hand_back,
    model_exposed_name,
    model_key,
    sent_request,
)
from agentloom.models.ports import DEFAULT_FINISH_GRACE_S, AttemptInfo, Connection, ModelAdapter
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import JsonBlock, ResultStatus, ToolResult

if TYPE_CHECKING:
    from agentloom.models.aggregate import IncompleteAttempt
    from agentloom.models.errors import ModelAttemptError

# The streaming stack (aggregate, errors, adapters) pulls in the ``openai`` SDK; it is imported
# on the first model call, so ``import agentloom`` stays light for runs without one.

__all__ = ["MODEL_PAYLOAD_SCHEMA", "ModelHandler", "ModelManager", "Route", "Routes",
           "model_capability"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,58}$")


# -- the catalog entry ---------------------------------------------------------------------------


def model_capability(
    name: str, *, resource_version_id: str | None = None, description: str | None = None
) -> CapabilitySpec:
    """The catalog entry of model connection ``name``: key ``model.<name>``, exposed name
    ``model_<name>``, kind ``builtin``, handler ``model:<name>``, the payload schema.

    Raises:
        ConfigError: ``name`` is not 1–58 characters of ``[A-Za-z0-9_-]``.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"model connection name {name!r} must be 1-58 characters of letters, digits, '_' or '-'",
            code="MODEL_NAME_INVALID",
        )
    return CapabilitySpec(
        resource_version_id=resource_version_id or f"model:{name}",
        capability_key=model_key(name),
        kind="builtin",
        exposed_name=model_exposed_name(name),
        description=description or f"model connection {name!r}",
        input_schema=MODEL_PAYLOAD_SCHEMA,
        handler_ref=f"model:{name}",
        schema_origin="config",
    )


# -- the handler of one connection ---------------------------------------------------------------


class Route:
    """A ``Connection`` and the adapter built from it on first use, one per event loop, closed
    by ``aclose``: a handler's own connection, or the one an agent of one run talks to instead
    (a project's model route, ``agent.routes``)."""

    __slots__ = ("_built", "_built_on", "connection")

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._built: ModelAdapter | None = None
        self._built_on: asyncio.AbstractEventLoop | None = None

    def adapter(self) -> ModelAdapter:
        loop = asyncio.get_running_loop()
        if self._built is None or self._built_on is not loop:
            from agentloom.models.adapters import adapter_for

            self._built, self._built_on = adapter_for(self.connection), loop
        return self._built

    async def aclose(self) -> None:
        built, self._built, self._built_on = self._built, None, None
        if built is not None:
            await built.aclose()


Routes = dict[str, dict[str, Route]]
"""Run id -> agent (model connection name) -> the route its calls take."""


class ModelHandler:
    """The raw capability of one model connection: ``invoke_once`` is exactly one Attempt.

    ``source`` is a ``Connection`` (an OpenAI protocol adapter is built from it, one per event
    loop, and closed by ``aclose``) or any ``ModelAdapter`` — e.g. the offline ``TestModel`` /
    ``ScriptModel`` — which the caller keeps owning. ``routes`` (the manager's): a run that has
    a route for this connection's name talks to that route's connection instead.
    """

    #: A generation has no external side effect: an Attempt lost in a crash is issued again
    #: (000 §4), and its intent is committed with its result when no before-hook runs.
    rerunnable = True
    recoverable = False

    def __init__(
        self,
        name: str,
        source: ModelAdapter | Connection,
        *,
        first_output_timeout_s: float = 60.0,
        stream_idle_timeout_s: float | None = None,
        finish_grace_s: float = DEFAULT_FINISH_GRACE_S,
        routes: Routes | None = None,
    ) -> None:
        try:  # validated once here, not on every Attempt
            AttemptInfo(first_output_timeout_s=first_output_timeout_s,
                        stream_idle_timeout_s=stream_idle_timeout_s, finish_grace_s=finish_grace_s)
        except ValueError as exc:
            raise ConfigError(f"model connection {name!r}: {exc}", code="MODEL_TIMEOUT_INVALID") from None
        self.name = name
        self.first_output_timeout_s = first_output_timeout_s
        self.stream_idle_timeout_s = stream_idle_timeout_s
        self.finish_grace_s = finish_grace_s
        self._connection = source if isinstance(source, Connection) else None
        self._given: ModelAdapter | None = None if isinstance(source, Connection) else source
        self._own = Route(source) if isinstance(source, Connection) else None
        self._routes: Routes = {} if routes is None else routes

    def describe(self) -> str:
        if self._connection is not None:
            return (f"model connection {self.name!r}: {self._connection.name or 'openai'} "
                    f"{self._connection.protocol} model {self._connection.model!r}")
        model = getattr(self._given, "model", None)
        return f"model connection {self.name!r}: {type(self._given).__name__} model {model!r}"

    def adapter(self) -> ModelAdapter:
        """The adapter for the running event loop."""
        if self._given is not None:
            return self._given
        assert self._own is not None
        return self._own.adapter()

    async def aclose(self) -> None:
        """Close the adapter this handler built (a given adapter stays the caller's)."""
        if self._own is not None:
            await self._own.aclose()

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        from agentloom.models.aggregate import Aggregator, complete_once
        from agentloom.models.errors import ModelAttemptError

        try:  # typed as the gateway sent it, unless a before-hook changed the payload
            model_request = sent_request(request.arguments) or payload_to_request(request.arguments)
        except ValueError as exc:
            return ToolResult(status="failed", error=OperationError(
                code=MODEL_REQUEST_INVALID, category="validation", phase="validate",
                message=f"the model request payload is invalid: {exc}", external_outcome="not_started"))
        attempt = AttemptInfo.from_context(
            context, first_output_timeout_s=self.first_output_timeout_s,
            stream_idle_timeout_s=self.stream_idle_timeout_s, finish_grace_s=self.finish_grace_s)
        aggregator = Aggregator()  # one per Attempt: material is never spliced across Attempts
        try:
            route = self._routes.get(context.run_id, {}).get(self.name)
            adapter = self.adapter() if route is None else route.adapter()
            response = await complete_once(adapter, model_request, attempt, aggregator=aggregator,
                                           observe=delta_feed(attempt))
        except ModelAttemptError as exc:
            return _failed(exc, exc.incomplete or aggregator.incomplete(exc.error.code))
        raw = response_to_dict(response)  # the stored form, encoded once
        hand_back(raw, response)
        return ToolResult.success(JsonBlock(raw))


def _failed(exc: ModelAttemptError, incomplete: IncompleteAttempt) -> ToolResult:
    """The raw result of a failed Attempt; its partial material is evidence, never a response."""
    error = _own_error(exc) or exc.error
    if error is not exc.error:
        incomplete = dataclasses.replace(incomplete, reason=error.code)
    # The adapter reported this Attempt as failed; only a failure nobody could classify,
    # after the request may have been sent, leaves the call's outcome unknown.
    unclassified = error.category == "unknown" and error.external_outcome == "unknown"
    status: ResultStatus = "unknown" if unclassified else "failed"
    return ToolResult(status=status, error=error, metadata={"incomplete": incomplete.to_dict()})


def _own_error(exc: ModelAttemptError) -> OperationError | None:
    """The error an adapter raised itself (e.g. ``ScriptError``, a preset's ``ConfigError``
    from ``build_body``), which the stream clock had reclassified as an adapter failure."""
    from agentloom.models.errors import MODEL_ADAPTER_FAILED, ModelAttemptError

    if exc.error.code != MODEL_ADAPTER_FAILED:
        return None
    seen: BaseException | None = exc
    for _ in range(6):  # complete_once → drive → the adapter's own exception
        seen = (seen.__cause__ or seen.__context__) if seen is not None else None
        if isinstance(seen, AgentLoomError) and not isinstance(seen, ModelAttemptError):
            return seen.error
    return None


# -- the owner ----------------------------------------------------------------------------------


class ModelManager:
    """The one owner of ``event_type="model"`` requests on the bus: maps a catalog spec's
    ``handler_ref`` (``model:<name>``) to that connection's handler.

    Owns: the model handlers and specs. Does not own: retries, streaming
    clocks or ``model.*`` observations (``ModelGateway``), nor the tools a model asks for."""

    def __init__(self) -> None:
        self._handlers: dict[str, CapabilityHandler] = {}
        self._specs: dict[str, CapabilitySpec] = {}
        self._routes: Routes = {}

    def route(self, run_id: str, connections: Mapping[str, Connection]) -> None:
        """Run ``run_id``'s calls of each named connection go to the given ``Connection``
        (its project's model route) until ``unroute``."""
        self._routes[run_id] = {name: Route(c) for name, c in connections.items()}

    def routed(self, run_id: str) -> dict[str, Connection]:
        """The connections ``route`` gave run ``run_id`` (empty: the release's own)."""
        return {name: r.connection for name, r in self._routes.get(run_id, {}).items()}

    async def unroute(self, run_id: str) -> None:
        """Drop run ``run_id``'s route and close what its calls opened."""
        for route in self._routes.pop(run_id, {}).values():
            await route.aclose()

    def register(self, handler_ref: str, handler: CapabilityHandler) -> None:
        """Register the raw handler behind ``handler_ref`` (one handler per reference)."""
        if handler_ref in self._handlers:
            raise RegistrationError(f"a model handler is already registered as {handler_ref!r}")
        self._handlers[handler_ref] = handler

    def handler_for(self, spec: CapabilitySpec) -> CapabilityHandler | None:
        return self._handlers.get(spec.handler_ref)

    def add(
        self,
        name: str,
        source: ModelAdapter | Connection,
        *,
        first_output_timeout_s: float = 60.0,
        stream_idle_timeout_s: float | None = None,
        finish_grace_s: float = DEFAULT_FINISH_GRACE_S,
    ) -> CapabilitySpec:
        """Add model connection ``name`` (a ``Connection`` or an adapter, e.g. ``TestModel``)
        and return its catalog spec (``model.<name>``).

        Raises:
            ConfigError: an illegal name or timeout.
            RegistrationError: a connection of that name was already added.
        """
        handler = ModelHandler(
            name, source, first_output_timeout_s=first_output_timeout_s,
            stream_idle_timeout_s=stream_idle_timeout_s, finish_grace_s=finish_grace_s,
            routes=self._routes)
        spec = model_capability(name, description=handler.describe())
        self.register(spec.handler_ref, handler)
        self._specs[spec.capability_key] = spec
        return spec

    def specs(self) -> tuple[CapabilitySpec, ...]:
        """The catalog specs of every added connection, in the order they were added."""
        return tuple(self._specs.values())

    async def aclose(self) -> None:
        """Close every provider connection a handler opened."""
        for handler in self._handlers.values():
            if isinstance(handler, ModelHandler):
                await handler.aclose()
        for run_id in list(self._routes):
            await self.unroute(run_id)
