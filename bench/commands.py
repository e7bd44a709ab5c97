"""Command bus benchmark (issue 21 acceptance 3): what a command costs over the pipeline's own
invocation of the same handler.

Run from the repository root::

    python bench/commands.py                 # memory and SQLite (PostgreSQL when reachable)
    python bench/commands.py --quick
    python bench/commands.py --backends sqlite --json

For each backend, one ``Kernel`` on one store: the same trivial async handler is (a) published
as a plain capability and called with ``kernel.bus.request`` — the pipeline's per-invocation
cost — and (b) a ``write`` command submitted with ``CommandBus.submit`` — validation, one
pipeline operation in the principal's run, and the receipt write. One sequential caller
alternating (a) and (b) call by call (so a load spike or drift hits both alike); the figures
are the medians per call, the ratio is command / plain. Target: ≤ 1.2×.
Every figure printed is measured in that run; the target is the only constant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import (
    COMMAND_AGENT,
    PipelineCommandExecutor,
    PythonCommandHandler,
    command_spec,
)
from agentloom.command import CommandBus, CommandRegistry, CommandSpec, HandlerRef
from agentloom.kernel import Kernel
from agentloom.refs import Principal
from agentloom.store import open_store

TARGET_RATIO = 1.2
PG = os.environ.get("AGENTLOOM_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
PARAMS = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def noop(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"n": params["n"]}


def pg_reachable() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG, connect_timeout=2):
            return True
    except Exception:
        return False


async def measure(url: str, rounds: int, per_round: int) -> dict[str, Any]:
    kernel = Kernel(url)
    spec = CommandSpec(id="bench.cmd", params=PARAMS, risk="write", handler=HandlerRef(ref="b:noop"))
    registry = CommandRegistry({spec.id: spec})
    executor = PipelineCommandExecutor(kernel, registry, release_id="bench-commands",
                                       functions={"b:noop": noop})
    bus = CommandBus(registry, executor, StoreReceiptLog(kernel.store, kernel.coordinator))
    principal = Principal(actor="bench", project="bench")
    # the plain capability: the same handler class and function, called on the bus directly
    plain = CommandSpec(id="bench.plain", params=PARAMS, handler=HandlerRef(ref="b:noop"))
    plain_spec = command_spec(plain, "bench-plain")
    kernel.publish("bench-plain", [(plain_spec, PythonCommandHandler(plain.id, noop))],
                   roles={COMMAND_AGENT: [plain_spec.capability_key]})
    lease = await kernel.start_run(workspace=False)
    ctx = kernel.invocation_context(lease, release_id="bench-plain", role=COMMAND_AGENT)
    seq = 0

    async def call_plain() -> None:
        nonlocal seq
        seq += 1
        result = await kernel.bus.request(plain_spec.exposed_name, {"n": seq}, ctx)
        assert result.outcome == "succeeded", result

    async def call_command() -> None:
        nonlocal seq
        seq += 1
        receipt = await bus.submit("bench.cmd", {"n": seq}, principal=principal)
        assert receipt.state == "committed", receipt

    plain_ns: list[float] = []
    command_ns: list[float] = []
    try:
        for _ in range(max(5, per_round // 5)):  # warm-up: imports, the principal's run, caches
            await call_plain()
            await call_command()
        for _ in range(rounds):
            for _ in range(per_round):  # alternate call by call: load spikes hit both alike
                for samples, call in ((plain_ns, call_plain), (command_ns, call_command)):
                    t0 = time.perf_counter_ns()
                    await call()
                    samples.append(time.perf_counter_ns() - t0)
    finally:
        await executor.close()
        await kernel.end_run(lease)
        kernel.close()
    plain_us = statistics.median(plain_ns) / 1000
    command_us = statistics.median(command_ns) / 1000
    return {"plain_us": plain_us, "command_us": command_us, "ratio": command_us / plain_us,
            "samples": len(plain_ns)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio misses")
    args = parser.parse_args()
    rounds, per_round = (5, 40) if args.quick else (15, 100)
    out: dict[str, Any] = {"target_ratio": TARGET_RATIO, "backends": {}}
    with tempfile.TemporaryDirectory() as folder:
        for backend in args.backends.split(","):
            if backend == "memory":
                url = "memory://"
            elif backend == "sqlite":
                url = f"sqlite:///{folder}/bench.db"
            elif backend == "postgres":
                if not pg_reachable():
                    print(f"postgres: skipped (not reachable at {PG})", file=sys.stderr)
                    continue
                url = f"{PG}?schema=bench_{uuid.uuid4().hex[:10]}"
            else:
                parser.error(f"unknown backend {backend!r}")
            figures = asyncio.run(measure(url, rounds, per_round))
            if backend == "postgres":
                store = open_store(url)
                store.drop_schema()  # type: ignore[attr-defined]
                store.close()
            out["backends"][backend] = figures
            line = (f"{backend:9} plain capability {figures['plain_us']:8.1f} µs/call   "
                    f"command {figures['command_us']:8.1f} µs/command   ratio "
                    f"{figures['ratio']:.2f}× (target ≤ {TARGET_RATIO}×)")
            print(line, file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(out, indent=2))
    missed = [b for b, f in out["backends"].items() if f["ratio"] > TARGET_RATIO]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
