"""Workers on PostgreSQL (issue 17, acceptance 2): how fast 1, 2 and 4 worker processes drain
one queue, and how long a queued run waits for an idle worker, in one run of this script.

Run from the repository root::

    python bench/workers.py                           # 1,000 runs for each of 1, 2, 4 workers
    python bench/workers.py --runs 100 --workers 1,2  # a smaller run
    python bench/workers.py --json                    # JSON on stdout, the table on stderr

The agent runs on the offline script model, five steps per run: four turns with one cheap
workspace call each (``fs.write`` / ``fs.read`` of a small file) and a final text answer.
No ``exec``: the figure is the queue's and the recorded pipeline's, not the sandbox's.

**Throughput.** For each worker count N, in a fresh schema of the PostgreSQL server
(``--store-base``; dropped at the end): ``--runs`` runs are submitted from this process
(``Runtime.submit``, timed apart), then N ``agentloom worker CONFIG --once --concurrency C``
processes start at once; runs/s is the runs over the time from the first worker's start to the
last one's exit (their start-up included), and the scaling is runs/s(N) / runs/s(1). Every run
must end ``succeeded`` (counted in the store); anything else fails the bench. Beside it:
the drain alone (first run started to last run ended, from the store's timestamps), the CPU
time the workers used, the machine's busy share over the case (``/proc/stat``: the server and
this process count too), how many runs each worker claimed, and what the workers' PostgreSQL
backends were doing (``pg_stat_activity`` sampled every ``SAMPLE_S``: running, or the wait
event — a lock that serialised the workers would show as ``Lock:…``). The machine line has
the median cost of one durable commit on the server, measured first.

**Claim latency.** Two workers (no ``--once``) wait, idle, until ``agentloom workers list``
shows them live; then runs are submitted one at a time, ``--latency-gap`` apart, the first
``--latency-warmup`` of them not measured (a fresh worker's first runs are slower; their
slowest is printed apart). A run's latency is its ``data.started_at`` (written by
``Runtime.take`` once the worker has claimed it and opened its workspace) minus its
``data.submitted_at`` (written by ``Runtime.submit`` just before its commit, which sends the
NOTIFY), one machine's clock: the commit, the NOTIFY, the worker's wake-up, its pass over the
queue, the claim and the take. p50 / p99 / max. The same from the moment ``submit`` returned
here is printed beside it: it can be negative, as the worker may start the run before the
submitting process has run again after its commit. The workers are then stopped with SIGTERM.

Every figure printed is measured in this run; there is no target constant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, get_args

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.results import TerminalRunStatus
from agentloom.store import open_store

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
# where a run stays unless a person acts: ended, suspended or waiting for an answer
SETTLED = frozenset({*get_args(TerminalRunStatus), "suspended", "waiting"})
STEPS = 5
TURNS = """\
turns:
  - tool_calls:
      - {name: fs_write, arguments: {path: note.txt, content: "step one"}}
  - tool_calls:
      - {name: fs_read, arguments: {path: note.txt}}
  - tool_calls:
      - {name: fs_write, arguments: {path: note.txt, content: "step three"}}
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
LATENCY_WORKERS = 2
SAMPLE_S = 0.05
COMMIT_SAMPLES = 200
_ACTIVE = ("SELECT wait_event_type, wait_event FROM pg_stat_activity "
           "WHERE application_name = %s AND state = 'active'")
STOP_WAIT_S = 120.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_config(folder: Path, turns: str = TURNS) -> Path:
    """The bench agent's config and its script (``turns``) in ``folder``."""
    (folder / "turns.yaml").write_text(turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG.format(root=json.dumps(str(folder / "workspaces"))), encoding="utf-8")
    return config


def schema_of(url: str) -> str:
    return url.rpartition("schema=")[2]


def app_name(url: str) -> str:
    return f"agentloom-bench-{schema_of(url)}"


