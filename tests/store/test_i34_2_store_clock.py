"""Issue #34 (2): the store's clock as a process reads it — the offset from the quickest of a
few readings, so a process stalled in the middle of one (a loaded machine) does not misjudge
every lease by as long as it stalled; and each backend's clock against this machine's."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentloom.store import clock as store_clock
from agentloom.store import open_store
from agentloom.store.clock import StoreClock

AHEAD = 100.0


def _store_reading(stalls: list[float]) -> Callable[[], float]:
    """The store's time (``AHEAD`` seconds ahead), then a stall of the next of ``stalls``
    before the answer comes back."""
    def read() -> float:
        now = time.time() + AHEAD
        time.sleep(stalls.pop(0) if stalls else 0.0)
        return now
    return read


def test_i34_2_a_reading_stalled_midway_does_not_move_the_offset() -> None:
    clock = StoreClock(_store_reading([0.4, 0.0]))
    # the stalled reading alone would put the offset 0.2 s off; the quick one is kept
    assert abs(clock.offset_s() - AHEAD) < 0.05


def test_i34_2_a_slow_measurement_keeps_the_previous_offset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_clock, "REFRESH_S", 0.0)
    monkeypatch.setattr(store_clock, "SAMPLES", 1)
    monkeypatch.setattr(store_clock, "MAX_RTT_S", 0.1)
    stalls = [0.0, 0.5]
    clock = StoreClock(_store_reading(stalls))
    first = clock.offset_s()
    assert abs(first - AHEAD) < 0.05
    assert clock.offset_s() == first and stalls == []  # measured again, too slow to trust


def test_i34_2_each_backend_tells_its_time(durable_store_url: str) -> None:
    store = open_store(durable_store_url)
    try:
        assert abs(store.now() - time.time()) < 2.0  # one machine: the clocks agree
        assert abs(store.clock_offset_s()) < 2.0
    finally:
        store.close()
