"""The host under load (issue 18, acceptance 4): many API clients creating and polling runs
of ``agentloom serve`` at once, then many SSE subscribers following runs, on SQLite and
PostgreSQL, in one run of this script.

Run from the repository root::

    python bench/host.py                       # 200 clients × 60 s, 500 subscribers, both stores
    python bench/host.py --quick               # 20 clients × 5 s, 50 subscribers (what CI runs)
    python bench/host.py --backends sqlite     # one store
    python bench/host.py --json                # JSON on stdout, the table on stderr

The agent runs on the offline script model, three steps per run: an ``fs.write``, an
``fs.read`` and a final text answer — no ``exec``: the figures are the host's and the recorded
pipeline's, not the sandbox's. Each backend gets a fresh store (a SQLite file in a temporary
folder, or a fresh schema of the PostgreSQL server ``--store-base``, dropped at the end) and an
API key made with ``agentloom keys create --json``.

**Load.** ``agentloom serve CONFIG --store URL --concurrency C`` (its child ``agentloom
worker`` process drives the runs; the API wakes it when a run is queued). ``--clients``
asyncio clients (one ``httpx2`` connection pool) each loop for ``--seconds``: ``POST
/v1/runs``, then ``GET /v1/runs/{id}`` every ``--poll`` seconds until the run ended; a client
busy with a run at the deadline follows it to its end (at most ``--drain`` seconds more).
Printed: requests/s and runs/s over the whole phase, p50 / p99 / max latency per request kind,
errors (a non-2xx answer or a transport error, with samples), runs that ended otherwise than
``succeeded`` and lost runs: created but not ended after the drain, or missing from ``GET
/v1/runs`` (read page by page at the end).

**SSE.** ``agentloom serve --no-execute`` on the same store; ``--sse-runs`` runs are queued
through the API and ``--subscribers`` clients (spread evenly over them) open
``GET /v1/runs/{id}/events``; once every subscriber has its run's ``run.started``, one
``agentloom worker --once --concurrency C`` drives the runs, so the other events reach the
subscribers live. Each subscriber's messages must be exactly its run's events as the stream
replays them after the run ended — every event once, in order (``id`` 1, 2, …), with the same
data — and the run's tool and model events must match ``GET /v1/runs/{id}/operations`` (two
per operation). Printed: events expected and received, duplicates, missing, out of order,
differing, streams that did not end, and the delivery lag (receipt minus the event's ``at``).

``PASS`` needs, per backend: 0 errors, 0 lost runs, every run ``succeeded``, every subscriber
every event once. Exit status 1 on a ``FAIL``; an unreachable PostgreSQL is a ``SKIP``.
Every figure printed is measured in this run; there is no target constant.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import os
import platform
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx2

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
ENDED = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
STEPS = 3
TURNS = """\
turns:
  - tool_calls:
      - {name: fs_write, arguments: {path: note.txt, content: "load"}}
  - tool_calls:
      - {name: fs_read, arguments: {path: note.txt}}
  - text: done
"""
CONFIG = """\
version: 1
agents:
  main:
    model: {{builtin: script, path: turns.yaml}}
    tools: [fs.read, fs.write]