def fresh_url(base: str) -> str:
    """``base`` with a schema of its own (``?schema=bench_w_<random>``)."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema=bench_w_{uuid.uuid4().hex[:12]}"


def drop_schema(url: str) -> None:
    store = open_store(url)
    try:
        store.drop_schema()  # type: ignore[attr-defined]
    finally:
        store.close()


def pg_unreachable(base: str) -> str | None:
    try:
        import psycopg

        with psycopg.connect(base, connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL at {base} is unreachable: {type(exc).__name__}: {exc}"


def pg_settings(base: str) -> dict[str, Any]:
    """The server's version, the settings that decide what a commit costs, and the median of
    ``COMMIT_SAMPLES`` one-row commits (each flushes the WAL), one after another."""
    import psycopg

    with psycopg.connect(base, connect_timeout=3, autocommit=True) as conn:
        found: dict[str, Any] = {
            name: str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
            for name in ("server_version", "fsync", "synchronous_commit")}
        schema = schema_of(fresh_url(base))
        conn.execute(f"CREATE SCHEMA {schema}")
        try:  # a logged table: its commits flush the WAL, as the store's do
            conn.execute(f"CREATE TABLE {schema}.commits (v int)")
            samples = []
            for i in range(COMMIT_SAMPLES):
                start = time.perf_counter()
                conn.execute(f"INSERT INTO {schema}.commits VALUES (%s)", (i,))
                samples.append(time.perf_counter() - start)
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return found | {"commit_ms": percentile(samples, 0.5) * 1000}


async def submit(config: Path, url: str, count: int, *, gap_s: float = 0.0) -> dict[str, float]:
    """Submit ``count`` runs (``gap_s`` apart); each run id with the time ``submit`` returned."""
    runtime = runtime_from_config(load_config(config), store=url)
    submitted: dict[str, float] = {}
    try:
        for i in range(count):
            run_id = await runtime.submit(f"bench task {i}")
            submitted[run_id] = time.time()
            if gap_s:
                await asyncio.sleep(gap_s)
    finally:
        await runtime.aclose()
    return submitted


def _env(app_name: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    if app_name:
        env["PGAPPNAME"] = app_name  # libpq: the workers' backends carry it (WaitSampler)
    return env


class WaitSampler:
    """What the workers' PostgreSQL backends (``application_name``) are doing, sampled from
    ``pg_stat_activity`` every ``SAMPLE_S`` in a thread: per active backend, running (no wait
    event) or the wait it is in — a lock that serialised the workers would show as ``Lock:…``."""

    def __init__(self, base: str, app_name: str) -> None:
        self.base, self.app_name = base, app_name
        self.counts: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> WaitSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        import psycopg

        with psycopg.connect(self.base, autocommit=True, connect_timeout=3) as conn:
            while not self._stop.wait(SAMPLE_S):
                for kind, event in conn.execute(_ACTIVE, (self.app_name,)).fetchall():
                    self.counts["running" if kind is None else f"{kind}:{event}"] += 1

    def shares(self) -> dict[str, float]:
        total = sum(self.counts.values())
        return {k: n / total for k, n in self.counts.most_common()} if total else {}


@dataclass(slots=True)
class WorkerProc:
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def report(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.out.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return {}

    def stderr_tail(self) -> str:
        lines = self.err.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return " | ".join(lines[-3:])


def spawn_worker(config: Path, url: str, *, concurrency: int, once: bool, tag: str) -> WorkerProc:
    """``python -m agentloom worker CONFIG --store URL --concurrency C --json [--once]``, its
    output in files beside the config (a pipe would fill up and stall it), its PostgreSQL
    connections named after the store's schema."""
    folder = config.parent
    out, err = folder / f"{tag}.out", folder / f"{tag}.err"
    argv = [sys.executable, "-m", "agentloom", "worker", str(config), "--store", url,
            "--concurrency", str(concurrency), "--json", *(["--once"] if once else [])]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(argv, cwd=folder, env=_env(app_name(url)), stdout=stdout,
                                stderr=stderr)
    return WorkerProc(proc, out, err)


