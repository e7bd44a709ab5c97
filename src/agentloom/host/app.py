"""The host's ASGI app (starlette): the ``/v1`` routes on one ``Runtime``, health, readiness,
the OpenAPI document, the web run inspector (``/ui``, no key: ``host.ui``) and the same
agents over A2A 1.0 (``/.well-known/agent-card.json``, ``/a2a``: ``host.a2a.routes``; without
the ``a2a`` extra those paths answer 501 naming it: ``host.a2a.missing``).

::

    app = create_app(runtime, execute=True, concurrency=4)
    uvicorn.run(app, host="127.0.0.1", port=8700)     # agentloom serve does this

Every ``/v1`` route authenticates (``Authorization: Bearer KEY``) and acts for that key's
principal only. Every failure is a problem-details response (``host.problems``): a route's
``AgentLoomError`` keeps its code, an unknown route or method is one too, and an unexpected
exception is a bare 500 (logged, no traceback in the answer). A request body over the limit
(``host.limits``, 8 MiB by default) is a 413, refused before it is read whole. The app's
lifespan starts the ``RunDriver`` that drives the queued runs (``host.driver``: a child
``agentloom worker`` process under ``agentloom serve``, else a ``Worker`` on this loop) and
stops it gracefully on shutdown (its runs go back to the queue at their next step); without
one, ``agentloom worker`` processes drive them.

Owns: routing, authentication per request, error mapping, the lifespan. Does not own what the
routes do (``routes_runs``, ``events``, ``workspace``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from agentloom.agent.runtime import Runtime
from agentloom.extras import has_extra, missing
from agentloom.host import events, routes_commands, routes_runs, workspace
from agentloom.host.access import principal_of
from agentloom.host.driver import InProcessDriver, RunDriver
from agentloom.host.limits import MAX_BODY_BYTES, BodyLimit
from agentloom.host.openapi import openapi_document
from agentloom.host.problems import Problem, from_error, problem_response
from agentloom.host.ui import inspector_app
from agentloom.refs import Principal
from agentloom.store.runs import probe

__all__ = ["create_app"]

log = logging.getLogger(__name__)

Handler = Callable[[Request, Runtime, Principal], Awaitable[Response]]


def _version() -> str:
    try:
        return package_version("agentloom")
    except PackageNotFoundError:
        return "0"


def _authed(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` behind authentication, its failures answered as problems."""
    async def endpoint(request: Request) -> Response:
        runtime: Runtime = request.app.state.runtime
        try:
            return await handler(request, runtime, principal_of(request, runtime.store))
        except Exception as exc:  # every failure is a problem, none a traceback
            found = from_error(exc)
            headers = {"WWW-Authenticate": "Bearer"} if found.status == 401 else None
            return problem_response(found, headers)
    endpoint.__name__ = handler.__name__
    return endpoint


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _ready(request: Request) -> Response:
    """Ready: the store answers and, when this process drives runs, its driver can (a worker
    process between a death and its successor cannot: 503 ``WORKER_UNAVAILABLE``)."""
    runtime: Runtime = request.app.state.runtime
    try:
        probe(runtime.store)
    except Exception as exc:
        log.warning("the store does not answer: %s", exc)
        return problem_response(Problem(503, "STORE_UNAVAILABLE", "the store does not answer"))
    driver: RunDriver | None = getattr(request.app.state, "worker", None)
    state = driver.state() if driver is not None else None
    if state is not None and not state["running"]:
        detail = "the worker process is not running"
        if state.get("last_exit"):
            detail += f": the last one exited ({state['last_exit']})"
        if state.get("next_start_in_s") is not None:
            detail += f"; another starts in {state['next_start_in_s']} s"
        return problem_response(Problem(503, "WORKER_UNAVAILABLE", detail))
    return JSONResponse({"status": "ready", "worker": state})


async def _openapi(request: Request) -> Response:
    return JSONResponse(request.app.state.openapi)


async def _http_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(exc.status_code, "INVALID_REQUEST")
    detail = (f"no route {request.method} {request.url.path}" if exc.status_code in (404, 405)
              else str(exc.detail))
    return problem_response(Problem(exc.status_code, code, detail), exc.headers)


