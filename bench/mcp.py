"""MCP benchmark (issue #15, acceptance 6): what an AgentLoom MCP tool call costs next to the bare
``mcp`` client's ``call_tool`` on the same server, in the same run of this script.

Run from the repository root::

    python bench/mcp.py                 # 300 calls each way (about half a minute)
    python bench/mcp.py --calls 100 --json

Both sides talk to the same stdio server (``tests/mcp/servers/lab.py``, the tests' lab server)
and call its trivial ``echo`` tool:

* **bare**: one ``mcp.ClientSession`` over ``mcp.client.stdio.stdio_client``, ``call_tool`` in
  a loop;
* **AgentLoom**: a runtime built from a YAML config (``mcp_servers``, SQLite file store in a
  temporary folder, ``sandbox: {backend: none}`` so both sides run the same unconfined process)
  and ``bus.request("mcp__lab__echo", …)`` in a loop inside one run: every call is an operation
  of the recorded pipeline (intent, Attempt, raw and effective result, commit).

Printed: the median and p95 per call of each side, the ratio of the medians (target ≤ 1.5×),
and how many server processes the AgentLoom run opened for its calls (target: 1). Every figure
is measured in this run; the targets are the only constants.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# run as ``python bench/mcp.py``, this file's folder is first on sys.path and its name would
# hide the ``mcp`` package: take the folder off before importing it
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from mcp.client.stdio import stdio_client  # noqa: E402

from agentloom.agent.configured import runtime_from_config  # noqa: E402
from agentloom.config import load_config  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "tests" / "mcp" / "servers" / "lab.py"
TARGET_RATIO = 1.5
TARGET_PROCESSES = 1
WARMUP = 10


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_us": statistics.median(ordered) * 1e6,
            "p95_us": ordered[int(0.95 * (len(ordered) - 1))] * 1e6, "calls": len(ordered)}


async def bare(calls: int) -> dict[str, float]:
    """``call_tool`` of the bare ``mcp`` client, one session."""
    params = StdioServerParameters(command=sys.executable, args=[str(LAB)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        samples = []
        for i in range(WARMUP + calls):
            start = time.perf_counter()
            result = await session.call_tool("echo", {"text": f"hi {i}"})
            took = time.perf_counter() - start
            assert not result.is_error, result
            if i >= WARMUP:
                samples.append(took)
    return _summary(samples)


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


async def agentloom(calls: int, folder: Path) -> dict[str, Any]:
    """``bus.request`` of the MCP tool through the recorded pipeline, one run, SQLite."""
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG.format(python=json.dumps(sys.executable), lab=json.dumps(str(LAB))),
                      encoding="utf-8")
    rt = runtime_from_config(load_config(config), store=f"sqlite:///{folder / 'bench.db'}")
    try:
        kernel = rt.kernel
        lease = await kernel.start_run()
        ctx = kernel.invocation_context(lease, release_id=rt.release_id)
        samples = []
        for i in range(WARMUP + calls):
            start = time.perf_counter()
            result = await kernel.bus.request("mcp__lab__echo", {"text": f"hi {i}"}, ctx)
            took = time.perf_counter() - start
            assert result.outcome == "succeeded", result
            if i >= WARMUP:
                samples.append(took)
        opened = kernel.mcp_sessions.opened
        await kernel.end_run(lease, "succeeded")
        return {**_summary(samples), "processes": opened}
    finally:
        await rt.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-mcp-") as tmp:
        loom = asyncio.run(agentloom(args.calls, Path(tmp)))
    base = asyncio.run(bare(args.calls))
    ratio = loom["median_us"] / base["median_us"]
    report = {"bare": base, "agentloom_sqlite": loom, "ratio": ratio,
              "targets": {"ratio_at_most": TARGET_RATIO, "processes": TARGET_PROCESSES}}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"MCP tool call, stdio server {LAB.name} 'echo', {args.calls} calls each, one run")
    print(f"  bare mcp ClientSession.call_tool   median {base['median_us']:9,.1f} µs   "
          f"p95 {base['p95_us']:9,.1f} µs")
    print(f"  AgentLoom bus.request (SQLite)     median {loom['median_us']:9,.1f} µs   "
          f"p95 {loom['p95_us']:9,.1f} µs")
    print(f"  ratio of medians                   {ratio:.2f}×   (target ≤ {TARGET_RATIO}×)")
    print(f"  server processes for {args.calls + WARMUP} calls  {loom['processes']}   "
          f"(target {TARGET_PROCESSES})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
