"""MCP benchmark (issue #15, acceptance 6): what an AgentLoom MCP tool call costs next to the bare
``mcp`` client's ``call_tool`` on the same server, in the same run of this script.

Run from the repository root::

    python bench/mcp.py                 # 300 calls each way (about half a minute)
    python bench/mcp.py --calls 100 --json

Both sides talk to the same stdio server (``tests/mcp/servers/lab.py``, the tests' lab server)
and call its trivial ``echo`` tool:

* **bare**: the SDK's ``mcp.Client`` (the baseline issue #15 names), one connection,
  ``call_tool`` in a loop; the low-level ``mcp.ClientSession`` over
  ``mcp.client.stdio.stdio_client`` is printed beside it for reference;
* **AgentLoom**: a runtime built from a YAML config (``mcp_servers``, SQLite file store in a
  temporary folder, ``sandbox: {backend: none}`` so both sides run the same unconfined process)
  and ``bus.request("mcp__lab__echo", …)`` in a loop inside one run: every call is an operation
  of the recorded pipeline (intent, Attempt, raw and effective result, commit).

First both sides run **side by side**: both connections open, timed in alternating blocks of
10 back-to-back calls, so that a drift of this shared machine during the run falls on both
alike (the first call of a block, which follows the other side's block, is not timed). Then
each side runs in its own loop, one after the other, as below.

A third side alternates with them: the **durability floor**, what any recorder that keeps the
promise "a call cut off by a crash is never sent again, even after a power loss" must add to
the bare call, with nothing else: one synced SQLite commit of a one-row intent before the call
(WAL, ``synchronous=FULL``, as AgentLoom's store) and one unsynced commit of its result after
it, on a second bare connection to its own server process. Its ratio to the bare call is what
no pipeline can go below on this disk; AgentLoom's ratio above it is AgentLoom's own work.

Printed: the median and p95 per call of each side, the ratio of the medians (target ≤ 1.5×),
and how many server processes the AgentLoom run opened for its calls (target: 1). To tell
AgentLoom's own work from the disk's, the AgentLoom loop also runs with the SQLite file on tmpfs
(``/dev/shm``: a disk sync costs nothing there) and on the memory store, and the script measures
what one synced SQLite commit costs on the disk of the temporary folder (a side-effecting call
syncs once: its intent, before the server is called). Every figure is measured in this run; the
targets are the only constants. The median of the SDK's own ``send_request`` inside the
AgentLoom loop is printed too: the same round trip, timed in this script by wrapping the SDK's
method, takes longer there than in the bare loop's tight back-to-back calls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

# run as ``python bench/mcp.py``, this file's folder is first on sys.path and its name would
# hide the ``mcp`` package: take the folder off before importing it
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from mcp.client.stdio import stdio_client  # noqa: E402

from agentloom.assembly import runtime_from_config  # noqa: E402
from agentloom.config import load_config  # noqa: E402
from mcp import Client, ClientSession, StdioServerParameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "tests" / "mcp" / "servers" / "lab.py"
TARGET_RATIO = 1.5
TARGET_PROCESSES = 1
WARMUP = 10
BLOCK = 10


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_us": statistics.median(ordered) * 1e6,
            "p95_us": ordered[int(0.95 * (len(ordered) - 1))] * 1e6, "calls": len(ordered)}


Call = Callable[[int], Awaitable[None]]
"""One call of ``echo`` with ``hi <i>``; raises if it did not succeed."""


def _bare_call(call_tool: Any) -> Call:
    async def call(i: int) -> None:
        result = await call_tool("echo", {"text": f"hi {i}"})
        assert not result.is_error, result
    return call


def _loom_call(kernel: Any, ctx: Any) -> Call:
    async def call(i: int) -> None:
        result = await kernel.bus.request("mcp__lab__echo", {"text": f"hi {i}"}, ctx)
        assert result.outcome == "succeeded", result
    return call


class Floor:
    """The durability floor's record (see the module docstring): a SQLite file in WAL mode,
    one row per call, its intent committed synced before the call and its result unsynced
    after it — the store's two commits of a side-effecting call, each of one row."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE calls (call_id INTEGER PRIMARY KEY, status TEXT NOT NULL, "
                        "data TEXT NOT NULL)")

    def commit(self, sql: str, params: tuple[Any, ...], *, sync: bool) -> None:
        self.db.execute(f"PRAGMA synchronous={'FULL' if sync else 'NORMAL'}")
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute(sql, params)
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()


