"""``GET /v1/runs/{run_id}/events``: a run's low-frequency events as Server-Sent Events.

Each event is the JSON of one ``RunEvent`` (``agent.events.run_events``: run start and end,
model and tool call starts and ends — never a token), its SSE ``event:`` the event type and
its ``id:`` its position in the run's events (1, 2, …). A client that reconnects with
``Last-Event-ID: N`` gets the events after the N-th. The stream follows the store (every
``POLL_S``, rebuilding the run's events in a worker thread), so it is the same whichever process
drives the run, and ends after the run's
``run.finished``; while nothing happens a comment line keeps proxies from closing it. It also
ends, at its next poll, once the API key that opened it is revoked (a comment line says so).

``live_run_stream`` is the other stream: the answer of ``POST /v1/runs`` with ``"stream":
true``, the live events of a run this process drives (``RunHandle.events(deltas=True)``) —
``model.delta`` pieces of the model's text and reasoning included, which are never stored and so
never in the stream above. Its ids count the messages of that answer; it ends when the run
ends (or waits for a person), and a client that goes away leaves the run running.

Owns: the streams' framing and their end. Does not own the events (``agent.events``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import StreamingResponse

from agentloom.agent.events import RunEvent, run_events
from agentloom.agent.runtime import Runtime
from agentloom.host.access import key_still_valid, owned_run
from agentloom.host.problems import Problem
from agentloom.refs import Principal
from agentloom.store import Store

__all__ = ["POLL_S", "format_event", "live_run_stream", "run_event_stream", "stream_events"]

POLL_S = 0.2
KEEPALIVE_S = 15.0
MAX_ID_DIGITS = 18  # a Last-Event-ID longer than this names no event
REVOKED = "the API key of this stream was revoked"
MEDIA_TYPE = "text/event-stream"


def format_event(position: int, event: RunEvent) -> str:
    """One SSE message: ``id``, ``event`` and the event's JSON on one ``data`` line."""
    data = json.dumps(event.to_dict(), separators=(",", ":"), default=str)
    return f"id: {position}\nevent: {event.type}\ndata: {data}\n\n"


async def run_event_stream(store: Store, run_id: str, after: int = 0,
                           poll_s: float = POLL_S, *,
                           authorized: Callable[[], bool] | None = None) -> AsyncIterator[str]:
    """The run's events after the ``after``-th, as SSE messages, until its ``run.finished`` —
    or until ``authorized()`` (asked at every poll) says the stream's key was revoked."""
    sent = after
    quiet_since = time.monotonic()
    while True:
        if authorized is not None and not authorized():
            yield f": {REVOKED}\n\n"
            return
        events = await to_thread.run_sync(run_events, store, run_id)  # a rebuild: off the loop
        for position, event in enumerate(events[sent:], start=sent + 1):
            yield format_event(position, event)
            quiet_since = time.monotonic()
        sent = max(sent, len(events))
        if events and events[-1].type == "run.finished":
            return
        if time.monotonic() - quiet_since >= KEEPALIVE_S:
            yield ": keep-alive\n\n"
            quiet_since = time.monotonic()
        await asyncio.sleep(poll_s)


async def live_run_stream(events: AsyncIterator[RunEvent], *,
                          authorized: Callable[[], bool] | None = None,
                          keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[str]:
    """``events`` (``RunHandle.events(deltas=True)``, subscribed before the run's first step) as
    SSE messages until the run ends; a comment keeps the stream open while nothing happens and
    ends it once ``authorized()`` says its key was revoked. Closing it (the client went away)
    ends the subscription, never the run."""
    queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for event in events:
                queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(pump())
    position = 0
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), keepalive_s)
            except TimeoutError:
                if authorized is not None and not authorized():
                    yield f": {REVOKED}\n\n"
                    return
                yield ": keep-alive\n\n"
                continue
            if event is None:
                return
            position += 1
            yield format_event(position, event)
    finally:
        task.cancel()  # its iteration ends, and with it the subscription (never the run)


def _last_event_id(request: Request) -> int:
    raw = request.headers.get("last-event-id", "").strip()
    if not raw:
        return 0
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_ID_DIGITS:
        raise Problem(400, "INVALID_REQUEST", f"the header 'Last-Event-ID' must be an event id "
                      f"this stream gave (a whole number of at most {MAX_ID_DIGITS} digits), "
                      f"got {raw[:40]!r}")
    return int(raw)


async def stream_events(request: Request, runtime: Runtime,
                        principal: Principal) -> StreamingResponse:
    """The route: the principal's run only (another owner's is the missing-run 404); the
    stream ends once the key that opened it is revoked."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    after = _last_event_id(request)
    authorized = key_still_valid(runtime.store, request.headers.get("authorization"))
    return StreamingResponse(run_event_stream(runtime.store, run.run_id, after,
                                              authorized=authorized),
                             media_type=MEDIA_TYPE,
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
