"""Quick start: drive AgentLoom's pipeline with real tools, hooks and a durable store, offline.

Every call below goes through the one recorded path: intent saved, ordered hooks (each
decision committed), the tool's Attempt, raw result, effective result, delivery. Run it
twice: the second run reuses the stored results of the same logical calls instead of
running them again.

    python examples/quickstart.py [--store sqlite:///.agentloom/agentloom.db] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from agentloom import HookDecision, Kernel, StrictInput, Tool, ToolContext
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec


class AppendInput(StrictInput):
    line: str


class ReadInput(StrictInput):
    pass


class NotesAppend(Tool[AppendInput]):
    """Appends one line to notes.txt in the work folder: a real side effect on disk."""

    name = "notes.append"
    description = "Append one line to the notes file."
    input_type = AppendInput

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "notes.txt"

    async def execute(self, args: AppendInput, ctx: ToolContext) -> dict[str, Any]:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(args.line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return {"appended": args.line, "operation_id": ctx.operation_id}


class NotesRead(Tool[ReadInput]):
    name = "notes.read"
    description = "Read the whole notes file."
    input_type = ReadInput

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "notes.txt"

    async def execute(self, args: ReadInput, ctx: ToolContext) -> str:
        return self.path.read_text(encoding="utf-8") if self.path.exists() else ""


def no_secrets(event: Any) -> HookDecision:
    """Before-hook: refuse to write anything that looks like a password."""
    if "password" in event["payload"].get("line", "").lower():
        return HookDecision.deny("notes must not contain passwords")
    return HookDecision.allow()


def tidy(event: Any) -> dict[str, Any]:
    """Before-hook: collapse runs of spaces; the tool runs with the tidied argument."""
    line = event["payload"]["line"]
    tidied = " ".join(line.split())
    if tidied == line:
        return {"decision": "allow"}
    return {"decision": "allow",
            "payload_patch": [{"op": "replace", "path": "/payload/line", "value": tidied}]}


HOOKS = [
    HookSpec(hook_id="no-secrets", timing="before", match=HookMatch(capability="notes.append"),
             handler=HandlerRef(ref="quickstart:no_secrets")),
    HookSpec(hook_id="tidy", timing="before", match=HookMatch(capability="notes.append"),
             handler=HandlerRef(ref="quickstart:tidy")),
]


async def main(store_url: str, workdir: Path) -> int:
    kernel = Kernel(store_url, hooks=HOOKS,
                    hook_functions={"quickstart:no_secrets": no_secrets, "quickstart:tidy": tidy})
    try:
        kernel.publish("quickstart", [NotesAppend(workdir), NotesRead(workdir)],
                       roles={"main": ["notes.append", "notes.read"]})
        run_id = "quickstart-run"
        existing = kernel.store.get("runs", {"run_id": run_id})
        lease = kernel.claim(run_id) if existing else await kernel.start_run(run_id=run_id)
        ctx = kernel.invocation_context(lease, release_id="quickstart")
        calls = [
            ("notes_append", {"line": "buy   milk  and   bread"}),
            ("notes_append", {"line": "my password is hunter2"}),
            ("notes_append", {"line": "call Ada", "urgent": True}),
            ("notes_read", {}),
        ]
        print(f"store: {kernel.store.url}")
        print(f"run:   {run_id} (lease epoch {lease.lease_epoch})\n")
        failures = 0
        for index, (name, args) in enumerate(calls):
            result = await kernel.bus.request(name, args, ctx, logical_key=f"call-{index}")
            shown = result.describe().replace("\n", " | ")
            print(f"{name:13} {args!s:45} -> {result.outcome:24} {shown[:70]}")
            if result.executed_arguments not in (None, result.proposed_arguments):
                print(f"{'':13} executed with {result.executed_arguments} (a hook rewrote it)")
            failures += result.outcome not in ("succeeded", "denied_before_execution", "failed")
        print(f"\nnotes file: {workdir / 'notes.txt'}")
        print("every operation, attempt and hook decision is in the store; e.g.:")
        for op in kernel.operations(run_id):
            print(f"  {op['operation_id']}  {op['capability_key']:12} {op['outcome']}")
        return 1 if failures else 0
    finally:
        kernel.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=os.environ.get(
        "AGENTLOOM_STORE", "sqlite:///.agentloom/agentloom.db"))
    parser.add_argument("--workdir", type=Path, default=Path(".agentloom/quickstart"))
    ns = parser.parse_args()
    ns.workdir.mkdir(parents=True, exist_ok=True)
    raise SystemExit(asyncio.run(main(ns.store, ns.workdir)))