def _floor_call(call_tool: Any, floor: Floor) -> Call:
    async def call(i: int) -> None:
        arguments = {"text": f"hi {i}"}
        floor.commit("INSERT INTO calls VALUES (?, 'started', ?)", (i, json.dumps(arguments)),
                     sync=True)
        result = await call_tool("echo", arguments)
        assert not result.is_error, result
        floor.commit("UPDATE calls SET status = 'succeeded', data = ? WHERE call_id = ?",
                     (result.model_dump_json(), i), sync=False)
    return call


async def _timed(call: Call, i: int) -> float:
    start = time.perf_counter()
    await call(i)
    return time.perf_counter() - start


async def _echo_loop(call: Call, calls: int) -> dict[str, float]:
    """Time ``call`` ``calls`` times after ``WARMUP`` untimed calls."""
    samples = [await _timed(call, i) for i in range(WARMUP + calls)]
    return _summary(samples[WARMUP:])


async def bare(calls: int) -> dict[str, float]:
    """``call_tool`` of the low-level ``mcp.ClientSession``, one session."""
    params = StdioServerParameters(command=sys.executable, args=[str(LAB)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await _echo_loop(_bare_call(session.call_tool), calls)


async def bare_client(calls: int) -> dict[str, float]:
    """``call_tool`` of the SDK's high-level ``mcp.Client`` (the baseline the issue names), one
    connection, the 2025-11-25 handshake (``mode="legacy"``: no probe)."""
    params = StdioServerParameters(command=sys.executable, args=[str(LAB)])
    async with Client(params, mode="legacy") as client:
        return await _echo_loop(_bare_call(client.call_tool), calls)


class SendTimer:
    """The durations of the SDK's own ``ClientSession.send_request`` (the round trip AgentLoom
    asks of the ``mcp`` client) while ``on``: what the same SDK call costs inside AgentLoom's
    loop, to set beside the bare loop's whole call. Installed by wrapping the SDK's method in
    this script only (``timing_sends``)."""

    def __init__(self) -> None:
        self.on = True
        self.durations: list[float] = []


@contextlib.contextmanager
def timing_sends() -> Iterator[SendTimer]:
    timer = SendTimer()
    original = ClientSession.send_request

    async def timed(self: ClientSession, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await original(self, *args, **kwargs)
        finally:
            if timer.on:
                timer.durations.append(time.perf_counter() - start)

    ClientSession.send_request = timed  # type: ignore[method-assign]
    try:
        yield timer
    finally:
        ClientSession.send_request = original  # type: ignore[method-assign]


CONFIG = """\
version: 1
agents:
  main:
    model: {{builtin: test}}
    tools: ["mcp.lab.*"]
mcp_servers:
  lab: {{transport: stdio, command: {python}, args: [{lab}]}}
sandbox: {{backend: none}}
"""


def _runtime(folder: Path, store: str | None) -> Any:
    """A runtime of ``CONFIG`` on ``store`` (default: a SQLite file in ``folder``)."""
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG.format(python=json.dumps(sys.executable), lab=json.dumps(str(LAB))),
                      encoding="utf-8")
    return runtime_from_config(load_config(config), store=store or f"sqlite:///{folder / 'bench.db'}")


async def agentloom(calls: int, folder: Path, store: str | None = None) -> dict[str, Any]:
    """``bus.request`` of the MCP tool through the recorded pipeline, one run, on ``store``
    (default: a SQLite file in ``folder``)."""
    rt = _runtime(folder, store)
    try:
        kernel = rt.kernel
        lease = await kernel.start_run()
        with timing_sends() as sends:
            summary = await _echo_loop(
                _loom_call(kernel, kernel.invocation_context(lease, release_id=rt.release_id)),
                calls)
        opened = kernel.mcp_sessions.opened
        await kernel.end_run(lease, "succeeded")
        return {**summary, "processes": opened,
                "send_median_us": statistics.median(sends.durations[WARMUP:]) * 1e6}
    finally:
        await rt.aclose()


async def _alternate(sides: list[tuple[Call, list[float]]], loom_call: Call, calls: int,
                     sends: SendTimer) -> None:
    """Warm every connection, then time alternating blocks of calls, one block of each side
    in turn, until each has ``calls`` samples (``side_by_side``)."""
    for i in range(WARMUP):  # every connection open and warm
        for call, _ in sides:
            await call(i)
    sends.durations.clear()
    n = WARMUP
    while len(sides[0][1]) < calls:
        for call, samples in sides:
            for k in range(BLOCK + 1):
                # the SDK's round trips of the timed AgentLoom calls only
                sends.on = call is loom_call and k > 0
                took = await _timed(call, n)
                n += 1
                if k:
                    samples.append(took)


async def side_by_side(calls: int, folder: Path, store: str | None = None) -> dict[str, Any]:
    """The bare ``mcp.Client``, AgentLoom on SQLite and the durability floor, all open at
    once (one server process each), timed in alternating blocks of ``BLOCK`` back-to-back
    calls: a drift of the machine during the run (other tenants, the disk) falls on every side
    alike, and each side's calls inside a block are as tight as in its own loop. The first call
    of each block is not timed (it follows another side's block). ``store``: AgentLoom's store
    (default: a SQLite file in ``folder``); the floor's file is in ``folder`` too."""
    rt = _runtime(folder, store)
    params = StdioServerParameters(command=sys.executable, args=[str(LAB)])
    bare_samples: list[float] = []
    loom_samples: list[float] = []
    floor_samples: list[float] = []
    floor = Floor(folder / "floor.db")
    try:
        kernel = rt.kernel
        lease = await kernel.start_run()
        loom_call = _loom_call(kernel, kernel.invocation_context(lease, release_id=rt.release_id))
        with timing_sends() as sends:
            async with Client(params, mode="legacy") as client, \
                    Client(params, mode="legacy") as floor_client:
                await _alternate([(_bare_call(client.call_tool), bare_samples),
                                  (loom_call, loom_samples),
                                  (_floor_call(floor_client.call_tool, floor), floor_samples)],
                                 loom_call, calls, sends)
        opened = kernel.mcp_sessions.opened
        await kernel.end_run(lease, "succeeded")
    finally:
        floor.close()
        await rt.aclose()
    bare, loom, floored = (_summary(s) for s in (bare_samples, loom_samples, floor_samples))
    return {"bare": bare, "agentloom": loom, "floor": floored, "block": BLOCK,
            "processes": opened,
            "agentloom_calls": WARMUP + len(loom_samples) // BLOCK * (BLOCK + 1),
            "send_median_us": statistics.median(sends.durations) * 1e6,
            "ratio": loom["median_us"] / bare["median_us"],
            "floor_ratio": floored["median_us"] / bare["median_us"]}


def disk_sync_us(folder: Path, commits: int = 200) -> float:
    """The median cost of one fsync'd SQLite WAL commit in ``folder`` minus that of an unsynced
    one: what the disk adds to a commit that must survive a power cut."""
    import sqlite3

    def median_commit(sync: str) -> float:
        path = folder / f"sync-{sync}.db"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
        samples = []
        for i in range(commits):
            start = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (v) VALUES (?)", (f"row {i}",))
            conn.execute("COMMIT")
            samples.append(time.perf_counter() - start)
        conn.close()
        return statistics.median(samples) * 1e6

    return median_commit("FULL") - median_commit("NORMAL")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-mcp-") as tmp:
        paired = asyncio.run(side_by_side(args.calls, Path(tmp)))
        sync_us = disk_sync_us(Path(tmp))
    # the same on a folder in memory (tmpfs: an fsync costs nothing) and on the memory store:
    # what AgentLoom's own work costs, apart from the disk
    shm = Path("/dev/shm")
    tmpfs = None
    if shm.is_dir():
        with tempfile.TemporaryDirectory(prefix="agentloom-bench-mcp-", dir=shm) as tmp:
            tmpfs = asyncio.run(side_by_side(args.calls, Path(tmp)))
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-mcp-") as tmp:
        memory = asyncio.run(side_by_side(args.calls, Path(tmp), store="memory://"))
    # each side in its own loop, one after the other
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-mcp-") as tmp:
        loom = asyncio.run(agentloom(args.calls, Path(tmp)))
    session = asyncio.run(bare(args.calls))
    base = asyncio.run(bare_client(args.calls))
    report = {"side_by_side": {"sqlite": paired, "sqlite_tmpfs": tmpfs, "memory": memory},
              "own_loops": {"bare": base, "bare_session": session, "agentloom_sqlite": loom,
                            "ratio": loom["median_us"] / base["median_us"]},
              "disk_sync_us": sync_us,
              "targets": {"ratio_at_most": TARGET_RATIO, "processes": TARGET_PROCESSES}}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"MCP tool call, stdio server {LAB.name} 'echo', {args.calls} calls each way, one run")
    print(f"side by side: both connections open, alternating blocks of {BLOCK} calls")
    print(f"  bare mcp.Client.call_tool          median {paired['bare']['median_us']:9,.1f} µs   "
          f"p95 {paired['bare']['p95_us']:9,.1f} µs")
    print(f"  AgentLoom bus.request (SQLite)     median {paired['agentloom']['median_us']:9,.1f} µs   "
          f"p95 {paired['agentloom']['p95_us']:9,.1f} µs")
    print(f"  ratio of medians                   {paired['ratio']:.2f}×   (target ≤ {TARGET_RATIO}×)")
    print(f"    of which the SDK's send_request  median {paired['send_median_us']:9,.1f} µs   "
          "(the same round trip, inside AgentLoom's call)")
    print(f"  durability floor (SQLite)          median {paired['floor']['median_us']:9,.1f} µs   "
          f"ratio {paired['floor_ratio']:.2f}×   (the bare call between a synced one-row "
          "commit and an unsynced one)")
    for name, side in (("SQLite file on tmpfs", tmpfs), ("memory store", memory)):
        if side is not None:
            print(f"  AgentLoom, {name:22}  median {side['agentloom']['median_us']:9,.1f} µs   "
                  f"ratio {side['ratio']:.2f}×   (bare beside it "
                  f"{side['bare']['median_us']:,.0f} µs; the floor beside it "
                  f"{side['floor_ratio']:.2f}×)")
    print(f"  one disk sync of a SQLite commit   {sync_us:9,.1f} µs   (one per side-effecting "
          "call: its intent, before the server is called)")
    print(f"  server processes for AgentLoom's {paired['agentloom_calls']} calls  "
          f"{paired['processes']}   (target {TARGET_PROCESSES})")
    print("each in its own loop, one after the other")
    print(f"  bare mcp.Client.call_tool          median {base['median_us']:9,.1f} µs   "
          f"p95 {base['p95_us']:9,.1f} µs")
    print(f"  bare mcp ClientSession.call_tool   median {session['median_us']:9,.1f} µs   "
          f"p95 {session['p95_us']:9,.1f} µs   (the low-level session, for reference)")
    print(f"  AgentLoom bus.request (SQLite)     median {loom['median_us']:9,.1f} µs   "
          f"p95 {loom['p95_us']:9,.1f} µs   ratio {report['own_loops']['ratio']:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