def wait_all(workers: list[WorkerProc], timeout_s: float) -> list[int | None]:
    """Wait for every worker until ``timeout_s`` from now; one still running then is killed
    (its exit code is reported as None)."""
    deadline = time.monotonic() + timeout_s
    codes: list[int | None] = []
    for w in workers:
        try:
            codes.append(w.proc.wait(timeout=max(deadline - time.monotonic(), 0.0)))
        except subprocess.TimeoutExpired:
            codes.append(None)
    for w, code in zip(workers, codes, strict=True):
        if code is None:
            w.proc.kill()
            w.proc.wait()
    return codes


def run_rows(url: str) -> list[dict[str, Any]]:
    store = open_store(url)
    try:
        return store.query("runs")
    finally:
        store.close()


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of the whole machine, or None where ``/proc/stat`` is missing."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    total = sum(ticks[:8])  # guest time is already inside user
    return total - idle, total


def busy_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def throughput(config: Path, base: str, *, workers: int, runs: int, concurrency: int,
               timeout_s: float) -> dict[str, Any]:
    """One case: ``runs`` queued runs drained by ``workers`` ``--once`` worker processes."""
    url = fresh_url(base)
    try:
        t0 = time.perf_counter()
        asyncio.run(submit(config, url, runs))
        submit_s = time.perf_counter() - t0
        log(f"… {workers} worker(s): {runs} runs submitted in {submit_s:.1f} s; draining")
        cpu0, ticks0 = children_cpu_s(), cpu_ticks()
        with WaitSampler(base, app_name(url)) as waits:
            start = time.perf_counter()
            procs = [spawn_worker(config, url, concurrency=concurrency, once=True,
                                  tag=f"w{workers}-{i}") for i in range(workers)]
            codes = wait_all(procs, timeout_s)
            seconds = time.perf_counter() - start
        cpu_s, ticks1 = children_cpu_s() - cpu0, cpu_ticks()
        rows = run_rows(url)
        statuses = Counter(row["status"] for row in rows)
        drain_s = drain_span(rows)
        reports = [p.report() for p in procs]
        problems = [f"worker {i} exited {code}: {p.stderr_tail()}"
                    for i, (p, code) in enumerate(zip(procs, codes, strict=True)) if code != 0]
        if statuses != Counter(succeeded=runs):
            problems.append(f"run statuses {dict(statuses)}, expected {runs} succeeded")
        return {"workers": workers, "runs": runs, "concurrency": concurrency,
                "schema": schema_of(url),
                "submit_s": submit_s, "submits_per_s": runs / submit_s, "seconds": seconds,
                "runs_per_s": runs / seconds, "drain_s": drain_s,
                "drain_runs_per_s": runs / drain_s if drain_s else None, "worker_cpu_s": cpu_s,
                "machine_busy": busy_share(ticks0, ticks1), "pg_waits": waits.shares(),
                "statuses": dict(statuses),
                "claimed": [r.get("claimed") for r in reports], "exit_codes": codes,
                "problems": problems, "ok": not problems}
    finally:
        drop_schema(url)


def drain_span(rows: list[dict[str, Any]]) -> float | None:
    """From the first run's ``data.started_at`` to the last run's end (``updated_at``): the
    drain without the workers' start-up and exit, from the store's own timestamps."""
    starts = [float(r["data"]["started_at"]) for r in rows if "started_at" in (r["data"] or {})]
    if not starts:
        return None
    return max(float(r["updated_at"]) for r in rows) - min(starts)