workspace: {{root: {root}, keep: false}}
"""
WORKERS = "workers: {{poll_s: {poll}}}\n"
ACTOR, PROJECT = "bench", "load"
START_TIMEOUT_S = 60.0
STOP_WAIT_S = 60.0
GRACEFUL = frozenset({0, -signal.SIGTERM})
REQUEST_TIMEOUT_S = 120.0
SAMPLES = 5  # error and lost-run samples kept for the report
QUICK = {"clients": 20, "seconds": 5.0, "subscribers": 50, "sse_runs": 10}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- setup ---------------------------------------------------------------------------------


def write_config(folder: Path, turns: str = TURNS, worker_poll: float | None = None) -> Path:
    """The bench agent's config and its script (``turns``) in ``folder``; ``worker_poll``:
    its ``workers.poll_s`` (unset: the default)."""
    (folder / "turns.yaml").write_text(turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    text = CONFIG.format(root=json.dumps(str(folder / "workspaces")))
    if worker_poll is not None:
        text += WORKERS.format(poll=worker_poll)
    config.write_text(text, encoding="utf-8")
    return config


def pg_unreachable(base: str) -> str | None:
    try:
        import psycopg

        with psycopg.connect(base, connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL at {base} is unreachable: {type(exc).__name__}: {exc}"


def store_url(backend: str, folder: Path, base: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{folder / 'agentloom.db'}"
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema=bench_h_{uuid.uuid4().hex[:12]}"


def drop_store(url: str) -> None:
    if not url.startswith("postgres"):
        return
    from agentloom.store import open_store

    store = open_store(url)
    try:
        store.drop_schema()  # type: ignore[attr-defined]
    finally:
        store.close()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}


def agentloom(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=config.parent,
                          env=_env(), capture_output=True, text=True, timeout=120)


def create_key(config: Path, url: str) -> str:
    """``agentloom keys create --json``: a key for the bench's actor (the store is made)."""
    done = agentloom(config, "keys", "create", "--actor", ACTOR, "--project", PROJECT,
                     "--store", url, "--json")
    if done.returncode != 0:
        raise RuntimeError(f"agentloom keys create exited {done.returncode}: {done.stderr}")
    return str(json.loads(done.stdout)["key"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(slots=True)
class Proc:
    """A process of the bench, its output in a file beside the config."""

    proc: subprocess.Popen[bytes]
    out: Path

    def tail(self) -> str:
        text = self.out.read_text(encoding="utf-8", errors="replace").strip()
        return " | ".join(text.splitlines()[-5:])

    def stop(self, wait_s: float = 0.0) -> int | None:
        """Its exit code: after ``wait_s`` seconds a SIGTERM (a graceful stop), after
        ``STOP_WAIT_S`` more a SIGKILL (None then)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=wait_s)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def spawn(config: Path, tag: str, *args: str) -> Proc:
    out = config.parent / f"{tag}.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "agentloom", *args], cwd=config.parent,
                                env=_env(), stdout=sink, stderr=subprocess.STDOUT)
    return Proc(proc, out)


def serve(config: Path, url: str, *, concurrency: int, execute: bool, tag: str) -> tuple[Proc, str]:
    """``agentloom serve`` on a free port; returned with its base URL once /health answers."""
    port = free_port()
    proc = spawn(config, tag, "serve", str(config), "--store", url, "--port", str(port),
                 "--concurrency", str(concurrency), *([] if execute else ["--no-execute"]))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.proc.poll() is not None:
            raise RuntimeError(f"agentloom serve exited {proc.proc.returncode}: {proc.tail()}")
        with contextlib.suppress(httpx2.HTTPError):
            if httpx2.get(base + "/health", timeout=2).status_code == 200:
                return proc, base
        if time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError(f"agentloom serve did not answer /health in {START_TIMEOUT_S} s: "
                               f"{proc.tail()}")
        time.sleep(0.1)


# -- figures ------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p`` percentile (0 < p ≤ 1) of ``values``."""
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered)) - 1, 0)]


def spread(values_s: list[float]) -> dict[str, Any]:
    """Count, p50, p99 and max in milliseconds (None without values)."""
    if not values_s:
        return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    ms = [v * 1000 for v in values_s]
    return {"count": len(ms), "p50_ms": percentile(ms, 0.5), "p99_ms": percentile(ms, 0.99),
            "max_ms": max(ms)}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- load phase ---------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """What the load clients saw: latencies per request kind, errors, the runs they made."""

    latencies: dict[str, list[float]] = field(
        default_factory=lambda: {"create": [], "get": [], "list": []})
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    created: dict[str, str] = field(default_factory=dict)  # run id → last status seen

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < SAMPLES:
            self.error_samples.append(what)


async def call(client: httpx2.AsyncClient, tally: Tally, kind: str, method: str, path: str,
               body: Any = None) -> Any:
    """One timed request; its JSON, or None after an error (counted, a sample kept)."""
    start = time.perf_counter()
    try:
        response = await client.request(method, path, json=body)
    except httpx2.HTTPError as exc:
        tally.error(f"{method} {path}: {type(exc).__name__}: {exc}")
        return None
    tally.latencies[kind].append(time.perf_counter() - start)
    if not 200 <= response.status_code < 300:
        tally.error(f"{method} {path}: {response.status_code} {response.text[:300]}")
        return None
    return response.json()


