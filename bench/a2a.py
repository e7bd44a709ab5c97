"""A2A benchmark (issue 19, acceptance 4): what an AgentLoom call to a remote A2A agent costs
next to the bare ``a2a-sdk`` client on the same local SDK echo server, in one run of this script.

Run from the repository root::

    python bench/a2a.py                 # 200 calls each way
    python bench/a2a.py --calls 100 --json

Both sides talk to one server: the tests' lab server (``tests/a2a/servers/lab.py``: the
official SDK's ``DefaultRequestHandler``, JSON-RPC, streaming) and send ``echo <i>``:

* **bare**: a client made by the SDK's ``ClientFactory`` from the server's card (the
  ``create_client`` path, streaming as the card allows), ``send_message`` consumed to the end
  of its stream, in a loop;
* **AgentLoom**: a runtime built from a YAML config (``a2a_agents``, SQLite file store in a
  temporary folder) and ``bus.request("a2a__lab__send", …)`` in a loop inside one run: every
  call is an operation of the recorded pipeline (intent + Attempt start, the task id committed
  when the stream's first event arrives, raw and effective result);
* **AgentLoom, scripted run**: the same calls made by an agent — a run whose ``script`` model
  calls ``a2a__lab__send`` once per turn, N turns — so each call also pays its model turn.

Printed: the median and p95 per call of each side and the ratio of the medians (target
≤ 1.3×); the AgentLoom loop also on a SQLite file on tmpfs (``/dev/shm``: no disk sync), to
tell AgentLoom's own work from the disk's. Every figure is measured in this run.
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

# run as ``python bench/a2a.py``, this file's folder is first on sys.path and its name would
# hide the ``a2a`` SDK package: take the folder off before importing it
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests" / "a2a"))  # the lab server's starter

import httpx  # noqa: E402
from a2a.client import ClientConfig, ClientFactory  # noqa: E402
from a2a.client.card_resolver import A2ACardResolver  # noqa: E402
from a2a.types import Message, Part, Role, SendMessageRequest  # noqa: E402
from a2a_lab import Lab, start_lab  # noqa: E402

from agentloom.assembly import runtime_from_config  # noqa: E402
from agentloom.config import load_config  # noqa: E402

TARGET_RATIO = 1.3
WARMUP = 10
CONFIG = """\
version: 1
agents:
  main:
    model: {{builtin: script, path: turns.yaml}}
    tools: [a2a.lab]
    limits: {{max_steps: {steps}}}
a2a_agents:
  lab: {{card_url: {card}}}
