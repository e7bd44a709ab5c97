"""Hook benchmark: what a ``kind: command`` hook adds to one call (issue 16, acceptance 5).

Run from the repository root::

    python bench/hooks.py                       # 200 calls per case, sandbox backend auto
    python bench/hooks.py --calls 50 --backend landlock
    python bench/hooks.py --json                # JSON on stdout, the table on stderr
    python bench/hooks.py --check               # exit status 1 when the target fails

One kernel on an in-memory store (so the figure is the hook's, not the store's) calls a
trivial tool sequentially: first with no hook, then with one ``kind: command`` before-hook
(``cat >/dev/null``: read the event, allow with nothing changed) run in the sandbox. Each
call's latency is measured end to end; the hook's cost is p50(with) - p50(without), process
start, sandbox set-up and the event on stdin included. Nothing else is subtracted.
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
from pathlib import Path
from typing import Any

from agentloom.catalog import CapabilitySpec
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel
from agentloom.results import ToolResult

# The target: the only constant this script prints that it did not measure.
TARGET_COMMAND_HOOK_P50_MS = 15.0  # a command hook adds ≤ 15 ms per call at p50
WARMUP = 5


class Noop:
    rerunnable = False
    recoverable = False

    async def invoke_once(self, request: Any, context: Any) -> ToolResult:
        return ToolResult.success({"ok": True})


SPEC = CapabilitySpec(resource_version_id="bench", capability_key="bench.noop", kind="hosted",
                      exposed_name="bench_noop", description="does nothing",
                      input_schema={"type": "object"}, handler_ref="bench:noop")


async def latencies(root: Path, backend: str, hooks: list[HookSpec], calls: int) -> list[float]:
    kernel = Kernel("memory://", workspace_root=root, sandbox_backend=backend,  # type: ignore[arg-type]
                    hooks=hooks)
    try:
        kernel.publish("bench", [(SPEC, Noop())], roles={"main": ["bench.noop"]})
        lease = await kernel.start_run(workspace=False)
        ctx = kernel.invocation_context(lease, release_id="bench")
        out = []
        for i in range(WARMUP + calls):
            start = time.perf_counter()
            result = await kernel.bus.request("bench_noop", {}, ctx)
            elapsed = time.perf_counter() - start
            if not result.succeeded:
                raise SystemExit(f"call failed: {result.describe()}")
            if hooks:
                (row,) = kernel.store.query("hook_invocations",
                                            {"operation_id": result.operation_id})
                if row["status"] != "succeeded":
                    raise SystemExit(f"the hook did not succeed: {row['data']}")
            if i >= WARMUP:
                out.append(elapsed)
        return out
    finally:
        await kernel.hooks.runner("command").aclose()  # type: ignore[attr-defined]
        kernel.close()


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--backend", default="auto",
                        choices=["auto", "bubblewrap", "landlock", "none"])
    parser.add_argument("--command", default="cat >/dev/null",
                        help="the hook's command line (default: read the event, allow)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-hooks-") as tmp:
        root, project = Path(tmp) / "ws", Path(tmp) / "project"
        project.mkdir()
        for folder in (Path(tmp), project):
            os.chmod(folder, 0o755)  # as root, the hook runs as the sandbox uid
        hook = HookSpec(hook_id="bench", timing="before",
                        handler=HandlerRef(kind="command", command=args.command,
                                           project_dir=str(project)))
        bare = await latencies(root / "bare", args.backend, [], args.calls)
        hooked = await latencies(root / "hooked", args.backend, [hook], args.calls)
    added = statistics.median(hooked) * 1000 - statistics.median(bare) * 1000
    verdict = "PASS" if added <= TARGET_COMMAND_HOOK_P50_MS else "FAIL"
    figures = {
        "backend": args.backend, "calls": args.calls, "command": args.command,
        "no_hook_p50_ms": round(p(bare, 0.5), 3), "no_hook_p95_ms": round(p(bare, 0.95), 3),
        "command_hook_p50_ms": round(p(hooked, 0.5), 3),
        "command_hook_p95_ms": round(p(hooked, 0.95), 3),
        "added_p50_ms": round(added, 3), "target_added_p50_ms": TARGET_COMMAND_HOOK_P50_MS,
        "verdict": verdict,
    }
    table = sys.stderr if args.json else sys.stdout
    print(f"command hook {args.command!r} ({args.backend}), {args.calls} sequential calls, "
          "in-memory store", file=table)
    print(f"  no hook        p50 {figures['no_hook_p50_ms']:8.3f} ms   p95 "
          f"{figures['no_hook_p95_ms']:8.3f} ms", file=table)
    print(f"  command hook   p50 {figures['command_hook_p50_ms']:8.3f} ms   p95 "
          f"{figures['command_hook_p95_ms']:8.3f} ms", file=table)
    print(f"  added at p50   {added:8.3f} ms   target <= {TARGET_COMMAND_HOOK_P50_MS} ms   "
          f"{verdict}", file=table)
    if args.json:
        print(json.dumps(figures, indent=2))
    return 1 if args.check and verdict == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