async def load_client(client: httpx2.AsyncClient, tally: Tally, number: int, *,
                      until: float, drain_until: float, poll_s: float) -> None:
    """Create a run, poll it until it ended, again, until ``until``; the run in hand at that
    moment is followed until ``drain_until``."""
    made = 0
    while time.monotonic() < until:
        run = await call(client, tally, "create", "POST", "/v1/runs",
                         {"task": f"load client {number} run {made}"})
        made += 1
        if run is None:
            await asyncio.sleep(poll_s)
            continue
        run_id = str(run["run_id"])
        tally.created[run_id] = str(run["status"])
        while tally.created[run_id] not in ENDED and time.monotonic() < drain_until:
            await asyncio.sleep(poll_s)
            seen = await call(client, tally, "get", "GET", f"/v1/runs/{run_id}")
            if seen is not None:
                tally.created[run_id] = str(seen["status"])


async def listed_runs(client: httpx2.AsyncClient, tally: Tally) -> dict[str, str] | None:
    """Every run ``GET /v1/runs`` lists for the key, page by page; None after an error."""
    found: dict[str, str] = {}
    cursor: str | None = None
    while True:
        query = "/v1/runs?limit=200" + (f"&cursor={cursor}" if cursor else "")
        page = await call(client, tally, "list", "GET", query)
        if page is None:
            return None
        found.update({item["run_id"]: item["status"] for item in page["items"]})
        cursor = page["next_cursor"]
        if cursor is None:
            return found


async def load_phase(base: str, key: str, *, clients: int, seconds: float, poll_s: float,
                     drain_s: float) -> dict[str, Any]:
    tally = Tally()
    limits = httpx2.Limits(max_connections=clients + 1, max_keepalive_connections=clients + 1)
    async with httpx2.AsyncClient(base_url=base, limits=limits, timeout=REQUEST_TIMEOUT_S,
                                  headers={"Authorization": f"Bearer {key}"}) as client:
        cpu0 = self_cpu_s()
        start = time.monotonic()
        until = start + seconds
        await asyncio.gather(*(load_client(client, tally, n, until=until,
                                           drain_until=until + drain_s, poll_s=poll_s)
                               for n in range(clients)))
        wall = time.monotonic() - start
        cpu = self_cpu_s() - cpu0
        listed = await listed_runs(client, tally)
    return load_figures(tally, listed, clients=clients, seconds=seconds, wall=wall,
                        client_cpu=cpu)


def load_figures(tally: Tally, listed: dict[str, str] | None, *, clients: int, seconds: float,
                 wall: float, client_cpu: float) -> dict[str, Any]:
    requests = sum(len(v) for k, v in tally.latencies.items() if k != "list") + tally.errors
    unended = [r for r, status in tally.created.items() if status not in ENDED]
    unlisted = [] if listed is None else [r for r in tally.created if r not in listed]
    lost = sorted({*unended, *unlisted})
    statuses = Counter(tally.created.values())
    not_succeeded = sum(n for s, n in statuses.items() if s != "succeeded")
    problems = []
    if tally.errors:
        problems.append(f"{tally.errors} request error(s), e.g. {tally.error_samples[0]}")
    if lost:
        problems.append(f"{len(lost)} lost run(s) ({len(unended)} not ended after the drain, "
                        f"{len(unlisted)} missing from GET /v1/runs), e.g. {lost[:SAMPLES]}")
    if listed is None:
        problems.append("GET /v1/runs failed: the lost-run check against the list did not run")
    if not_succeeded:
        problems.append(f"run statuses {dict(statuses)}: {not_succeeded} did not succeed")
    if not tally.created:
        problems.append("no run was created")
    return {"clients": clients, "seconds": seconds, "wall_s": wall, "requests": requests,
            "requests_per_s": requests / wall, "runs_created": len(tally.created),
            "runs_per_s": len(tally.created) / wall, "client_cpu_s": client_cpu,
            "latency": {kind: spread(values) for kind, values in tally.latencies.items()},
            "errors": tally.errors, "error_samples": tally.error_samples,
            "lost_runs": len(lost), "lost_samples": lost[:SAMPLES],
            "not_ended": len(unended), "missing_from_list": len(unlisted),
            "listed": None if listed is None else len(listed), "statuses": dict(statuses),
            "problems": problems, "ok": not problems}


