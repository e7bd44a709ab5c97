"""The ``/v1/runs`` routes: create, read, list and control the requesting principal's runs.

Every handler gets the request's principal (``access.principal_of``) and acts only on that
principal's runs; another owner's run is the same 404 as a missing one. Views reuse what
``agentloom runs show --json`` prints (``agentloom.views``):
a run is ``run_detail`` without its ``operations`` (they have their own route), with
``actor`` and ``project``.

What reads more than a row or two — a run's view, its operations, a page of runs — reads in
a worker thread, never on the event loop.

Owns: the run routes' checks past their bodies' shapes (an agent or workflow of the
configuration) and their responses. Does not own the shapes (``host.shapes``), running anything
(the ``Runtime``), the SSE stream (``host.events``) nor workspace files (``host.workspace``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from agentloom import views
from agentloom.agent.fork import ForkError, plan_fork, start_fork
from agentloom.agent.leases import is_interrupted
from agentloom.agent.runtime import Runtime
from agentloom.host.access import RUN_STATUSES, json_body, key_still_valid, owned_run
from agentloom.host.events import MEDIA_TYPE, live_run_stream
from agentloom.host.problems import Problem, not_found_run, problem
from agentloom.host.shapes import Answer, Fork, RunCreate, Stop, Supplement, parse
from agentloom.refs import Principal
from agentloom.store import Store
from agentloom.store.records import operations
from agentloom.store.runs import RunRecord, get_run, principal_page

__all__ = ["approve", "create_run", "fork_run", "get_run_view", "list_operations", "list_runs",
           "reject", "resume_run", "run_view", "stop_run", "supplement_run"]

WAIT_S = 60.0  # the longest a ``"wait": true`` create waits before it answers
POLL_S = 0.2
SETTLED = frozenset({"succeeded", "failed", "cancelled", "timed_out", "waiting"})
DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def run_view(store: Store, run_id: str) -> dict[str, Any]:
    """A run as the API gives it: ``runs show --json`` without ``operations``, its
    diagnosis's ``next_step`` naming the API's routes, not the CLI's commands."""
    detail = views.run_detail(store, run_id, surface="http")
    if detail is None:
        raise not_found_run(run_id)
    detail.pop("operations", None)
    run = get_run(store, run_id, lenient=True)
    return {**detail, "actor": None if run is None else run.actor,
            "project": None if run is None else run.project}


async def create_run(request: Request, runtime: Runtime, principal: Principal) -> Response:
    """``POST /v1/runs``: queue a run for the principal; ``"wait": true`` waits (at most
    ``WAIT_S``) until it ended or waits for a person; ``"stream": true`` drives it here and
    answers with its live events (``_streamed``)."""
    body = parse(RunCreate, await json_body(request))  # task, types, priority's range
    agent, workflow = body.agent, body.workflow
    if workflow is not None:  # a workflow's run (issue 20): its program's name
        if agent is not None:
            raise Problem(400, "INVALID_REQUEST", "give 'agent' or 'workflow', not both")
        agent = f"workflow:{workflow}"
        if agent not in runtime.programs:
            raise Problem(400, "INVALID_REQUEST", f"the field 'workflow' names no workflow of "
                          f"this configuration: {workflow!r}; workflows: "
                          f"{sorted(p.owner.id for p in runtime.programs.values())}")
    agent = _default_agent(runtime) if agent is None else agent
    if agent not in runtime.agents and agent not in runtime.programs:
        raise Problem(400, "INVALID_REQUEST", f"the field 'agent' names no agent of this "
                      f"configuration: {agent!r}; agents: {sorted(runtime.agents)}")
    if body.stream:
        return await _streamed(request, runtime, principal, body.task, agent, wait=body.wait)
    run_id = await runtime.submit(body.task, agent=agent, priority=body.priority or 0,
                                  principal=principal)
    worker = getattr(request.app.state, "worker", None)
    if worker is not None:  # this process drives runs: start this one now, not at its next poll
        worker.wake()
    if body.wait:
        await _settle(runtime.store, run_id, request.app.state.wait_s)
    return JSONResponse(run_view(runtime.store, run_id), status_code=201)


