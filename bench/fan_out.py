"""Workflow fan-out benchmark (issue #34): how the time of a fan-out grows with its width.

Run from the repository root::

    python bench/fan_out.py                        # fan-outs of 10, 100 and 400 nodes, SQLite
    python bench/fan_out.py --sizes 10,100,1000 --store memory --runs 5 --json

The graph: ``src`` → ``--sizes`` parallel nodes, each a call of a trivial re-runnable tool
reading ``src``'s output → ``sink`` (``join: all``). For each size, in this process: the
seconds to define it (``Workflow.build()``: every graph check a ``workflows:`` entry gets at
load), to build its program and ``Runtime`` (on a fresh SQLite file, WAL, or ``memory://``),
and to run it (the median of ``--runs`` runs, after one unmeasured run), after one unmeasured
fan-out of 2 (what the process's first runtime pays once: imports, the first catalog). Printed: those
figures, their sum, the time per node, and how each grows from one size to the next against
how the width grows (linear: the same factor; a scan of every node per node: its square).

Every figure printed is measured in this run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.squad import Workflow, WorkflowSpec
from agentloom.squad.driver import WorkflowProgram


class StepInput(StrictInput):
    text: str


class Step(Tool[StepInput]):
    name = "step"
    description = "Do the trivial work of one node."
    rerunnable = True  # a pure computation: committed once, with the node's record

    async def execute(self, args: StepInput, ctx: ToolContext) -> str:
        return f"ok {len(args.text)}"


def fan_out(width: int) -> WorkflowSpec:
    """``src`` → ``width`` parallel nodes → ``sink`` (join: all), checked."""
    wf = Workflow(f"fan{width}").capability("src", "step", args={"text": "{{ input.task }}"})
    names = [f"p{i:04d}" for i in range(width)]
    for name in names:
        wf.capability(name, "step", args={"text": "{{ nodes.src.output }}"})
    wf.capability("sink", "step", args={"text": "{{ nodes.p0000.output }}"})
    return wf.edge("src", names).edge(names, "sink", join="all").build()


async def measure(width: int, store: str, runs: int, folder: Path) -> dict[str, Any]:
    gc.collect()
    t0 = time.perf_counter()
    spec = fan_out(width)
    t1 = time.perf_counter()
    url = f"sqlite:///{folder / f'fan{width}.db'}" if store == "sqlite" else "memory://"
    rt = Runtime([AgentSpec(name="main", model="test", window=8192)], store=url,
                 workspace_root=folder / f"ws{width}",
                 programs=[WorkflowProgram(spec, tools=[Step()])])
    t2 = time.perf_counter()
    took: list[float] = []
    try:
        for i in range(runs + 1):
            gc.collect()
            start = time.perf_counter()
            result = await rt.run("go", agent=f"workflow:{spec.name}")
            if result.status != "succeeded":
                raise RuntimeError(f"run {result.run_id} ended {result.status}: {result.error}")
            if i:  # the first run makes the workflow's folders: not measured
                took.append(time.perf_counter() - start)
    finally:
        await rt.aclose()
    run_s = statistics.median(took)
    return {"width": width, "define_s": t1 - t0, "build_s": t2 - t1, "run_s": run_s,
            "total_s": (t1 - t0) + (t2 - t1) + run_s,
            "run_ms_per_node": run_s * 1000 / (width + 2)}


async def main_async(sizes: list[int], store: str, runs: int) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory() as temp:
        await measure(2, store, 1, Path(temp))  # what the first runtime of a process pays once
        for width in sizes:
            print(f"… fan-out {width}", file=sys.stderr, flush=True)
            results.append(await measure(width, store, runs, Path(temp)))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,400", help="comma-separated fan-out widths")
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--runs", type=int, default=3, help="measured runs per size (median)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    results = asyncio.run(main_async([int(s) for s in args.sizes.split(",")], args.store,
                                     max(1, args.runs)))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"store: {args.store}, median of {args.runs} runs")
    print(f"{'width':>6} {'define s':>9} {'build s':>8} {'run s':>8} {'total s':>8} "
          f"{'run ms/node':>12}")
    for r in results:
        print(f"{r['width']:>6} {r['define_s']:>9.3f} {r['build_s']:>8.3f} {r['run_s']:>8.3f} "
              f"{r['total_s']:>8.3f} {r['run_ms_per_node']:>12.2f}")
    for a, b in itertools.pairwise(results):
        print(f"{a['width']} → {b['width']} nodes (x{b['width'] / a['width']:.0f}): total "
              f"x{b['total_s'] / a['total_s']:.1f}, define x{b['define_s'] / a['define_s']:.1f}, "
              f"run x{b['run_s'] / a['run_s']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
