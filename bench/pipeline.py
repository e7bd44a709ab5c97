"""Pipeline benchmark: what one recorded invocation costs, next to what one bare commit costs.

Run from the repository root::

    python bench/pipeline.py                      # full run (under ~2 minutes)
    python bench/pipeline.py --quick              # shorter samples (under ~30 s)
    python bench/pipeline.py --backends memory,sqlite
    python bench/pipeline.py --json > out.json    # JSON on stdout, the table on stderr
    python bench/pipeline.py --check              # exit status 1 when a target fails

For each backend (in-memory, an SQLite file in a temporary directory, PostgreSQL in a
fresh schema that is dropped at the end) one run measures, on the same store:

* the floor: one bare ``store.commit_many`` of a ~1 KB ``events`` row, sequentially;
* per-invocation latency of ``bus.request`` of a trivial tool, one sequential caller,
  with 0, 3 and 10 async allow-only before-hooks and with 3 sync ones (those run in a
  worker thread); nothing is subtracted;
* throughput with 1 and 100 concurrent callers (asyncio tasks looping ``bus.request``
  for a fixed duration), no hooks;
* the commit coordinator's counters (transactions vs write sets) for every phase, so
  group commit is visible.

Every figure printed is measured in that run; the targets are the only constants.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import secrets
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agentloom.catalog import CapabilitySpec
from agentloom.errors import redact_secrets
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.ids import new_id
from agentloom.kernel import Kernel
from agentloom.results import ToolResult
from agentloom.store import Put, Store, WriteSet, open_store

BACKENDS = ("memory", "sqlite", "postgres")
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
ROW_BYTES = 1024

# The targets: the only constants this script prints that it did not measure.
TARGET_SQLITE_BARE_COMMITS = 3.0       # durable SQLite, no hooks: ≤ 3 bare commits / invocation
TARGET_SQLITE_THROUGHPUT = 1000.0      # durable SQLite, 100 callers: ≥ 1,000 invocations/s
TARGET_MEMORY_OVERHEAD_US = 100.0      # in-memory, no hooks: ≤ 100 µs / invocation


@dataclass(frozen=True)
class Settings:
    floor_commits: int
    floor_budget_s: float
    warmup: int
    invocations: int          # sequential samples per hook configuration (upper bound)
    budget_s: float           # ... unless this much time has passed first
    min_samples: int
    duration_s: float         # throughput: how long the callers loop
    callers: tuple[int, ...]


FULL = Settings(floor_commits=200, floor_budget_s=5.0, warmup=50, invocations=500, budget_s=4.0,
                min_samples=30, duration_s=2.0, callers=(1, 100))
QUICK = Settings(floor_commits=100, floor_budget_s=2.0, warmup=15, invocations=150, budget_s=0.8,
                 min_samples=20, duration_s=0.5, callers=(1, 100))


# -- the workload ------------------------------------------------------------------------------
class Noop:
    """The trivial tool: returns success at once, so what is left is the pipeline."""

    rerunnable = False
    recoverable = False

    async def invoke_once(self, request: Any, context: Any) -> ToolResult:
        return ToolResult.success({"ok": True})


async def allow_async(event: Any) -> dict[str, str]:
    return {"decision": "allow"}


def allow_sync(event: Any) -> dict[str, str]:
    return {"decision": "allow"}


HOOK_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "bench:allow_async": allow_async,
    "bench:allow_sync": allow_sync,
}


@dataclass(frozen=True)
class HookConfig:
    label: str
    count: int
    ref: str

    @property
    def kind(self) -> str:
        return "sync" if self.ref == "bench:allow_sync" else "async"


HOOK_CONFIGS = (
    HookConfig("no hooks", 0, "bench:allow_async"),
    HookConfig("3 async hooks", 3, "bench:allow_async"),
    HookConfig("10 async hooks", 10, "bench:allow_async"),
    HookConfig("3 sync hooks", 3, "bench:allow_sync"),
)

SPEC = CapabilitySpec(
    resource_version_id="bench-r1", capability_key="bench.noop", kind="hosted",
    exposed_name="bench_noop", description="returns at once",
    input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    handler_ref="bench:noop",
)


def hook_specs(config: HookConfig) -> list[HookSpec]:
    return [HookSpec(hook_id=f"allow{i}", timing="before", handler=HandlerRef(ref=config.ref))
            for i in range(config.count)]


# -- measurement helpers -----------------------------------------------------------------------
def summarise(samples_ns: Sequence[int]) -> dict[str, Any]:
    ordered = sorted(samples_ns)
    n = len(ordered)
    p95 = ordered[max(0, math.ceil(0.95 * n) - 1)]
    return {
        "n": n,
        "median_us": statistics.median(ordered) / 1000,
        "p95_us": p95 / 1000,
        "mean_us": statistics.fmean(ordered) / 1000,
        "min_us": ordered[0] / 1000,
    }


def floor_row() -> tuple[dict[str, Any], int]:
    """A ``run_controls`` row whose JSON encoding is about ``ROW_BYTES`` long."""
    row: dict[str, Any] = {"event_id": new_id(), "run_id": None, "type": "bench.floor",
                           "created_at": time.time(), "data": {"pad": ""}}
    size = len(json.dumps(row, separators=(",", ":")))
    row["data"] = {"pad": "x" * max(0, ROW_BYTES - size)}
    return row, len(json.dumps(row, separators=(",", ":")))


def measure_floor(store: Store, settings: Settings) -> dict[str, Any]:
    """One bare commit of one ~1 KB row, sequentially, straight on the store."""
    samples: list[int] = []
    size = 0
    started = time.perf_counter()
    for i in range(settings.floor_commits):
        row, size = floor_row()
        ws = WriteSet((Put("run_controls", row),))
        t0 = time.perf_counter_ns()
        outcome = store.commit_many([ws])
        samples.append(time.perf_counter_ns() - t0)
        if outcome != [None]:
            raise RuntimeError(f"bare commit failed: {outcome}")
        if i + 1 >= settings.min_samples and time.perf_counter() - started > settings.floor_budget_s:
            break
    return {**summarise(samples), "row_bytes": size}


@dataclass
class StoreSize:
    """How many ``operations`` rows this run has put in the store (one per successful call)."""

    operations: int = 0


class Bench:
    """One kernel over a shared store, with one hook configuration and one run."""

    def __init__(self, store: Store, hooks: list[HookSpec], size: StoreSize) -> None:
        self.size = size
        self.kernel = Kernel(store, hooks=hooks, hook_functions=HOOK_FUNCTIONS)
        self.kernel.publish("bench-rel", [(SPEC, Noop())], roles={"main": ["bench.noop"]})
        self.ctx: Any = None
        self.seq = 0

    async def start(self) -> None:
        lease = await self.kernel.start_run()
        self.ctx = self.kernel.invocation_context(lease, release_id="bench-rel")

    async def call(self) -> None:
        self.seq += 1
        result = await self.kernel.bus.request("bench_noop", {"n": self.seq}, self.ctx)
        if result.outcome != "succeeded":
            raise RuntimeError(f"benchmark invocation did not succeed: {result.outcome} "
                               f"{result.error or result.reason}")
        self.size.operations += 1

    def counters(self) -> tuple[int, int]:
        stats = self.kernel.coordinator.stats
        return stats.transactions, stats.write_sets

    def close(self) -> None:
        # Not Kernel.close(): the store is shared by every configuration of the backend.
        self.kernel.coordinator.close()


def coordinator_delta(before: tuple[int, int], after: tuple[int, int], calls: int) -> dict[str, Any]:
    tx, ws = after[0] - before[0], after[1] - before[1]
    return {"transactions": tx, "write_sets": ws,
            "write_sets_per_invocation": ws / calls if calls else None,
            "write_sets_per_transaction": ws / tx if tx else None}


async def measure_sequential(
    store: Store, config: HookConfig, settings: Settings, size: StoreSize
) -> dict[str, Any]:
    bench = Bench(store, hook_specs(config), size)
    try:
        await bench.start()
        for _ in range(settings.warmup):
            await bench.call()
        before = bench.counters()
        operations_before = size.operations
        samples: list[int] = []
        started = time.perf_counter()
        for i in range(settings.invocations):
            t0 = time.perf_counter_ns()
            await bench.call()
            samples.append(time.perf_counter_ns() - t0)
            if i + 1 >= settings.min_samples and time.perf_counter() - started > settings.budget_s:
                break
        return {"hooks": config.count, "hook_kind": config.kind, **summarise(samples),
                "store_operations_before": operations_before,
                "coordinator": coordinator_delta(before, bench.counters(), len(samples))}
    finally:
        bench.close()


async def measure_throughput(
    store: Store, callers: int, settings: Settings, size: StoreSize
) -> dict[str, Any]:
    bench = Bench(store, [], size)
    try:
        await bench.start()
        for _ in range(max(1, settings.warmup // 2)):
            await bench.call()
        before = bench.counters()
        operations_before = size.operations
        latencies: list[int] = []
        per_caller = [0] * callers
        deadline = 0.0

        async def caller(index: int) -> None:
            while time.perf_counter() < deadline:
                t0 = time.perf_counter_ns()
                await bench.call()
                latencies.append(time.perf_counter_ns() - t0)
                per_caller[index] += 1

        started = time.perf_counter()
        deadline = started + settings.duration_s
        await asyncio.gather(*(caller(i) for i in range(callers)))
        elapsed = time.perf_counter() - started
        total = len(latencies)
        lat = summarise(latencies) if latencies else {}
        return {
            "callers": callers, "store_operations_before": operations_before,
            "invocations": total, "seconds": elapsed,
            "per_second": total / elapsed, "latency_median_us": lat.get("median_us"),
            "latency_p95_us": lat.get("p95_us"),
            "per_caller_min": min(per_caller), "per_caller_max": max(per_caller),
            "coordinator": coordinator_delta(before, bench.counters(), total),
        }
    finally:
        bench.close()


# -- backends ----------------------------------------------------------------------------------
def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["schema"] = schema
    return urlunsplit(parts._replace(query=urlencode(query)))


def without_schema(url: str) -> str:
    parts = urlsplit(url)
    query = {k: v for k, v in parse_qsl(parts.query) if k != "schema"}
    return urlunsplit(parts._replace(query=urlencode(query)))


def store_facts(store: Any, backend: str) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    if backend == "sqlite":
        facts["journal_mode"] = store.pragma("journal_mode")
        facts["synchronous"] = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(
            store.pragma("synchronous"), store.pragma("synchronous"))
    return facts


async def run_backend(
    backend: str, url: str, settings: Settings, log: Callable[[str], None]
) -> dict[str, Any]:
    store: Any = open_store(url)
    try:
        out: dict[str, Any] = {"url": redact_secrets(url), "durable": bool(store.durable),
                               "facts": store_facts(store, backend)}
        log(f"[{backend}] floor: bare commits")
        out["floor"] = measure_floor(store, settings)
        size = StoreSize()
        out["sequential"] = {}
        for config in HOOK_CONFIGS:
            log(f"[{backend}] sequential: {config.label}")
            out["sequential"][config.label] = await measure_sequential(store, config, settings, size)
        out["throughput"] = {}
        for callers in settings.callers:
            log(f"[{backend}] throughput: {callers} caller(s) for {settings.duration_s:g} s")
            out["throughput"][str(callers)] = await measure_throughput(store, callers, settings, size)
        floor = out["floor"]["median_us"]
        for result in out["sequential"].values():
            result["bare_commits"] = result["median_us"] / floor if floor else None
        return out
    finally:
        if backend == "postgres":
            try:
                store.drop_schema()
            finally:
                store.close()
        else:
            store.close()


def machine_facts(pg_url: str | None) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "postgres": None,
    }
    if pg_url is not None:
        try:
            import psycopg

            with psycopg.connect(without_schema(pg_url), connect_timeout=5) as conn:
                row = conn.execute(
                    "SELECT current_setting('server_version'), current_setting('fsync'), "
                    "current_setting('synchronous_commit')").fetchone()
            assert row is not None
            facts["postgres"] = row[0]
            facts["postgres_fsync"] = row[1]
            facts["postgres_synchronous_commit"] = row[2]
        except Exception as exc:
            facts["postgres"] = f"unavailable ({type(exc).__name__}: {redact_secrets(str(exc))})"
    return facts


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


# -- targets -----------------------------------------------------------------------------------
@dataclass
class Target:
    name: str
    wanted: str
    measured: float | None = None
    unit: str = ""
    status: str = "SKIP"
    note: str = field(default="")


def evaluate(results: dict[str, Any]) -> list[Target]:
    targets = []
    sqlite_res = results.get("sqlite")
    t = Target("durable SQLite overhead, no hooks", f"≤ {TARGET_SQLITE_BARE_COMMITS:g} bare commits "
               "per invocation (median invocation / median bare commit)", unit="bare commits")
    if sqlite_res and "error" not in sqlite_res:
        t.measured = sqlite_res["sequential"]["no hooks"]["bare_commits"]
        t.status = "PASS" if t.measured <= TARGET_SQLITE_BARE_COMMITS else "FAIL"
    else:
        t.note = "sqlite not measured"
    targets.append(t)

    t = Target("durable SQLite throughput, 100 callers", f"≥ {TARGET_SQLITE_THROUGHPUT:,.0f} "
               "invocations/s", unit="inv/s")
    if sqlite_res and "error" not in sqlite_res and "100" in sqlite_res["throughput"]:
        t.measured = sqlite_res["throughput"]["100"]["per_second"]
        t.status = "PASS" if t.measured >= TARGET_SQLITE_THROUGHPUT else "FAIL"
    else:
        t.note = "sqlite not measured"
    targets.append(t)

    memory_res = results.get("memory")
    t = Target("in-memory overhead, no hooks", f"≤ {TARGET_MEMORY_OVERHEAD_US:g} µs per invocation "
               "(median)", unit="µs")
    if memory_res and "error" not in memory_res:
        t.measured = memory_res["sequential"]["no hooks"]["median_us"]
        t.status = "PASS" if t.measured <= TARGET_MEMORY_OVERHEAD_US else "FAIL"
    else:
        t.note = "memory not measured"
    targets.append(t)
    return targets


# -- output ------------------------------------------------------------------------------------
def _f(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def render(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    m = doc["machine"]
    s = doc["settings"]
    lines.append(f"agentloom pipeline benchmark ({doc['mode']} run, {doc['elapsed_s']:.1f} s)")
    lines.append(f"  cpus      {m['cpu_count']} ({m['cpus_usable']} usable)  {m['cpu_model'] or ''}")
    lines.append(f"  platform  {m['platform']}")
    lines.append(f"  python    {m['python']}")
    lines.append(f"  sqlite    {m['sqlite']}")
    pg = m.get("postgres") or "not used"
    if m.get("postgres_fsync") is not None:
        pg += f"  (fsync={m['postgres_fsync']}, synchronous_commit={m['postgres_synchronous_commit']})"
    lines.append(f"  postgres  {pg}")
    lines.append(f"  settings  sequential ≤{s['invocations']} samples or {s['budget_s']:g} s per row "
                 f"after {s['warmup']} warm-up; throughput {s['duration_s']:g} s per row; "
                 f"floor ≤{s['floor_commits']} commits")
    for backend, res in doc["backends"].items():
        lines.append("")
        lines.append(f"== {backend}: {res.get('url', '')}")
        if "error" in res:
            lines.append(f"   skipped: {res['error']}")
            continue
        facts = res.get("facts") or {}
        if facts:
            lines.append("   " + ", ".join(f"{k}={v}" for k, v in facts.items()))
        fl = res["floor"]
        lines.append(f"   floor: one bare commit of a {fl['row_bytes']}-byte events row: "
                     f"median {_f(fl['median_us'], 1)} µs, p95 {_f(fl['p95_us'], 1)} µs (n={fl['n']})")
        lines.append("")
        lines.append("   per invocation, 1 sequential caller (bus.request of a no-op tool)")
        head = (f"   {'hooks':<16}{'ops before':>11}{'n':>6}{'median µs':>12}{'p95 µs':>11}"
                f"{'× bare commit':>15}{'write sets/inv':>16}{'write sets':>12}{'tx':>8}")
        lines.append(head)
        for label, r in res["sequential"].items():
            co = r["coordinator"]
            ratio = _f(r["bare_commits"], 2) if res["durable"] else "-"
            lines.append(f"   {label:<16}{r['store_operations_before']:>11,}{r['n']:>6}"
                         f"{_f(r['median_us'], 1):>12}{_f(r['p95_us'], 1):>11}{ratio:>15}"
                         f"{_f(co['write_sets_per_invocation'], 2):>16}{co['write_sets']:>12,}"
                         f"{co['transactions']:>8,}")
        lines.append("")
        lines.append("   throughput, no hooks (asyncio callers looping bus.request)")
        lines.append(f"   {'callers':>7}{'ops before':>11}{'invocations':>13}{'seconds':>9}{'inv/s':>10}"
                     f"{'median µs':>12}{'p95 µs':>11}{'per caller':>14}{'write sets':>12}{'tx':>8}"
                     f"{'ws/tx':>8}")
        for r in res["throughput"].values():
            co = r["coordinator"]
            spread = f"{r['per_caller_min']}..{r['per_caller_max']}"
            lines.append(f"   {r['callers']:>7}{r['store_operations_before']:>11,}{r['invocations']:>13,}"
                         f"{r['seconds']:>9.2f}{_f(r['per_second']):>10}{_f(r['latency_median_us'], 1):>12}"
                         f"{_f(r['latency_p95_us'], 1):>11}{spread:>14}{co['write_sets']:>12,}"
                         f"{co['transactions']:>8,}{_f(co['write_sets_per_transaction'], 1):>8}")
        starved = [r["callers"] for r in res["throughput"].values()
                   if r["callers"] > 1 and r["per_caller_min"] == 0]
        if starved:
            lines.append(f"   note: with {starved[0]} callers some completed no call: this path never "
                         "suspended, so the callers ran one after another, not interleaved")
    lines.append("")
    lines.append("targets")
    for t in doc["targets"]:
        measured = f"{_f(t['measured'], 3 if t['unit'] == 'bare commits' else 0)} {t['unit']}" \
            if t["measured"] is not None else t["note"]
        lines.append(f"   [{t['status']}] {t['name']}: {measured}   (target {t['wanted']})")
    return "\n".join(lines)


# -- main --------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="shorter samples (under ~30 s in all)")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated subset of memory,sqlite,postgres (default: all)")
    parser.add_argument("--pg-url", default=os.environ.get(
        "AGENTLOOM_BENCH_PG", os.environ.get("AGENTLOOM_TEST_PG", DEFAULT_PG)),
        help="PostgreSQL server to use; a fresh schema is created and dropped "
             "(default: $AGENTLOOM_BENCH_PG, $AGENTLOOM_TEST_PG or %(default)s)")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON document on stdout (the table goes to stderr)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 if a target fails")
    args = parser.parse_args(argv)
    chosen = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(chosen) - set(BACKENDS))
    if unknown or not chosen:
        parser.error(f"unknown backend(s) {unknown}; choose from {','.join(BACKENDS)}")
    args.backends = [b for b in BACKENDS if b in chosen]
    return args


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    settings = QUICK if args.quick else FULL
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"  … {message}", file=sys.stderr, flush=True)

    tmp = tempfile.mkdtemp(prefix="agentloom-bench-")
    doc: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "machine": machine_facts(args.pg_url if "postgres" in args.backends else None),
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "temp_dir": tmp,
        "backends": {},
    }
    try:
        for backend in args.backends:
            if backend == "memory":
                url = "memory://"
            elif backend == "sqlite":
                url = f"sqlite:///{os.path.join(tmp, 'bench.db')}"
            else:
                url = with_schema(args.pg_url, f"bench_{os.getpid()}_{secrets.token_hex(3)}")
            try:
                doc["backends"][backend] = await run_backend(backend, url, settings, log)
            except Exception as exc:
                if backend != "postgres":
                    raise
                doc["backends"][backend] = {"url": redact_secrets(url), "error": redact_secrets(
                    f"{type(exc).__name__}: {exc}")}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc["targets"] = [t.__dict__ for t in evaluate(doc["backends"])]
    doc["elapsed_s"] = time.perf_counter() - started
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    doc = asyncio.run(amain(args))
    table = render(doc)
    if args.json:
        print(table, file=sys.stderr)
        json.dump(doc, sys.stdout, indent=2, default=str)
        print()
    else:
        print(table)
    failed = any(t["status"] == "FAIL" for t in doc["targets"])
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
