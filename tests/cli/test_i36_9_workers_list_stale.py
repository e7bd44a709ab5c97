"""Issue #36, point 9: ``agentloom workers list`` shows a SIGKILLed worker as ``stale`` — with
``last seen N s ago`` — once its heartbeat is older than its lease, and the runs a worker holds
are read from the store's current holder of each run, never from the worker's own last row.

A real ``agentloom worker`` process on a SQLite store drives a run (an ``exec sleep 60``) and is
SIGKILLed mid-call; the lease is kept short through the config (``workers.lease_ttl_s: 4``:
a heartbeat every 1.3 s). A second worker then takes the run over and finishes it: the dead
worker's row still names the run, and ``workers list`` must not.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentloom.store import open_store
from agentloom.store.holders import parse_holder
from agentloom.store.workers import all_workers

from .support import SUBPROCESS_TIMEOUT_S, Cli, agentloom, spawn, write_project

SLEEPY = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [sleep, "60"], timeout_s: 120}
  - text: went on
"""
LEASE_S = 4.0
FAST_LEASES = f"workers: {{lease_ttl_s: {LEASE_S}, takeover_grace_s: 1, poll_s: 0.5}}\n"
WAIT_S = 90.0
T = TypeVar("T")


def _until(what: str, probe: Callable[[], T | None]) -> T:
    deadline = time.monotonic() + WAIT_S
    while True:
        got = probe()
        if got is not None:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _worker(cli: Cli, pid: int, *more: str) -> dict[str, Any] | None:
    found = [w for w in cli.json("workers", "list", "--store", cli.store, *more)
             if parse_holder(w["worker_id"]).pid == pid]
    return found[0] if found else None


def test_i36_9_a_killed_worker_is_stale_and_holds_only_what_the_store_says(
        tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", SLEEPY, tools=["exec"], extra=FAST_LEASES)
    run_id = cli.json("submit", str(config), "sleep", "--store", cli.store)["run_id"]
    holder = spawn("worker", str(config), "--store", cli.store, cwd=tmp_path)
    try:
        def exec_started() -> bool | None:
            assert holder.poll() is None, holder.communicate()
            shown = cli.json("runs", "show", run_id, "--store", cli.store)
            ops = [o for o in shown["operations"] if o["capability"] == "exec"]
            return True if ops and ops[0]["attempts"]["items"] else None

        _until("the exec call's start", exec_started)
        live = _worker(cli, holder.pid)
        assert live is not None and live["state"] == "live" and live["alive"], live
        assert live["held"] == [run_id] and live["last_seen_s"] <= LEASE_S
        assert live["lease_s"] == LEASE_S
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=SUBPROCESS_TIMEOUT_S)

    def stale() -> dict[str, Any] | None:
        shown = _worker(cli, holder.pid)  # without --all: a stale worker holding a run shows
        assert shown is not None and shown["state"] in ("live", "stale"), shown
        return shown if shown["state"] == "stale" else None

    dead = _until("the killed worker to be stale", stale)
    assert dead["alive"] is False and dead["last_seen_s"] >= LEASE_S, dead  # rounded to 0.1 s
    assert dead["held"] == [run_id]  # the store still names it the run's holder
    listed = cli("workers", "list", "--store", cli.store)
    assert listed.exit_code == 0, listed.stderr
    (line,) = [x for x in listed.stdout.splitlines() if x.startswith(dead["worker_id"])]
    assert f"  stale (no heartbeat for longer than its {LEASE_S:g} s lease" in line, line
    assert " last seen " in line and " s ago " in line and f"holds {run_id}" in line, line

    taken = agentloom("worker", str(config), "--once", "--store", cli.store, "--json",
                      cwd=tmp_path)  # the holder is gone: the run is taken over and ends
    assert taken.returncode == 0, taken.stderr
    assert cli.json("runs", "show", run_id, "--store", cli.store)["status"] == "succeeded"

    everyone = cli.json("workers", "list", "--store", cli.store, "--all")
    by_pid = {parse_holder(w["worker_id"]).pid: w for w in everyone}
    assert len(by_pid) == 2, everyone
    gone = by_pid[holder.pid]
    assert gone["state"] == "stale" and gone["held"] == [], gone
    store = open_store(cli.store)
    try:  # what its own last heartbeat said, which the listing must not repeat
        (row,) = [w for w in all_workers(store) if w.worker_id == gone["worker_id"]]
    finally:
        store.close()
    assert row.data["held"] == [run_id]
    (other,) = [w for pid, w in by_pid.items() if pid != holder.pid]
    assert other["state"] == "stopped" and other["held"] == [], other
    assert {"worker_id", "host", "pid", "state", "alive", "started_at", "heartbeat_at",
            "heartbeat_age_s", "last_seen_s", "concurrency", "held", "agents",
            "clock_skew_s"} <= set(gone)
