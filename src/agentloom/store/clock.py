"""The store's clock: the one time base of leases and heartbeats (issue #34, 2).

Holders write when their lease expires and other processes judge whether it did; with each
process reading its own clock, a worker one hour ahead sees every healthy lease an hour
expired. So leases are written and judged in the *store's* time: the database server's clock
on PostgreSQL, the kernel clock as SQLite itself reads it (every process of one SQLite file
shares that kernel). Reading it each time would cost a round trip, so ``StoreClock`` measures
the offset between this process's clock and the store's now and then, and adds it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["REFRESH_S", "StoreClock"]

#: How often the offset is measured again (a stepped local clock is followed within this).
REFRESH_S = 5.0
SAMPLES = 5  # readings at most per measurement
GOOD_RTT_S = 0.02  # a reading this quick is kept at once
MAX_RTT_S = 0.5  # a measurement whose quickest reading is slower keeps the previous offset


class StoreClock:
    """``now()``: the store's time, from this process's clock plus the last measured offset
    (``read`` returns the store's time in seconds since the epoch)."""

    def __init__(self, read: Callable[[], float]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._offset = 0.0
        self._measured_at: float | None = None

    def offset_s(self) -> float:
        """The store's time minus this process's (positive: this clock is behind)."""
        with self._lock:
            mono = time.monotonic()
            if self._measured_at is None or mono - self._measured_at >= REFRESH_S:
                self._measure()
                self._measured_at = mono
            return self._offset

    def _measure(self) -> None:
        """The offset from the quickest of up to ``SAMPLES`` readings: its error is at most
        half its round trip, and a process stalled mid-reading (a loaded machine) would
        otherwise misjudge every lease by as long as it stalled. A reading slower than
        ``MAX_RTT_S`` keeps the previous offset, when there is one."""
        best: tuple[float, float] | None = None  # (round trip, offset)
        for _ in range(SAMPLES):
            before = time.time()
            store_now = self._read()
            after = time.time()
            sample = (after - before, store_now - (before + after) / 2)
            if best is None or sample[0] < best[0]:
                best = sample
            if best[0] <= GOOD_RTT_S:
                break
        assert best is not None
        if best[0] <= MAX_RTT_S or self._measured_at is None:
            self._offset = best[1]

    def now(self) -> float:
        return time.time() + self.offset_s()
