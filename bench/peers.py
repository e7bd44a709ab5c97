"""AgentLoom against its peers: the per-step cost of one 100-step agent run, in one process run.

Run from the repository root, with the ``bench`` extra installed
(``pip install -e '.[dev,bench]'``)::

    python bench/peers.py              # 100 steps × 5 runs each, 1,000 × 10 concurrent
    python bench/peers.py --quick      # 1 run each, 200 × 10 concurrent
    python bench/peers.py --json       # JSON on stdout, the tables on stderr

Measured in this run, on this machine: per-step cost of a ``--steps`` run (see
``peers/common.py`` for what a step is and where the clock is read), first/last ten steps,
bytes stored per step on the durable LangGraph savers, and ``--concurrent`` runs of
``--concurrent-steps`` steps in one process (each peer in a fresh interpreter, for its peak
RSS). The measured runs of the peers are interleaved, one run of each in turn, after one
unmeasured warm-up run each; ``gc.collect()`` runs before every measured run. The only
constant printed is the 0.5 factor of the targets AgentLoom will be held to.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import os
import platform
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from peers import agentloom_peer, common, langgraph_peer, openai_agents_peer, pydantic_ai_peer
from peers.common import ConcurrentFigures, StepFigures

TARGET_FACTOR = 0.5
DISTRIBUTIONS = ("langgraph", "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres",
                 "langchain-core", "openai-agents", "pydantic-ai-slim", "openai", "pydantic", "psycopg")


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    key: str
    durable: bool
    available: Callable[[], str | None]
    run: Callable[[int], Awaitable[StepFigures]]


def rows() -> list[Row]:
    lg, oa, pa, al = langgraph_peer, openai_agents_peer, pydantic_ai_peer, agentloom_peer
    return [
        Row(key="agentloom-memory", durable=False, available=al.available,
            run=lambda n: al.run_steps(n, "memory")),
        Row(key="agentloom-sqlite", durable=True, available=al.available,
            run=lambda n: al.run_steps(n, "sqlite")),
        Row(key="agentloom-postgres", durable=True, available=pg_unreachable,
            run=lambda n: al.run_steps(n, "postgres")),
        Row(key="langgraph-memory", durable=False, available=lg.available,
            run=lambda n: lg.run_steps(n, "memory")),
        Row(key="langgraph-memory-async", durable=False, available=lg.available,
            run=lambda n: lg.run_steps(n, "memory", api="async")),
        Row(key="langgraph-sqlite", durable=True, available=lg.available,
            run=lambda n: lg.run_steps(n, "sqlite")),
        Row(key="langgraph-postgres", durable=True, available=lambda: lg.available() or pg_unreachable(),
            run=lambda n: lg.run_steps(n, "postgres")),
        Row(key="openai-agents", durable=False, available=oa.available, run=lambda n: oa.run_steps(n)),
        Row(key="pydantic-ai", durable=False, available=pa.available, run=lambda n: pa.run_steps(n)),
    ]


def pg_unreachable() -> str | None:
    try:
        import psycopg

        with psycopg.connect(common.pg_url(), connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL at {common.pg_url()} unreachable: {type(exc).__name__}"


def versions() -> dict[str, str]:
    found = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def measure(selected: list[Row], *, steps: int, repeats: int) -> dict[str, StepFigures]:
    for row in selected:
        log(f"… warm-up {row.key}")
        await row.run(10)
    runs: dict[str, list[StepFigures]] = {row.key: [] for row in selected}
    for r in range(repeats):
        for row in selected:
            log(f"… run {r + 1}/{repeats} {row.key}")
            gc.collect()
            runs[row.key].append(await row.run(steps))
    return {key: common.merge(figs) for key, figs in runs.items()}


def report(figures: dict[str, StepFigures], durable: set[str], out: Any) -> dict[str, Any]:
    """Print the table, the notes, the ratios and the budgets; return them for ``--json``."""
    common.print_table(list(figures.values()), out=out)
    medians = {key: common.median_us(f.step_ns) for key, f in figures.items()}
    non_durable = {k: v for k, v in medians.items() if k not in durable}
    summary: dict[str, Any] = {"median_us": medians}
    print(file=out)
    for f in figures.values():
        for note in f.notes:
            print(f"note: {f.label}: {note}", file=out)
    if non_durable:
        fastest = min(non_durable, key=non_durable.__getitem__)
        summary["fastest_non_durable"] = fastest
        print(f"\nratios to the fastest non-durable peer, {figures[fastest].label} "
              f"({medians[fastest]:,.1f} µs/step):", file=out)
        for key, m in medians.items():
            print(f"  {figures[key].label}: {m / medians[fastest]:.2f}×", file=out)
    if "langgraph-memory" in medians:
        for key in ("langgraph-sqlite", "langgraph-postgres"):
            if key in medians:
                print(f"  {figures[key].label} / LangGraph (no checkpointer): "
                      f"{medians[key] / medians['langgraph-memory']:.2f}×", file=out)
    for f in figures.values():
        if f.bytes_per_step:
            b = f.bytes_per_step
            growth = (sum(b[-common.EDGE:]) / sum(b[:common.EDGE]))
            print(f"bytes/step, {f.label}: step 1 {b[0]:,} B, step {len(b)} {b[-1]:,} B "
                  f"(last10/first10 {growth:.2f}×); {sum(b):,} B over {len(b)} steps", file=out)
    peers_nd = {k: v for k, v in non_durable.items() if not k.startswith("agentloom")}
    budgets = {"AgentLoom in-memory": min(peers_nd.values()) if peers_nd else None,
               "AgentLoom durable SQLite": medians.get("langgraph-sqlite"),
               "AgentLoom durable PostgreSQL": medians.get("langgraph-postgres")}
    summary["budgets_us"] = {k: v * TARGET_FACTOR for k, v in budgets.items() if v}
    print(f"\ntargets for AgentLoom ({TARGET_FACTOR}× the peer, median µs/step; flat: last 10 "
          "steps ≤ 1.2× the first 10, bytes/step constant):", file=out)
    ours = {"AgentLoom in-memory": "agentloom-memory",
            "AgentLoom durable SQLite": "agentloom-sqlite",
            "AgentLoom durable PostgreSQL": "agentloom-postgres"}
    verdicts = {}
    for name, us in summary["budgets_us"].items():
        key = ours[name]
        if key not in medians:
            print(f"  {name}: ≤ {us:,.1f}  (not measured)", file=out)
            continue
        f = figures[key]
        flat = common.flat_ratio(f.step_ns)
        ok = medians[key] <= us and flat <= 1.2
        verdicts[name] = ok
        print(f"  {name}: {medians[key]:,.1f} µs/step vs ≤ {us:,.1f} "
              f"({medians[key] / (us / TARGET_FACTOR):.2f}× the peer); last/first {flat:.2f} "
              f"→ {'PASS' if ok else 'FAIL'}", file=out)
    summary["verdicts"] = verdicts
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="measured runs per peer (default 5)")
    parser.add_argument("--concurrent", type=int, default=1000, help="concurrent runs (0: skip)")
    parser.add_argument("--concurrent-steps", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="1 run per peer, 200 concurrent runs")
    parser.add_argument("--only", help="comma-separated row keys (default: all)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the tables on stderr")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.concurrent = 1, min(args.concurrent, 200)
    out = sys.stderr if args.json else sys.stdout

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{platform.processor() or platform.platform()}", file=out)
    vers = versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()), file=out)

    selected, skipped = [], {}
    for row in rows():
        if args.only and row.key not in args.only.split(","):
            continue
        reason = row.available()
        if reason is None:
            selected.append(row)
        else:
            skipped[row.key] = reason
    for key, reason in skipped.items():
        print(f"skip {key}: {reason}", file=out)

    figures = asyncio.run(measure(selected, steps=args.steps, repeats=args.repeats))
    print(f"\nper step = one model turn + one tool call; {args.steps} steps per run, "
          f"{args.repeats} run(s) per peer (per-step median across runs)\n", file=out)
    summary = report(figures, {r.key for r in selected if r.durable}, out)

    concurrent: list[ConcurrentFigures] = []
    if args.concurrent:
        modules = {"agentloom-memory": "agentloom_peer",
                   "langgraph-memory-async": "langgraph_peer", "openai-agents": "openai_agents_peer",
                   "pydantic-ai": "pydantic_ai_peer"}
        for key, module in modules.items():
            if key in figures:
                log(f"… concurrent {key}")
                fields = common.in_child(module, "concurrent", n_runs=args.concurrent,
                                         steps=args.concurrent_steps)
                concurrent.append(ConcurrentFigures(**fields))
        print(f"\nconcurrent: {args.concurrent} runs × {args.concurrent_steps} steps under one "
              "asyncio.gather, each peer in a fresh process (peak RSS = VmHWM)", file=out)
        common.print_concurrent(concurrent, out=out)

    if args.json:
        doc = {"versions": vers, "skipped": skipped, "steps": args.steps, "repeats": args.repeats,
               "peers": {k: common.as_dict(f) for k, f in figures.items()}, "summary": summary,
               "concurrent": [common.as_dict(c) | {"runs_per_s": c.runs_per_s} for c in concurrent]}
        json.dump(doc, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