async def _internal(request: Request, exc: Exception) -> Response:
    return problem_response(from_error(exc))


def _routes() -> list[BaseRoute]:
    run = "/v1/runs/{run_id}"
    return [
        Route("/health", _health, methods=["GET"]),
        Route("/ready", _ready, methods=["GET"]),
        Route("/openapi.json", _openapi, methods=["GET"]),
        Mount("/ui", app=inspector_app(), name="ui"),
        Route("/v1/runs", _authed(routes_runs.create_run), methods=["POST"]),
        Route("/v1/runs", _authed(routes_runs.list_runs), methods=["GET"]),
        Route(run, _authed(routes_runs.get_run_view), methods=["GET"]),
        Route(run + "/operations", _authed(routes_runs.list_operations), methods=["GET"]),
        Route(run + "/stop", _authed(routes_runs.stop_run), methods=["POST"]),
        Route(run + "/supplement", _authed(routes_runs.supplement_run), methods=["POST"]),
        Route(run + "/resume", _authed(routes_runs.resume_run), methods=["POST"]),
        Route(run + "/fork", _authed(routes_runs.fork_run), methods=["POST"]),
        Route(run + "/operations/{operation_id}/approve", _authed(routes_runs.approve),
              methods=["POST"]),
        Route(run + "/operations/{operation_id}/reject", _authed(routes_runs.reject),
              methods=["POST"]),
        Route("/v1/commands/{operation_id}/receipt", _authed(routes_commands.get_receipt),
              methods=["GET"]),
        Route(run + "/events", _authed(events.stream_events), methods=["GET"]),
        Route(run + "/workspace", _authed(workspace.list_workspace), methods=["GET"]),
        Route(run + "/workspace/{path:path}", _authed(workspace.read_workspace_file),
              methods=["GET"]),
    ]


def create_app(runtime: Runtime, *, execute: bool = True, concurrency: int = 1,
               wait_s: float = routes_runs.WAIT_S, driver: RunDriver | None = None,
               max_body_bytes: int = MAX_BODY_BYTES) -> Starlette:
    """The host on ``runtime``, showing runs as ``runs show`` does (``agentloom.views``).
    ``driver`` drives the queued runs while the app is up (``host.driver``: ``agentloom
    serve`` passes a ``WorkerProcess``); without one, ``execute`` runs an ``InProcessDriver``
    (a ``Worker`` of ``concurrency`` on the app's loop) and ``execute=False`` none.
    ``wait_s``: the longest a ``"wait": true`` create waits. ``max_body_bytes``: the largest
    request body taken (``host.limits``: a larger one is a 413, never read whole). The runtime
    is closed when the app shuts down."""
    if driver is None and execute:
        driver = InProcessDriver(runtime, concurrency=concurrency)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            if driver is not None:
                await driver.start()
            app.state.worker = driver  # a run created here wakes it at once (``routes_runs``)
            yield
        finally:
            app.state.worker = None
            if driver is not None:
                await driver.stop()
            await runtime.aclose()

    if has_extra("a2a"):
        from agentloom.host.a2a.routes import a2a_routes  # the A2A SDK: only for an app

        a2a = a2a_routes(runtime)
    else:  # the A2A paths say which extra serves them
        from agentloom.host.a2a.missing import FEATURE, missing_a2a_routes

        log.warning("%s", missing("a2a", FEATURE).error.message)
        a2a = missing_a2a_routes()
    app = Starlette(routes=[*_routes(), *a2a], lifespan=lifespan,
                    middleware=[Middleware(BodyLimit, max_bytes=max_body_bytes)],
                    exception_handlers={HTTPException: _http_problem, Exception: _internal})
    app.state.runtime = runtime
    app.state.wait_s = wait_s
    app.state.worker = None
    app.state.openapi = openapi_document(
        _version(), agents=sorted(runtime.agents),
        workflows=sorted(p.owner.id for p in runtime.programs.values()))
    return app