def workers_live(config: Path, url: str, pids: set[int]) -> bool:
    """Whether ``agentloom workers list --json`` shows every one of ``pids`` live."""
    done = subprocess.run([sys.executable, "-m", "agentloom", "workers", "list", "--store", url,
                           "--json"], cwd=config.parent, env=_env(), capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0:
        return False
    live = {w["pid"] for w in json.loads(done.stdout) if w.get("state") == "live"}
    return pids <= live


def wait_until_ended(url: str, count: int, timeout_s: float) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        rows = run_rows(url)
        if len(rows) >= count and all(r["status"] in SETTLED for r in rows):
            return rows
        if time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p`` percentile (0 < p ≤ 1) of ``values``."""
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered)) - 1, 0)]


def stop(workers: list[WorkerProc]) -> list[int | None]:
    for w in workers:
        if w.proc.poll() is None:
            w.proc.send_signal(signal.SIGTERM)
    return wait_all(workers, STOP_WAIT_S)


def start_idle_workers(config: Path, url: str, concurrency: int) -> tuple[list[WorkerProc], str]:
    """``LATENCY_WORKERS`` workers (no ``--once``), returned once ``workers list`` shows them
    live; the second item says why not when they were not live within a minute."""
    asyncio.run(submit(config, url, 0))  # the schema exists before the workers listen
    procs = [spawn_worker(config, url, concurrency=concurrency, once=False, tag=f"lat-{i}")
             for i in range(LATENCY_WORKERS)]
    pids = {p.proc.pid for p in procs}
    deadline = time.monotonic() + 60
    while not workers_live(config, url, pids):
        if time.monotonic() > deadline or any(p.proc.poll() is not None for p in procs):
            return procs, "the workers were not live within 60 s: " + "; ".join(
                p.stderr_tail() for p in procs)
        time.sleep(0.2)
    return procs, ""


def claim_waits(rows: list[dict[str, Any]], returned: dict[str, float]) -> dict[str, list[float]]:
    """Per measured run (``returned``: run id → when ``submit`` returned), in submission order,
    its ``data.started_at`` minus its ``data.submitted_at`` (taken by ``Runtime.submit`` before
    its commit) and minus the moment ``submit`` returned here."""
    by_id = {row["run_id"]: row["data"] or {} for row in rows}
    waits: dict[str, list[float]] = {"from_submit": [], "from_return": []}
    for run_id, at in returned.items():
        data = by_id.get(run_id, {})
        if "started_at" in data:
            waits["from_submit"].append(float(data["started_at"]) - float(data["submitted_at"]))
            waits["from_return"].append(float(data["started_at"]) - at)
    return waits


def latency(config: Path, base: str, *, runs: int, warmup: int, gap_s: float, concurrency: int,
            timeout_s: float) -> dict[str, Any]:
    """Idle workers already listening; ``warmup`` + ``runs`` runs submitted one at a time
    (the first ``warmup`` not measured); each measured run's wait from submit to start."""
    url = fresh_url(base)
    procs: list[WorkerProc] = []
    head = {"workers": LATENCY_WORKERS, "runs": runs, "warmup": warmup, "gap_s": gap_s,
            "concurrency": concurrency, "schema": schema_of(url)}
    try:
        procs, not_live = start_idle_workers(config, url, concurrency)
        if not_live:
            return {**head, "problems": [not_live], "ok": False}
        log(f"… latency: {LATENCY_WORKERS} workers live; submitting {warmup} + {runs} runs "
            f"{gap_s * 1000:.0f} ms apart")
        submitted = asyncio.run(submit(config, url, warmup + runs, gap_s=gap_s))
        rows = wait_until_ended(url, warmup + runs, timeout_s)
        codes = stop(procs)
        problems = [f"worker {i} exited {code} after SIGTERM: {p.stderr_tail()}"
                    for i, (p, code) in enumerate(zip(procs, codes, strict=True)) if code != 0]
        statuses = Counter(row["status"] for row in rows)
        if statuses != Counter(succeeded=warmup + runs):
            problems.append(f"run statuses {dict(statuses)}, expected {warmup + runs} succeeded")
        order = list(submitted)
        first = claim_waits(rows, {r: submitted[r] for r in order[:warmup]})["from_submit"]
        waits = claim_waits(rows, {r: submitted[r] for r in order[warmup:]})
        if len(waits["from_submit"]) != runs:
            problems.append(f"{runs - len(waits['from_submit'])} run(s) have no data.started_at")
        return {**head, **_latency_figures(waits, first), "statuses": dict(statuses),
                "exit_codes": codes, "problems": problems, "ok": not problems}
    finally:
        if any(p.proc.poll() is None for p in procs):
            stop(procs)
        drop_schema(url)


def _latency_figures(waits: dict[str, list[float]], warmup: list[float]) -> dict[str, Any]:
    ms = {key: [w * 1000 for w in values] for key, values in waits.items()}
    if not ms["from_submit"]:
        return {}
    return {"p50_ms": percentile(ms["from_submit"], 0.5),
            "p99_ms": percentile(ms["from_submit"], 0.99), "max_ms": max(ms["from_submit"]),
            "from_return": {"p50_ms": percentile(ms["from_return"], 0.5),
                            "p99_ms": percentile(ms["from_return"], 0.99),
                            "min_ms": min(ms["from_return"])},
            "warmup_max_ms": max(warmup) * 1000 if warmup else None}


def print_report(doc: dict[str, Any], out: TextIO) -> None:
    m = doc["machine"]
    pg = m["postgres"]
    print(f"python {m['python']} on {m['machine']}, {m['cpus']} CPUs, {m['processor']}; "
          f"PostgreSQL {pg['server_version']} at {m['store_base']} (fsync {pg['fsync']}, "
          f"synchronous_commit {pg['synchronous_commit']}; one commit alone: median "
          f"{pg['commit_ms']:.2f} ms)", file=out)
    print(f"{doc['runs']} runs × {STEPS} steps (script model; 4 fs.write/fs.read calls + a final "
          f"answer; no exec), --concurrency {doc['concurrency']} per worker\n", file=out)
    head = (f"{'workers':>7} {'runs':>6} {'seconds':>8} {'runs/s':>8} {'scaling':>8} "
            f"{'drain s':>8} {'runs/s':>7} {'cpu s':>7} {'busy':>5} {'submit/s':>9}  "
            "claimed per worker")
    print(head, file=out)
    for c in doc["cases"]:
        busy = f"{c['machine_busy']:.0%}" if c["machine_busy"] is not None else "?"
        scaling = f"{c['scaling']:.2f}×" if c["scaling"] is not None else "—"
        print(f"{c['workers']:>7} {c['runs']:>6} {c['seconds']:>8.2f} {c['runs_per_s']:>8.1f} "
              f"{scaling:>8} {_num(c['drain_s'], 8, 2)} {_num(c['drain_runs_per_s'], 7, 1)} "
              f"{c['worker_cpu_s']:>7.1f} {busy:>5} "
              f"{c['submits_per_s']:>9.1f}  {c['claimed']}", file=out)
    for c in doc["cases"]:
        top = ", ".join(f"{k} {v:.0%}" for k, v in list(c["pg_waits"].items())[:4])
        print(f"PostgreSQL backends of the {c['workers']} worker(s), active samples: {top or '—'}",
              file=out)
    print("seconds: first worker start → last worker exit (start-up included); drain s: first "
          "run started → last run ended (store timestamps); cpu s: the workers' CPU time; busy: "
          "the whole machine's (PostgreSQL, this script and anything else running too)", file=out)
    lat = doc["latency"]
    if lat is not None and "p50_ms" in lat:
        back = lat["from_return"]
        print(f"\nclaim latency, submit → started_at, {lat['runs']} runs {lat['gap_s'] * 1000:.0f} "
              f"ms apart, {lat['workers']} idle workers: p50 {lat['p50_ms']:.1f} ms, "
              f"p99 {lat['p99_ms']:.1f} ms, max {lat['max_ms']:.1f} ms", file=out)
        print(f"  from data.submitted_at (before the submit's commit and its NOTIFY); from "
              f"submit's return instead: p50 {back['p50_ms']:.1f} ms, p99 {back['p99_ms']:.1f} "
              f"ms, min {back['min_ms']:.1f} ms", file=out)
        if lat["warmup_max_ms"] is not None:
            print(f"  not measured: the first {lat['warmup']} runs (the fresh workers' first "
                  f"runs), slowest {lat['warmup_max_ms']:.1f} ms", file=out)
    for where, case in [*((f"{c['workers']} worker(s)", c) for c in doc["cases"]),
                        *([("latency", lat)] if lat is not None else [])]:
        for problem in case["problems"]:
            print(f"FAIL {where}: {problem}", file=out)
    verdict = "every run ended succeeded" if doc["ok"] else "see the FAIL lines above"
    print(f"\n{'PASS' if doc['ok'] else 'FAIL'}: {verdict}", file=out)


def _num(value: float | None, width: int, decimals: int) -> str:
    return f"{value:>{width}.{decimals}f}" if value is not None else f"{'?':>{width}}"


def worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--workers takes whole numbers, e.g. 1,2,4; got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"--workers takes counts of at least 1, got {text!r}")
    return counts


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=1000, help="runs per case (1000)")
    parser.add_argument("--workers", type=worker_counts, default=[1, 2, 4],
                        help="comma-separated worker counts (1,2,4)")
    parser.add_argument("--concurrency", type=positive_int, default=4,
                        help="runs each worker drives at once (4)")
    parser.add_argument("--latency-runs", type=int, default=200,
                        help="runs of the claim-latency phase (200; 0: skip it)")
    parser.add_argument("--latency-warmup", type=int, default=10,
                        help="runs submitted first and not measured (10)")
    parser.add_argument("--latency-gap", type=float, default=0.05,
                        help="seconds between two latency submissions (0.05)")
    parser.add_argument("--store-base", default=os.environ.get(
        "AGENTLOOM_BENCH_PG", os.environ.get("AGENTLOOM_TEST_PG", DEFAULT_PG)),
        help="PostgreSQL server (default: $AGENTLOOM_BENCH_PG, $AGENTLOOM_TEST_PG or %(default)s)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds a case may take before its workers are killed (1800)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    args = parser.parse_args()
    if min(args.latency_runs, args.latency_warmup, args.latency_gap) < 0:
        parser.error("--latency-runs, --latency-warmup and --latency-gap must not be negative")
    unreachable = pg_unreachable(args.store_base)
    if unreachable:
        log(unreachable)
        return 2

    machine = {"python": platform.python_version(), "machine": platform.machine(),
               "cpus": os.cpu_count(), "processor": platform.processor() or platform.platform(),
               "postgres": pg_settings(args.store_base), "store_base": args.store_base}
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-workers-") as tmp:
        config = write_config(Path(tmp))
        cases = [throughput(config, args.store_base, workers=n, runs=args.runs,
                            concurrency=args.concurrency, timeout_s=args.timeout)
                 for n in args.workers]
        lat = latency(config, args.store_base, runs=args.latency_runs, warmup=args.latency_warmup,
                      gap_s=args.latency_gap, concurrency=args.concurrency,
                      timeout_s=args.timeout) if args.latency_runs else None
    one = next((c["runs_per_s"] for c in cases if c["workers"] == 1), None)
    for c in cases:
        c["scaling"] = c["runs_per_s"] / one if one else None
    doc = {"machine": machine, "runs": args.runs, "steps_per_run": STEPS,
           "concurrency": args.concurrency, "cases": cases, "latency": lat,
           "ok": all(c["ok"] for c in cases) and (lat is None or lat["ok"])}
    print_report(doc, sys.stderr if args.json else sys.stdout)
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