async def _streamed(request: Request, runtime: Runtime, principal: Principal, task: str,
                    agent: str, *, wait: bool | None) -> StreamingResponse:
    """``"stream": true``: start the run in this process (not through the queue) and answer
    with its live events, ``model.delta`` included (``events.live_run_stream``)."""
    if wait:
        raise Problem(400, "INVALID_REQUEST", "give 'stream' or 'wait', not both: a streamed "
                      "create answers with the run's events until it ends")
    if getattr(request.app.state, "worker", None) is None:
        raise Problem(409, "STREAM_UNAVAILABLE", "this host drives no runs (agentloom serve "
                      "--no-execute): create the run without 'stream' and follow "
                      "GET /v1/runs/{run_id}/events")
    handle = await runtime.start(task, agent=agent, principal=principal)
    follow = handle.events(deltas=True)  # subscribed now: before the run's first step
    authorized = key_still_valid(runtime.store, request.headers.get("authorization"))
    return StreamingResponse(live_run_stream(follow, authorized=authorized), status_code=201,
                             media_type=MEDIA_TYPE, headers={
                                 "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                 "Location": f"/v1/runs/{handle.run_id}"})


def _default_agent(runtime: Runtime) -> str:
    return "main" if "main" in runtime.agents else next(iter(runtime.agents))


async def _settle(store: Store, run_id: str, wait_s: float) -> None:
    """Until the run ended or waits for a person, or ``wait_s`` passed."""
    until = time.monotonic() + wait_s
    while time.monotonic() < until:
        run = get_run(store, run_id, lenient=True)
        if run is None or run.stored_status in SETTLED:
            return
        await asyncio.sleep(POLL_S)


async def get_run_view(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``GET /v1/runs/{run_id}``."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    return JSONResponse(await to_thread.run_sync(run_view, runtime.store, run.run_id))


async def list_runs(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``GET /v1/runs?status=&agent=&limit=&cursor=``: the principal's runs, newest first, a
    page at a time (``next_cursor`` is null on the last page)."""
    query = request.query_params
    status = query.get("status")
    if status is not None and status not in RUN_STATUSES:
        raise Problem(400, "INVALID_REQUEST", f"the query parameter 'status' must be one "
                      f"of {sorted(RUN_STATUSES)}, got {status!r}")
    limit = _limit(query.get("limit"))
    after = _cursor(query["cursor"]) if query.get("cursor") else None
    return JSONResponse(await to_thread.run_sync(lambda: _runs_page(
        runtime.store, principal, limit=limit, status=status, agent=query.get("agent"),
        after=after)))


def _runs_page(store: Store, principal: Principal, *, limit: int, status: str | None,
               agent: str | None, after: tuple[float, str] | None) -> dict[str, Any]:
    """A page of runs (in a worker thread: it reads the store): ``store.runs.principal_page``
    with each run as ``_summary`` gives it."""
    page = principal_page(store, principal, limit=limit, status=status, agent=agent,
                          after=after)
    now = store.now()
    items = [_summary(run, now) for run in page.runs]
    next_cursor = _encode_cursor(*page.last) if page.last is not None else None
    return {"items": items, "next_cursor": next_cursor}


def _summary(run: RunRecord, now: float) -> dict[str, Any]:
    """A run in a list: what ``agentloom runs list --json`` gives, with its output (``now``:
    the store's time)."""
    return {"run_id": run.run_id,
            "status": "interrupted" if is_interrupted(run, now) else run.stored_status,
            "agent": run.agent, "created_at": run.created_at, "updated_at": run.updated_at,
            "task": views.excerpt(run.task), "output": run.output}


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise Problem(400, "INVALID_REQUEST", f"the query parameter 'limit' must be a whole "
                      f"number from 1 to {MAX_LIMIT}, got {raw!r}")
    return int(raw)


def _encode_cursor(created_at: float, run_id: str) -> str:
    raw = json.dumps([created_at, run_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(raw: str) -> tuple[float, str]:
    """The position an opaque cursor names; a 400 problem for one this API did not make."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        created_at, run_id = decoded
        if isinstance(created_at, bool) or not isinstance(created_at, int | float) \
                or not isinstance(run_id, str):
            raise ValueError(decoded)
    except (ValueError, TypeError, binascii.Error):
        raise Problem(400, "INVALID_CURSOR", "the query parameter 'cursor' is not a cursor "
                      "this API gave (use next_cursor of the previous page as it is)") from None
    return float(created_at), run_id


async def list_operations(request: Request, runtime: Runtime,
                          principal: Principal) -> JSONResponse:
    """``GET /v1/runs/{run_id}/operations``: as ``runs show --json`` gives them."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)

    def items() -> list[dict[str, Any]]:  # every operation of the run: off the loop
        return [views.operation_detail(runtime.store, op)
                for op in operations(runtime.store, run.run_id, lenient=True)]

    return JSONResponse({"run_id": run.run_id, "items": await to_thread.run_sync(items)})


def _control(runtime: Runtime, run_id: str) -> JSONResponse:
    """The answer to a control: the run's status now (the control may have changed it)."""
    run = get_run(runtime.store, run_id, lenient=True)
    return JSONResponse({"run_id": run_id, "status": None if run is None else run.stored_status},
                        status_code=202)


async def stop_run(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``POST /v1/runs/{run_id}/stop`` ``{"reason"?}``."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    body = parse(Stop, await json_body(request, optional=True))
    reason = body.reason or f"stopped by {principal.actor}"
    await runtime.stop(run.run_id, reason)
    return _control(runtime, run.run_id)


async def supplement_run(request: Request, runtime: Runtime,
                         principal: Principal) -> JSONResponse:
    """``POST /v1/runs/{run_id}/supplement`` ``{"text"}``: input for the root's next turn."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    body = parse(Supplement, await json_body(request))
    await runtime.supplement(run.run_id, body.text)
    return _control(runtime, run.run_id)


async def resume_run(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``POST /v1/runs/{run_id}/resume``: the run goes back to the queue (issue #34, 3), as
    ``POST /v1/runs`` puts a new one there: a worker takes it within its concurrency and the
    per-agent caps — this process's own worker, woken now, or ``agentloom worker``."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    await json_body(request, optional=True)
    await runtime.requeue(run.run_id)
    worker = getattr(request.app.state, "worker", None)
    if worker is not None:
        worker.wake()
    return _control(runtime, run.run_id)


async def fork_run(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``POST /v1/runs/{run_id}/fork`` ``{"at", "message"?}``: a new run of the principal from
    the run's call ``at`` (``agent.fork``), queued as ``POST /v1/runs`` queues one; only the
    run's own principal may fork it (another's is the same 404 as reading it)."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    body = parse(Fork, await json_body(request))
    try:
        plan = await to_thread.run_sync(lambda: plan_fork(runtime.store, run.run_id, body.at,
                                                          message=body.message))
    except ForkError as exc:  # OPERATION_NOT_FOUND: 404; a call it cannot fork from: 409
        raise problem(exc.error.code, exc.error.message) from None
    fork_id = await start_fork(runtime, plan, principal=principal)
    worker = getattr(request.app.state, "worker", None)
    if worker is not None:  # this process drives runs: start the fork now
        worker.wake()
    return JSONResponse(await to_thread.run_sync(run_view, runtime.store, fork_id),
                        status_code=201)


async def approve(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``POST /v1/runs/{run_id}/operations/{operation_id}/approve`` ``{"reason"?}``."""
    return await _answer(request, runtime, principal, approve=True)


async def reject(request: Request, runtime: Runtime, principal: Principal) -> JSONResponse:
    """``POST /v1/runs/{run_id}/operations/{operation_id}/reject`` ``{"reason"?}``."""
    return await _answer(request, runtime, principal, approve=False)


async def _answer(request: Request, runtime: Runtime, principal: Principal, *,
                  approve: bool) -> JSONResponse:
    """Answer a waiting call of the principal's run, as the principal's actor."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    operation_id = request.path_params["operation_id"]
    body = parse(Answer, await json_body(request, optional=True))
    how = runtime.approve if approve else runtime.reject
    record = await how(run.run_id, operation_id, reason=body.reason, actor=principal.actor)
    now = get_run(runtime.store, run.run_id, lenient=True)  # the answer may have queued it
    run_status = None if now is None else now.stored_status
    worker = getattr(request.app.state, "worker", None)
    if worker is not None and run_status == "pending":  # queued again: go on now
        worker.wake()
    return JSONResponse({"run_id": run.run_id, "operation_id": operation_id,
                         "status": record.status, "answer": record.answer,
                         "reason": record.reason, "actor": record.actor,
                         "answered_at": record.answered_at, "run_status": run_status})
