"""AgentLoom agents served over A2A 1.0, in the host's app (``agentloom serve``): the agent
card and both HTTP bindings, built with the SDK's route builders over ``RunRequestHandler``.

::

    GET  /.well-known/agent-card.json      the card (no key): one skill per configured agent
    POST /a2a/jsonrpc                      JSON-RPC 2.0 binding (SendMessage, GetTask, …)
    *    /a2a/rest/…                       HTTP+JSON binding (/message:send, /tasks/{id}, …)

Every ``/a2a`` request authenticates with an API key (``Authorization: Bearer KEY``, the
host's ``access.principal_of``); without a valid one it is the host's 401 problem, before the
SDK sees it. The card declares that scheme. The card's interface URLs are
``AGENTLOOM_A2A_URL`` (the public base URL, e.g. behind a proxy) when it is set, else the
base URL of the request that fetched the card. ``AGENTLOOM_A2A_WAIT_S`` (seconds, > 0) bounds
how long a blocking ``SendMessage`` waits for its task to end or ask for input (default
``handler.WAIT_S``); it is read when the routes are built, and a bad value is refused then.

Owns: the card, the routes, authentication of A2A requests. Does not own the methods
(``host.a2a.handler``) nor the task mapping (``host.a2a.tasks``).
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from a2a.server.context import ServerCallContext
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_CURRENT
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from agentloom.agent.runtime import Runtime
from agentloom.errors import ConfigError
from agentloom.host.a2a.handler import PRINCIPAL, REQUEST, WAIT_S, WORKER, RunRequestHandler
from agentloom.host.access import principal_of
from agentloom.host.problems import Problem, problem_response
from agentloom.store import Store

__all__ = ["JSONRPC_PATH", "PREFIX", "PUBLIC_URL_ENV", "REST_PATH", "WAIT_ENV", "a2a_routes",
           "agent_card", "blocking_wait_s"]

PREFIX = "/a2a"
WELL_KNOWN = "/.well-known"
JSONRPC_PATH = PREFIX + "/jsonrpc"
REST_PATH = PREFIX + "/rest"
PUBLIC_URL_ENV = "AGENTLOOM_A2A_URL"
WAIT_ENV = "AGENTLOOM_A2A_WAIT_S"
MODES = ["text/plain", "application/json"]
BEARER = "bearer"

_base_url: contextvars.ContextVar[str] = contextvars.ContextVar("a2a_base_url", default="")


def _version() -> str:
    try:
        return package_version("agentloom")
    except PackageNotFoundError:
        return "0"


def agent_card(runtime: Runtime, base_url: str) -> AgentCard:
    """The card of ``runtime``'s agents and workflows served at ``base_url``: a skill each
    (a workflow's id is ``workflow:<name>``); JSON-RPC first (preferred), then HTTP+JSON;
    streaming; the bearer API key required."""
    base = base_url.rstrip("/")
    skills = [AgentSkill(id=name, name=name, description=spec.description or f"agent {name}",
                         tags=["agentloom"], input_modes=MODES, output_modes=MODES)
              for name, spec in sorted(runtime.agents.items())]
    skills += [AgentSkill(id=name, name=name,
                          description=program.describe().get("description")
                          or f"workflow {name.split(':', 1)[1]}",
                          tags=["agentloom", "workflow"], input_modes=MODES,
                          output_modes=MODES)
               for name, program in sorted(runtime.programs.items())]
    return AgentCard(
        name="agentloom", version=_version(),
        description="AgentLoom agents and workflows; a message runs the skill its "
                    "metadata.skill names (default: main)",
        supported_interfaces=[
            AgentInterface(url=base + JSONRPC_PATH, protocol_binding="JSONRPC",
                           protocol_version=PROTOCOL_VERSION_CURRENT),
            AgentInterface(url=base + REST_PATH, protocol_binding="HTTP+JSON",
                           protocol_version=PROTOCOL_VERSION_CURRENT)],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False,
                                       extended_agent_card=False),
        security_schemes={BEARER: SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="Bearer", bearer_format="agentloom API key",
            description="an API key made by agentloom keys create"))},
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
        default_input_modes=MODES, default_output_modes=MODES, skills=skills)


class _Contexts(DefaultServerCallContextBuilder):
    """The SDK's call context, with the authenticated principal, this process's worker and
    the request (a stream checks its key again; ``ListTasks`` reads the status it was given)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[PRINCIPAL] = request.scope[PRINCIPAL]
        context.state[WORKER] = getattr(request.app.state, "worker", None)
        context.state[REQUEST] = request
        return context


class _Authenticated:
    """An ASGI app that lets through only requests with a valid API key."""

    def __init__(self, app: ASGIApp, store: Store) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                scope[PRINCIPAL] = principal_of(Request(scope), self.store)
            except Problem as problem:
                answer = problem_response(problem, {"WWW-Authenticate": "Bearer"})
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _card_routes(runtime: Runtime) -> list[BaseRoute]:
    """The SDK's card route, its URLs those of the request's base (``PUBLIC_URL_ENV``).
    Mounted, as ``/a2a``: the A2A surface is described by the card and the A2A
    specification, not by the host's OpenAPI document."""
    async def with_urls(card: AgentCard) -> AgentCard:
        served = AgentCard()
        served.CopyFrom(agent_card(runtime, os.environ.get(PUBLIC_URL_ENV) or _base_url.get()))
        return served

    def at_base(endpoint: Callable[[Request], Awaitable[Response]],
                ) -> Callable[[Request], Awaitable[Response]]:
        async def card(request: Request) -> Response:
            _base_url.set(str(request.base_url))
            return await endpoint(request)
        return card

    template = agent_card(runtime, "http://127.0.0.1")
    card = create_agent_card_routes(template, card_modifier=with_urls,
                                    card_url=AGENT_CARD_WELL_KNOWN_PATH.removeprefix(WELL_KNOWN))
    return [Mount(WELL_KNOWN, routes=[Route(route.path, at_base(route.endpoint), methods=["GET"])
                                      for route in card if isinstance(route, Route)])]


def a2a_routes(runtime: Runtime) -> list[BaseRoute]:
    """The card route (open) and, under ``/a2a``, the JSON-RPC and HTTP+JSON bindings on
    ``runtime`` (every request authenticated)."""
    handler = RunRequestHandler(runtime, wait_s=blocking_wait_s(os.environ.get(WAIT_ENV)))
    contexts = _Contexts()
    bindings = [*create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH.removeprefix(PREFIX),
                                       context_builder=contexts),
                *create_rest_routes(handler, context_builder=contexts,
                                    path_prefix=REST_PATH.removeprefix(PREFIX))]
    return [*_card_routes(runtime),
            Mount(PREFIX, app=_Authenticated(Router(routes=bindings, redirect_slashes=False),
                                             runtime.store))]


def blocking_wait_s(raw: str | None) -> float:
    """The bound of a blocking ``SendMessage``: ``raw`` (``AGENTLOOM_A2A_WAIT_S``) in seconds,
    else ``WAIT_S``.

    Raises:
        ConfigError: ``raw`` is not a number of seconds > 0.
    """
    if raw is None or not raw.strip():
        return WAIT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ConfigError(f"{WAIT_ENV}={raw[:40]!r} is not a number of seconds > 0: set it to "
                          f"e.g. 2 (a blocking SendMessage then answers a task still working "
                          f"after 2 s), or unset it for the default {WAIT_S:g} s")
    return seconds
