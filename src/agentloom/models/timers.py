"""The clocks of one model Attempt (000 §4): first output, stream idle, run deadline.

``StreamTimers`` is the pure rule — given what has been seen and when, which limit comes
next — with no clock of its own, so it is tested with plain numbers. ``drive`` applies
it to a live provider stream: it pulls events under one lazily re-armed timer (no timer
work per event), hands each to a sink, and turns an expired limit, a stop or an adapter
failure into a ``ModelAttemptError``.

* first output: counted from the start of the Attempt (before the connection exists);
  satisfied only by ``types.is_meaningful`` events — never heartbeats, empty deltas,
  role-only or usage-only frames — or by a complete terminal frame (``Finish``);
* stream idle (optional): the gap between any two provider events (the wait for the
  first one is the first-output clock's). SSE comments never reach an SDK-based
  adapter, so they neither count as output nor reset this clock;
* run deadline: always applies;
* after ``Finish``: trailing frames (usage, ``[DONE]``) get ``finish_grace_s``; when the
  grace runs out, or the connection drops after the terminal frame, the response is
  complete as received.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Literal

from agentloom.models.errors import (
    ModelAttemptError,
    classify_exception,
    deadline_exceeded,
    first_output_timeout,
    idle_timeout,
    stopped,
)
from agentloom.models.ports import AttemptInfo
from agentloom.models.types import Finish, ProviderEvent, is_meaningful

LimitKind = Literal["deadline", "first_output", "idle", "finish_grace", "none"]


class StreamTimers:
    """Which limit applies next. Times are seconds on any monotonic clock."""

    __slots__ = (
        "_deadline_at", "_first_at", "_grace_at", "_grace_s", "_idle_s",
        "finished", "last_event_at", "output_seen", "seen_event",
    )

    def __init__(self, attempt: AttemptInfo, *, start: float, deadline_at: float | None) -> None:
        self._deadline_at = math.inf if deadline_at is None else deadline_at
        self._first_at = start + attempt.first_output_timeout_s
        self._idle_s = attempt.stream_idle_timeout_s
        self._grace_s = attempt.finish_grace_s
        self._grace_at = math.inf
        self.output_seen = False
        self.seen_event = False
        self.finished = False
        self.last_event_at = start

    def observe(self, event: ProviderEvent, now: float) -> None:
        self.last_event_at = now
        self.seen_event = True
        if self.finished:
            return
        if type(event) is Finish:
            self.finished = True
            self._grace_at = now + self._grace_s
        elif not self.output_seen and is_meaningful(event):
            self.output_seen = True

    def next_limit(self) -> tuple[float, LimitKind]:
        """The earliest limit now in force and its kind (``inf``/"none" when there is none)."""
        at: float = self._deadline_at
        kind: LimitKind = "deadline"
        if self.finished:
            if self._grace_at < at:
                at, kind = self._grace_at, "finish_grace"
            return (at, kind) if at != math.inf else (at, "none")
        if not self.output_seen and self._first_at < at:
            at, kind = self._first_at, "first_output"
        if self._idle_s is not None and self.seen_event:
            idle_at = self.last_event_at + self._idle_s
            if idle_at < at:
                at, kind = idle_at, "idle"
        return (at, kind) if at != math.inf else (at, "none")


Sink = Callable[[ProviderEvent], None]

#: A wake-up this close to its limit counts as on time (the loop may run a handle a clock
#: tick early).
_EARLY_TOLERANCE_S = 1e-6


class _Watchdog:
    """One lazily re-armed timer for the whole stream.

    Events only move the limits later — except the first event (the idle clock starts)
    and ``Finish`` (the grace starts), after which it is re-armed — so an event costs no
    timer work: when the timer fires it re-reads the
    rule and either re-arms at the new limit or cancels the task, recording which limit
    expired.
    """

    __slots__ = ("_handle", "_loop", "_task", "_timers", "armed_at", "expired")

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[object],
                 timers: StreamTimers) -> None:
        self._loop, self._task, self._timers = loop, task, timers
        self._handle: asyncio.TimerHandle | None = None
        self.armed_at = math.inf
        self.expired: LimitKind | None = None

    def arm(self) -> None:
        limit, _ = self._timers.next_limit()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.armed_at = limit
        if limit != math.inf:
            self._handle = self._loop.call_at(limit, self._fire)

    def _fire(self) -> None:
        self._handle = None
        limit, kind = self._timers.next_limit()
        if self._loop.time() + _EARLY_TOLERANCE_S >= limit:
            self.expired = kind
            self._task.cancel()
        else:
            self.armed_at = limit
            self._handle = self._loop.call_at(limit, self._fire)

    def disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


async def drive(events: AsyncIterator[ProviderEvent], attempt: AttemptInfo, sink: Sink) -> bool:
    """Pull ``events`` to the end under the Attempt's clocks, handing each to ``sink``.

    Returns whether a terminal frame (``Finish``) was seen. The iterator is always closed.

    Raises:
        ModelAttemptError: a limit expired, the run was stopped, or the adapter failed
            before the terminal frame (a failure after it is ignored: the response is
            complete as received).
    """
    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline_at = None if attempt.deadline is None else start + (attempt.deadline - time.time())
    cancel = attempt.cancel
    if cancel is not None and cancel.is_set:
        await _close(events)
        raise stopped(cancel.reason, sent=False)
    if deadline_at is not None and deadline_at <= start:
        await _close(events)
        raise deadline_exceeded(sent=False)
    task = asyncio.current_task()
    assert task is not None
    timers = StreamTimers(attempt, start=start, deadline_at=deadline_at)
    watchdog = _Watchdog(loop, task, timers)
    stop_requested = False

    def on_stop() -> None:
        nonlocal stop_requested
        stop_requested = True
        task.cancel()

    cancelling = task.cancelling()
    remove = cancel.add_callback(on_stop) if cancel is not None else None
    # Without an idle clock, an event after the first output changes nothing the rule reads
    # (only the idle clock reads the time of the last event) unless it is the terminal frame.
    idle = attempt.stream_idle_timeout_s is not None
    try:
        watchdog.arm()
        try:
            first = True
            async for event in events:
                sink(event)
                if idle or not timers.output_seen or type(event) is Finish:
                    timers.observe(event, loop.time())
                # Only two events can bring the limit forward: the first (the idle clock
                # starts) and the terminal frame (the finish grace starts).
                if first or type(event) is Finish:
                    first = False
                    watchdog.arm()
        finally:
            watchdog.disarm()
    except asyncio.CancelledError:
        if (watchdog.expired is None and not stop_requested) or task.uncancel() > cancelling:
            raise  # cancelled from outside as well: that cancellation wins
        if stop_requested:
            raise stopped(cancel.reason if cancel else None, sent=True) from None
        if watchdog.expired == "finish_grace":
            return True
        raise _expired(watchdog.expired, attempt) from None
    except ModelAttemptError:
        if timers.finished:
            return True
        raise
    except Exception as exc:
        if timers.finished:
            return True
        raise classify_exception(exc, sent=True) from exc
    finally:
        if remove is not None:
            remove()
        await _close(events)
    return timers.finished


def _expired(kind: LimitKind | None, attempt: AttemptInfo) -> ModelAttemptError:
    if kind == "first_output":
        return first_output_timeout(attempt.first_output_timeout_s)
    if kind == "idle":
        assert attempt.stream_idle_timeout_s is not None
        return idle_timeout(attempt.stream_idle_timeout_s)
    return deadline_exceeded()


async def _close(events: AsyncIterator[ProviderEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()
