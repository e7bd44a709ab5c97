"""Before / after: run one benchmark in two checkouts, alternating, and compare the rows.

    python bench/ab.py --before ../main-before --rounds 8 pipeline --quick
    python bench/ab.py --before ../main-before --rounds 4 peers --repeats 3 \\
        --only agentloom-memory,agentloom-sqlite,agentloom-postgres --concurrent 200

Each checkout runs its own copy of the benchmark with its own interpreter (``.venv/bin/python``
in the checkout, else ``--python``), one process per round, in alternating order (before, after;
then after, before; …) so a slow patch of the machine hits both. Every AgentLoom row is printed
with the median of its per-round figures on each side, the change, and the per-round figures
themselves: on a machine whose durable rows move by several percent from run to run, the spread
is part of the answer. Extra arguments after the benchmark name go to the benchmark.

Rows: ``pipeline`` — the per-invocation medians (µs) and throughputs (inv/s) of
bench/pipeline.py; ``peers`` — AgentLoom's median µs per step and its concurrent runs/s from
bench/peers.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]


def _interpreter(tree: Path, fallback: str) -> str:
    venv = tree / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else fallback


def _rows_pipeline(doc: dict[str, Any]) -> dict[str, tuple[float, str]]:
    rows: dict[str, tuple[float, str]] = {}
    for backend, data in doc["backends"].items():
        for label, row in data["sequential"].items():
            rows[f"{backend}: {label}"] = (row["median_us"], "µs")
        for row in data.get("throughput", {}).values():
            rows[f"{backend}: {row['callers']} caller(s)"] = (row["per_second"], "inv/s")
    return rows


def _rows_peers(doc: dict[str, Any]) -> dict[str, tuple[float, str]]:
    rows = {f"{key} per step": (value, "µs")
            for key, value in doc["summary"]["median_us"].items() if key.startswith("agentloom")}
    for run in doc.get("concurrent", []):
        if "agentloom" in run["label"].lower():
            rows[f"{run['label']} concurrent"] = (run["runs_per_s"], "runs/s")
    return rows


READERS = {"pipeline": _rows_pipeline, "peers": _rows_peers}


def run_once(tree: Path, python: str, bench: str, extra: Sequence[str]) -> dict[str, Any]:
    argv = [_interpreter(tree, python), f"bench/{bench}.py", *extra, "--json"]
    done = subprocess.run(argv, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout to compare against")
    parser.add_argument("--after", type=Path, default=HERE, help="default: this checkout")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for a checkout without .venv/bin/python")
    parser.add_argument("bench", choices=sorted(READERS))
    args, extra = parser.parse_known_args(argv)
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    figures: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    units: dict[str, str] = {}
    for n in range(args.rounds):
        order = list(sides.items()) if n % 2 == 0 else list(reversed(sides.items()))
        for side, tree in order:
            print(f"… round {n + 1}/{args.rounds}: {side}", file=sys.stderr)
            for row, (value, unit) in READERS[args.bench](
                    run_once(tree, args.python, args.bench, extra)).items():
                figures[side].setdefault(row, []).append(value)
                units[row] = unit
    print(f"{args.bench}: {args.rounds} rounds, alternating; before {sides['before']}, "
          f"after {sides['after']}")
    for row, unit in units.items():
        before, after = figures["before"].get(row, []), figures["after"].get(row, [])
        if not before or not after:
            continue
        b, a = statistics.median(before), statistics.median(after)
        # a time that grows or a rate that falls is slower
        slower = (a - b) / b if unit == "µs" else (b - a) / b
        print(f"  {row:40s} {b:10,.1f} → {a:10,.1f} {unit:6s} {'slower' if slower > 0 else 'faster'} "
              f"{abs(slower) * 100:5.1f} %   before {[round(x) for x in before]} "
              f"after {[round(x) for x in after]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