sandbox: {{backend: none}}
"""


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_us": statistics.median(ordered) * 1e6,
            "p95_us": ordered[int(0.95 * (len(ordered) - 1))] * 1e6, "calls": len(ordered)}


async def bare(lab: Lab, calls: int) -> dict[str, float]:
    """``send_message`` of an SDK client made from the card, its stream read to the end."""
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, lab.base).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, supported_protocol_bindings=[
            "JSONRPC", "HTTP+JSON"])).create(card)
        samples = []
        for i in range(WARMUP + calls):
            request = SendMessageRequest(message=Message(
                role=Role.ROLE_USER, message_id=f"bare-{i}", parts=[Part(text=f"echo {i}")]))
            start = time.perf_counter()
            events = [event async for event in client.send_message(request)]
            took = time.perf_counter() - start
            assert events[-1].status_update.status.state == 3, events[-1]  # COMPLETED
            if i >= WARMUP:
                samples.append(took)
        return _summary(samples)


def _config(folder: Path, lab: Lab, turns: int) -> Path:
    (folder / "turns.yaml").write_text("turns:\n" + "".join(
        f"  - tool_calls:\n      - {{id: c{i}, name: a2a__lab__send, "
        f"arguments: {{message: \"echo {i}\"}}}}\n" for i in range(turns)) + "  - text: done\n",
        encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG.format(card=json.dumps(lab.card_url), steps=turns + 5),
                      encoding="utf-8")
    return config


async def agentloom(lab: Lab, calls: int, folder: Path) -> dict[str, Any]:
    """``bus.request`` of ``a2a.lab.send`` through the recorded pipeline, one run, SQLite in
    ``folder``."""
    rt = runtime_from_config(load_config(_config(folder, lab, 1)),
                             store=f"sqlite:///{folder / 'bench.db'}")
    try:
        kernel = rt.kernel
        lease = await kernel.start_run()
        ctx = kernel.invocation_context(lease, release_id=rt.release_id)
        samples = []
        for i in range(WARMUP + calls):
            start = time.perf_counter()
            result = await kernel.bus.request("a2a__lab__send", {"message": f"echo {i}"}, ctx)
            took = time.perf_counter() - start
            assert result.outcome == "succeeded", result
            if i >= WARMUP:
                samples.append(took)
        await kernel.end_run(lease, "succeeded")
        return _summary(samples)
    finally:
        await rt.aclose()


async def scripted(lab: Lab, calls: int, folder: Path) -> dict[str, Any]:
    """A run whose script model calls ``a2a__lab__send`` once per turn, ``calls`` turns: the
    run's wall time per call (model turns included)."""
    rt = runtime_from_config(load_config(_config(folder, lab, calls)),
                             store=f"sqlite:///{folder / 'scripted.db'}")
    try:
        start = time.perf_counter()
        result = await rt.run("call the lab")
        took = time.perf_counter() - start
        assert result.status == "succeeded", result
        return {"per_call_us": took / calls * 1e6, "calls": calls}
    finally:
        await rt.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-a2a-") as tmp:
        lab = start_lab(Path(tmp) / "lab")
        try:
            # side by side, alternating, so a change in the machine's load hits both
            base = asyncio.run(bare(lab, args.calls))
            loom = asyncio.run(agentloom(lab, args.calls, Path(tmp)))
            base2 = asyncio.run(bare(lab, args.calls))
            script = asyncio.run(scripted(lab, args.calls, Path(tmp)))
            in_memory_fs = None
            if Path("/dev/shm").is_dir():
                with tempfile.TemporaryDirectory(prefix="agentloom-bench-a2a-",
                                                 dir="/dev/shm") as shm:
                    in_memory_fs = asyncio.run(agentloom(lab, args.calls, Path(shm)))
        finally:
            lab.stop()
    bare_us = min(base["median_us"], base2["median_us"])
    ratio = loom["median_us"] / bare_us
    report = {"bare": base, "bare_again": base2, "agentloom_sqlite": loom, "ratio": ratio,
              "agentloom_sqlite_tmpfs": in_memory_fs, "agentloom_scripted_run": script,
              "targets": {"ratio_at_most": TARGET_RATIO}}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"A2A SendMessage (streaming, JSON-RPC), SDK lab server 'echo', {args.calls} calls each")
    print(f"  bare a2a-sdk client (2 loops)      median {base['median_us']:9,.1f} / "
          f"{base2['median_us']:,.1f} µs   p95 {base['p95_us']:9,.1f} µs")
    print(f"  AgentLoom bus.request (SQLite)     median {loom['median_us']:9,.1f} µs   "
          f"p95 {loom['p95_us']:9,.1f} µs")
    print(f"  ratio of medians (to the faster)   {ratio:.2f}×   (target ≤ {TARGET_RATIO}×)")
    if in_memory_fs is not None:
        print(f"  AgentLoom, SQLite file on tmpfs    median {in_memory_fs['median_us']:9,.1f} µs   "
              f"ratio {in_memory_fs['median_us'] / bare_us:.2f}×  (no disk sync)")
    print(f"  AgentLoom scripted run, per call   {script['per_call_us']:9,.1f} µs   "
          f"ratio {script['per_call_us'] / bare_us:.2f}×  (each call with its model turn)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