# -- SSE phase ----------------------------------------------------------------------------


def sse_messages(lines: list[str]) -> list[dict[str, Any]]:
    """The messages of an SSE stream: ``id``, ``event`` and the JSON ``data`` (comments
    dropped)."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in [*lines, ""]:
        if line == "":
            if current:
                messages.append(current)
            current = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            current[name] = json.loads(value) if name == "data" else value
    return messages


@dataclass(slots=True)
class Subscription:
    run_id: str
    lines: list[str] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)
    ended: bool = False
    error: str | None = None


async def subscribe(client: httpx2.AsyncClient, sub: Subscription, started: asyncio.Event,
                    on_first: asyncio.Semaphore) -> None:
    """Read the run's stream to its end; ``on_first`` is released at its first message."""
    first = True
    try:
        async with client.stream("GET", f"/v1/runs/{sub.run_id}/events") as response:
            if response.status_code != 200:
                sub.error = f"{response.status_code} {(await response.aread())[:300]!r}"
                return
            async for line in response.aiter_lines():
                sub.lines.append(line)
                if line.startswith("data:"):
                    if started.is_set():
                        sub.lags.append(time.time() - float(json.loads(line[5:])["at"]))
                    if first:
                        first = False
                        on_first.release()
        sub.ended = True
    except httpx2.HTTPError as exc:
        sub.error = f"{type(exc).__name__}: {exc}"
    finally:
        if first:
            on_first.release()


def compare(received: list[dict[str, Any]], stored: list[dict[str, Any]]) -> Counter[str]:
    """How one subscriber's messages differ from the run's stored events: ``duplicates``
    (an id seen again), ``missing``, ``out_of_order`` (an id lower than the one before) and
    ``differing`` (an id whose event or data is not the stored one)."""
    found: Counter[str] = Counter()
    by_id = {m["id"]: m for m in stored}
    ids = [m.get("id") for m in received]
    found["duplicates"] = len(ids) - len(set(ids))
    found["missing"] = len(set(by_id) - set(ids))
    found["out_of_order"] = sum(1 for a, b in itertools.pairwise(ids)
                                if int(a or 0) >= int(b or 0))
    found["differing"] = sum(1 for m in received if by_id.get(m.get("id")) != m)
    return found


async def operations_match(client: httpx2.AsyncClient, run_id: str,
                           stored: list[dict[str, Any]]) -> str | None:
    """Why the run's call events do not match its operations (two per operation), or None."""
    response = await client.get(f"/v1/runs/{run_id}/operations")
    if response.status_code != 200:
        return f"GET /v1/runs/{run_id}/operations: {response.status_code} {response.text[:300]}"
    ops = {op["operation_id"] for op in response.json()["items"]}
    calls = Counter(m["data"].get("operation_id") for m in stored
                    if m["event"].endswith((".started", ".completed"))
                    and not m["event"].startswith("run."))
    if set(calls) != ops or any(n != 2 for n in calls.values()):
        return f"run {run_id}: events per operation {dict(calls)}, operations {sorted(ops)}"
    return None


