"""Crash safety end to end: SIGKILL the CLI at random moments, resume, check the invariants.

    python bench/chaos.py --kills 300 --store sqlite      # or --store postgres
    python bench/chaos.py --kills 20 --seed 7 --json      # what CI runs (tests/chaos)

A scripted agent (``{builtin: script}``) runs ``TURNS`` turns, each with two parallel calls of
the SDK tool ``counter.append``, which appends ``"<operation_id> <n>"`` to a counter file
and fsyncs it — the independent record of what really ran. The harness starts
``agentloom run`` in a subprocess, SIGKILLs it after a random delay, then
``agentloom runs resume`` (killed at random too) until the run finishes. Then it checks:

- every run finishes (``succeeded``) and no operation is left unfinished (none lost);
- no tool side effect is recorded twice (each operation id at most once in the counter
  file), and every effect belongs to a stored operation;
- a call whose effect happened but whose raw result was never saved is ``unknown``, and the
  model's next request says "outcome unknown" for it — never a silent re-run;
- a ``succeeded`` call has exactly one effect.

Prints the kills, runs and violations (and the timings); exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

TURNS = 6
CALLS_PER_TURN = 2
MIN_WINDOW_S = 0.05  # the kill window never narrows below this (s)
TOOL_MODULE = '''
"""The chaos agent's tool: append one line per call to the counter file, fsynced."""
import os

from agentloom import StrictInput, Tool, ToolContext


class CounterInput(StrictInput):
    n: int


