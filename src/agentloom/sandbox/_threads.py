"""Reused threads for the sandbox's supervisors and output drains.

Starting a thread costs a few hundred microseconds, and every execution needs three (its
supervisor and two drains). ``THREADS.run(fn)`` hands ``fn`` to an idle cached thread, or
starts one when none is idle; a thread goes back to the cache when its call returns, and
exits when the cache already holds ``MAX_IDLE``. A supervisor's call returns only after its
launcher is reaped, so bubblewrap's ``--die-with-parent`` (tied to the forking thread) never
fires early.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger("agentloom.sandbox")

MAX_IDLE = 32

Call = Callable[[], None]


class ThreadCache:
    """Run calls on reused daemon threads; thread-safe."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Call]] = []

    def run(self, call: Call) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._work, args=(inbox,), name=self._name, daemon=True).start()
        inbox.put(call)

    def _work(self, inbox: queue.SimpleQueue[Call]) -> None:
        while True:
            call = inbox.get()
            try:
                call()
            except BaseException:  # a call never takes its thread down silently
                log.exception("sandbox: a %s call failed", self._name)
            with self._lock:
                if len(self._idle) >= MAX_IDLE:
                    return
                self._idle.append(inbox)


THREADS = ThreadCache("sandbox-worker")