async def replay(client: httpx2.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    """The run's whole stream read after it ended: its stored events."""
    async with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
        response.raise_for_status()
        return sse_messages([line async for line in response.aiter_lines()])


async def sse_phase(config: Path, url: str, base: str, key: str, *, subscribers: int, runs: int,
                    concurrency: int, timeout_s: float) -> dict[str, Any]:
    limits = httpx2.Limits(max_connections=subscribers + 8,
                           max_keepalive_connections=subscribers + 8)
    async with httpx2.AsyncClient(base_url=base, limits=limits, timeout=REQUEST_TIMEOUT_S,
                                  headers={"Authorization": f"Bearer {key}"}) as client:
        run_ids = []
        for n in range(runs):
            response = await client.post("/v1/runs", json={"task": f"sse run {n}"})
            if response.status_code != 201:
                return {"subscribers": subscribers, "runs": runs, "ok": False, "problems": [
                    f"POST /v1/runs: {response.status_code} {response.text[:300]}"]}
            run_ids.append(response.json()["run_id"])
        subs = [Subscription(run_ids[i % runs]) for i in range(subscribers)]
        started, firsts = asyncio.Event(), asyncio.Semaphore(0)
        tasks = [asyncio.create_task(subscribe(client, s, started, firsts)) for s in subs]
        try:
            async with asyncio.timeout(timeout_s):
                for _ in subs:
                    await firsts.acquire()
        except TimeoutError:
            for task in tasks:
                task.cancel()
            return {"subscribers": subscribers, "runs": runs, "ok": False, "problems": [
                f"not every subscriber had its run's first event within {timeout_s:g} s"]}
        log(f"  … {subscribers} subscribers have run.started; a worker drives the {runs} runs")
        started.set()
        t0 = time.monotonic()
        worker = spawn(config, "sse-worker", "worker", str(config), "--store", url, "--once",
                       "--concurrency", str(concurrency))
        _, pending = await asyncio.wait(tasks, timeout=timeout_s)
        for task in pending:
            task.cancel()
        seconds = time.monotonic() - t0
        code = await asyncio.to_thread(worker.stop, STOP_WAIT_S)
        stored = {r: await replay(client, r) for r in run_ids}
        mismatch = [m for r in run_ids if (m := await operations_match(client, r, stored[r]))]
    return sse_figures(subs, stored, mismatch, seconds=seconds, worker_code=code,
                       worker_tail=worker.tail(), hung=len(pending))


def sse_figures(subs: list[Subscription], stored: dict[str, list[dict[str, Any]]],
                mismatch: list[str], *, seconds: float, worker_code: int | None,
                worker_tail: str, hung: int) -> dict[str, Any]:
    found: Counter[str] = Counter()
    received = 0
    for sub in subs:
        messages = sse_messages(sub.lines)
        received += len(messages)
        found += compare(messages, stored[sub.run_id])
    expected = sum(len(stored[s.run_id]) for s in subs)
    errors = [s.error for s in subs if s.error]
    unended = sum(1 for s in subs if not s.ended)
    counts = {k: found[k] for k in ("duplicates", "missing", "out_of_order", "differing")}
    finished = sum(1 for events in stored.values() if events and events[-1]["event"] == "run.finished"
                   and events[-1]["data"]["status"] == "succeeded")
    problems = [f"{n} {k} event(s) across the subscribers" for k, n in counts.items() if n]
    if errors:
        problems.append(f"{len(errors)} subscriber error(s), e.g. {errors[0]}")
    if unended:
        problems.append(f"{unended} stream(s) did not end ({hung} still open at the timeout)")
    if finished != len(stored):
        problems.append(f"{len(stored) - finished} of {len(stored)} runs did not end succeeded")
    if worker_code != 0:
        problems.append(f"the worker exited {worker_code}: {worker_tail}")
    problems += mismatch[:SAMPLES]
    lags = [lag for s in subs for lag in s.lags]
    return {"subscribers": len(subs), "runs": len(stored),
            "events_per_run": sorted({len(e) for e in stored.values()}),
            "events_expected": expected, "events_received": received, **counts,
            "subscriber_errors": len(errors), "streams_not_ended": unended,
            "operations_mismatch": len(mismatch), "seconds": seconds, "lag": spread(lags),
            "problems": problems, "ok": not problems}


# -- one backend --------------------------------------------------------------------------


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both phases on a fresh store of ``backend``; its figures and problems."""
    with tempfile.TemporaryDirectory(prefix=f"agentloom-bench-host-{backend}-") as tmp:
        config = write_config(Path(tmp), worker_poll=args.worker_poll)
        url = store_url(backend, Path(tmp), args.store_base)
        head: dict[str, Any] = {"backend": backend,
                                "schema": url.rpartition("schema=")[2] if "schema=" in url else None}
        try:
            return {**head, **both_phases(config, url, args)}
        finally:
            drop_store(url)
            if args.logs is not None:  # the server's, its worker's and the SSE worker's output
                args.logs.mkdir(parents=True, exist_ok=True)
                for out in Path(tmp).glob("*.log"):
                    shutil.copyfile(out, args.logs / f"{backend}-{out.name}")


def both_phases(config: Path, url: str, args: argparse.Namespace) -> dict[str, Any]:
    key = create_key(config, url)
    proc, base = serve(config, url, concurrency=args.concurrency, execute=True, tag="serve-load")
    cpu0 = children_cpu_s()
    try:
        log(f"… [{config.parent.name}] load: {args.clients} clients × {args.seconds:g} s")
        load = asyncio.run(load_phase(base, key, clients=args.clients, seconds=args.seconds,
                                      poll_s=args.poll, drain_s=args.drain))
    finally:
        code = proc.stop()
    load["server_cpu_s"] = children_cpu_s() - cpu0
    stopped(load, code, proc)
    sse: dict[str, Any] | None = None
    if args.subscribers:
        log(f"… sse: {args.subscribers} subscribers on {args.sse_runs} runs")
        proc, base = serve(config, url, concurrency=1, execute=False, tag="serve-sse")
        try:
            sse = asyncio.run(sse_phase(config, url, base, key, subscribers=args.subscribers,
                                        runs=args.sse_runs, concurrency=args.concurrency,
                                        timeout_s=args.sse_timeout))
        finally:
            code = proc.stop()
        stopped(sse, code, proc)
    return {"load": load, "sse": sse, "ok": load["ok"] and (sse is None or sse["ok"])}


def stopped(phase: dict[str, Any], code: int | None, proc: Proc) -> None:
    """A server that did not stop cleanly on SIGTERM fails its phase (uvicorn re-raises the
    signal once it has shut down gracefully: -SIGTERM is a clean exit too)."""
    phase["serve_exit"] = code
    if code not in GRACEFUL:
        phase["problems"].append(f"agentloom serve exited {code} after SIGTERM: {proc.tail()}")
        phase["ok"] = False


# -- report -------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return f"{value:8.1f}" if value is not None else f"{'—':>8}"


def print_report(doc: dict[str, Any], out: TextIO) -> None:
    m, c = doc["machine"], doc["config"]
    print(f"python {m['python']} on {m['machine']}, {m['cpus']} CPUs, {m['processor']}", file=out)
    poll = c["worker_poll"] if c["worker_poll"] is not None else "default (5 s)"
    print(f"script model, {STEPS} steps per run (fs.write, fs.read, answer; no exec); serve "
          f"--concurrency {c['concurrency']}, workers.poll_s {poll}; {c['clients']} clients × "
          f"{c['seconds']:g} s, "
          f"poll every {c['poll']:g} s; {c['subscribers']} SSE subscribers on {c['sse_runs']} "
          "runs", file=out)
    for b in doc["backends"]:
        print(f"\n[{b['backend']}]", file=out)
        if b.get("skipped"):
            print(f"SKIP: {b['skipped']}", file=out)
            continue
        print_load(b["load"], out)
        if b["sse"] is not None:
            print_sse(b["sse"], out)
        for phase in ("load", "sse"):
            for problem in (b[phase] or {}).get("problems", []):
                print(f"FAIL {b['backend']} {phase}: {problem}", file=out)
    print(f"\n{'PASS' if doc['ok'] else 'FAIL'}: "
          + ("0 errors, 0 lost runs, every run succeeded, every subscriber got every event once"
             if doc["ok"] else "see the FAIL lines above"), file=out)


def print_load(load: dict[str, Any], out: TextIO) -> None:
    print(f"load: {load['requests']} requests in {load['wall_s']:.1f} s = "
          f"{load['requests_per_s']:.1f} requests/s; {load['runs_created']} runs = "
          f"{load['runs_per_s']:.1f} runs/s; errors {load['errors']}, lost runs "
          f"{load['lost_runs']}, statuses {load['statuses']}; CPU s: server + its worker "
          f"{load['server_cpu_s']:.1f}, clients {load['client_cpu_s']:.1f}", file=out)
    print(f"  {'request':<24} {'count':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}", file=out)
    names = {"create": "POST /v1/runs", "get": "GET /v1/runs/{id}", "list": "GET /v1/runs"}
    for kind, s in load["latency"].items():
        print(f"  {names[kind]:<24} {s['count']:>7} {_ms(s['p50_ms'])} {_ms(s['p99_ms'])} "
              f"{_ms(s['max_ms'])}", file=out)


def print_sse(sse: dict[str, Any], out: TextIO) -> None:
    if "events_expected" not in sse:
        return
    lag = sse["lag"]
    print(f"sse: {sse['subscribers']} subscribers on {sse['runs']} runs "
          f"({sse['events_per_run']} events each), {sse['seconds']:.1f} s: events expected "
          f"{sse['events_expected']}, received {sse['events_received']}; duplicates "
          f"{sse['duplicates']}, missing {sse['missing']}, out of order {sse['out_of_order']}, "
          f"differing {sse['differing']}; streams not ended {sse['streams_not_ended']}",
          file=out)
    print(f"  delivery lag (receipt − event at), {lag['count']} events: p50 "
          f"{_ms(lag['p50_ms']).strip()} ms, p99 {_ms(lag['p99_ms']).strip()} ms, max "
          f"{_ms(lag['max_ms']).strip()} ms", file=out)


# -- command line -------------------------------------------------------------------------


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def backend_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = sorted(set(names) - {"sqlite", "postgres"})
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"--backends takes sqlite and/or postgres, comma-separated; got {text!r}")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=positive_int, help="load clients (200; --quick 20)")
    parser.add_argument("--seconds", type=positive_float,
                        help="seconds the clients create runs (60; --quick 5)")
    parser.add_argument("--subscribers", type=int,
                        help="SSE subscribers (500; --quick 50; 0 skips the SSE phase)")
    parser.add_argument("--sse-runs", type=positive_int,
                        help="runs the subscribers follow (50; --quick 10)")
    parser.add_argument("--concurrency", type=positive_int, default=8,
                        help="runs the server (and the SSE phase's worker) drives at once (8)")
    parser.add_argument("--poll", type=positive_float, default=1.0,
                        help="seconds a client waits between two GETs of its run (1)")
    parser.add_argument("--worker-poll", type=positive_float, default=None,
                        help="the config's workers.poll_s: how often an idle worker looks for "
                        "runs (default: unset, the product's 5 s; PostgreSQL wakes it at once)")
    parser.add_argument("--drain", type=positive_float, default=120.0,
                        help="seconds after the load a client follows its last run (120)")
    parser.add_argument("--sse-timeout", type=positive_float, default=300.0,
                        help="seconds the subscribers may take (300)")
    parser.add_argument("--backends", type=backend_list, default=["sqlite", "postgres"],
                        help="comma-separated subset of sqlite,postgres (both)")
    parser.add_argument("--store-base", default=os.environ.get(
        "AGENTLOOM_BENCH_PG", os.environ.get("AGENTLOOM_TEST_PG", DEFAULT_PG)),
        help="PostgreSQL server (default: $AGENTLOOM_BENCH_PG, $AGENTLOOM_TEST_PG or %(default)s)")
    parser.add_argument("--logs", type=Path, default=None, metavar="DIR",
                        help="copy the processes' output (serve and its worker, the SSE "
                        "worker) to DIR, as BACKEND-NAME.log (default: dropped)")
    parser.add_argument("--quick", action="store_true", help="the CI size: " + ", ".join(
        f"{k.replace('_', '-')} {v:g}" for k, v in QUICK.items()))
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    args = parser.parse_args(argv)
    full = {"clients": 200, "seconds": 60.0, "subscribers": 500, "sse_runs": 50}
    for name, value in (QUICK if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.subscribers < 0:
        parser.error(f"--subscribers must not be negative, got {args.subscribers}")
    if args.subscribers and args.sse_runs > args.subscribers:
        parser.error(f"--sse-runs ({args.sse_runs}) must not exceed --subscribers "
                     f"({args.subscribers}): every run needs a subscriber")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    machine = {"python": platform.python_version(), "machine": platform.machine(),
               "cpus": os.cpu_count(), "processor": platform.processor() or platform.platform()}
    config = {k: getattr(args, k) for k in ("clients", "seconds", "subscribers", "sse_runs",
                                            "concurrency", "poll", "worker_poll", "drain",
                                            "backends")}
    backends = []
    for backend in args.backends:
        skipped = pg_unreachable(args.store_base) if backend == "postgres" else None
        backends.append({"backend": backend, "skipped": skipped, "ok": True} if skipped
                        else run_backend(backend, args))
    doc = {"machine": machine, "config": config, "steps_per_run": STEPS, "backends": backends,
           "ok": all(b["ok"] for b in backends)}
    print_report(doc, sys.stderr if args.json else sys.stdout)
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