class AppendCounter(Tool[CounterInput]):
    name = "counter.append"
    description = "Append n to the counter file."

    async def execute(self, args: CounterInput, ctx: ToolContext) -> str:
        fd = os.open(os.environ["CHAOS_COUNTER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.operation_id} {args.n}\\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return f"appended {args.n}"


counter = AppendCounter()
'''


def write_project(folder: Path) -> Path:
    turns = []
    for t in range(TURNS):
        calls = [{"name": "counter_append", "arguments": {"n": t * CALLS_PER_TURN + c}}
                 for c in range(CALLS_PER_TURN)]
        turn: dict[str, Any] = {"tool_calls": calls}
        if t:
            turn["expect"] = {"role": "tool"}
        turns.append(turn)
    turns.append({"expect": {"role": "tool"}, "text": "counted"})
    (folder / "turns.yaml").write_text(json.dumps({"format": 1, "turns": turns}))
    (folder / "chaos_tools.py").write_text(TOOL_MODULE)
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        "agents:\n"
        "  main:\n"
        "    model: {builtin: script, path: turns.yaml}\n"
        "    tools: ['chaos_tools:counter']\n"
        "    limits: {batch_concurrency: 2}\n")
    return config


class Chaos:
    def __init__(self, store_url: str, folder: Path, rng: random.Random) -> None:
        self.store_url = store_url
        self.folder = folder
        self.config = write_project(folder)
        self.rng = rng
        self.kills = 0
        self.window = (0.3, 1.1)  # the kill delay range (s): set from a clean run, then narrowed
        self.env = {**os.environ, "CHAOS_COUNTER": str(folder / "counter.log"),
                    "PYTHONUNBUFFERED": "1"}

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agentloom", *args, "--store", self.store_url]

    def _attempt(self, argv: list[str], delay: float | None) -> tuple[bool, str]:
        """Run ``argv``; kill it after ``delay`` s. Returns (finished, stdout)."""
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=self.env, cwd=self.folder)
        started = time.perf_counter()
        try:
            out, _ = proc.communicate(timeout=delay if delay is not None else 120)
            if delay is not None:  # it ended before its kill: runs are faster than the window
                self._shrink(time.perf_counter() - started)
            return True, out.decode()
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            self.kills += 1
            return False, ""

    def _shrink(self, took: float) -> None:
        """Narrow the kill window to an attempt that finished in ``took`` s. The window is first
        set from one clean run; on a machine that was busier then than later, every later run
        would end before its kill and the harness would never reach its kills."""
        low, high = self.window
        if took < high:
            high = max(MIN_WINDOW_S, 1.1 * took)
            self.window = (min(low, 0.3 * high), high)

    def newest_run(self, known: set[str]) -> str | None:
        out = subprocess.run(self._cli("runs", "list", "--json"), capture_output=True,
                             env=self.env, cwd=self.folder, check=True).stdout
        fresh = [r["run_id"] for r in json.loads(out) if r["run_id"] not in known]
        return fresh[0] if fresh else None

    def one_run(self, known: set[str], kill_p: float) -> str:
        """Start a run and see it through to the end, with random kills on the way."""
        run_id = None
        while run_id is None:
            delay = self.rng.uniform(*self.window) if self.rng.random() < kill_p else None
            done, out = self._attempt(self._cli("run", str(self.config), "count", "--json"), delay)
            run_id = json.loads(out)["run_id"] if done else self.newest_run(known)
            if done:
                return run_id
        while True:
            delay = self.rng.uniform(*self.window) if self.rng.random() < kill_p else None
            done, out = self._attempt(self._cli("runs", "resume", run_id, "--config",
                                                str(self.config), "--json"), delay)
            if done:
                return run_id


def check(store_url: str, counter: Path, run_ids: list[str]) -> list[str]:
    from agentloom.pipeline.records import OperationState
    from agentloom.store import open_store

    problems: list[str] = []
    effects = Counter(line.split()[0] for line in counter.read_text().splitlines() if line.strip()) \
        if counter.exists() else Counter()
    store = open_store(store_url)
    try:
        seen_ops: set[str] = set()
        for run_id in run_ids:
            run = store.get("runs", {"run_id": run_id})
            if run is None or run["status"] != "succeeded":
                problems.append(f"run {run_id} did not finish: {run and run['status']}")
                continue
            ops = store.query("operations", {"run_id": run_id}, order_by=("created_at",))
            told = "\n".join(json.dumps(o["data"]["request"].get("proposed_arguments"))
                             for o in ops if o["event_type"] == "model")
            calls = set()
            for row in ops:
                state = OperationState.from_row(row, store)
                if row["outcome"] is None:
                    problems.append(f"operation {row['operation_id']} was left unfinished")
                if row["event_type"] != "tool":
                    continue
                seen_ops.add(row["operation_id"])
                calls.add(row["logical_key"])
                n = effects.get(row["operation_id"], 0)
                if n > 1:
                    problems.append(f"operation {row['operation_id']} ran {n} times")
                if row["outcome"] == "succeeded" and n != 1:
                    problems.append(f"operation {row['operation_id']} succeeded with {n} effects")
                if row["outcome"] == "unknown" and state.request.get("call_id") \
                        and "outcome unknown" not in told:
                    problems.append(f"unknown operation {row['operation_id']} never told to the model")
            if len(calls) != TURNS * CALLS_PER_TURN:
                problems.append(f"run {run_id}: {len(calls)} tool calls, expected "
                                f"{TURNS * CALLS_PER_TURN} (an operation was lost)")
        stray = [op for op in effects if op not in seen_ops]
        if stray:
            problems.append(f"{len(stray)} effects belong to no stored operation: {stray[:3]}")
    finally:
        store.close()
    return problems


def chaos(*, kills: int, store: str, seed: int, kill_p: float = 0.85) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="agentloom-chaos-") as tmp:
        folder = Path(tmp)
        schema = None
        if store == "sqlite":
            url = f"sqlite:///{folder}/chaos.db"
        else:
            base = os.environ.get("AGENTLOOM_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
            schema = f"chaos_{os.getpid()}_{seed}"
            url = f"{base}?schema={schema}"
        harness = Chaos(url, folder, rng)
        t0 = time.perf_counter()
        done, _ = harness._attempt(harness._cli("run", str(harness.config), "count", "--json"), None)
        clean_s = time.perf_counter() - t0
        run_ids = [harness.newest_run(set())] if done else []
        harness.window = (0.3 * clean_s, 1.1 * clean_s)
        t0 = time.perf_counter()
        while harness.kills < kills:
            run_ids.append(harness.one_run(set(run_ids), kill_p))
        elapsed = time.perf_counter() - t0
        problems = check(url, folder / "counter.log", [r for r in run_ids if r])
        if schema is not None:
            import psycopg

            with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return {"store": store, "seed": seed, "kills": harness.kills, "runs": len(run_ids),
            "clean_run_s": round(clean_s, 3), "elapsed_s": round(elapsed, 1),
            "violations": problems}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = chaos(kills=args.kills, store=args.store, seed=args.seed)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"chaos on {report['store']}: {report['kills']} kills over {report['runs']} runs "
              f"in {report['elapsed_s']} s (a clean run takes {report['clean_run_s']} s); "
              f"violations: {len(report['violations'])}")
        for problem in report["violations"]:
            print(f"  VIOLATION {problem}")
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    raise SystemExit(main())
