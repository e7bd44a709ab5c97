"""The run queue and a person's approval, in Python: submit, a worker, a hook that asks.

    python examples/approvals.py [--store sqlite:///.agentloom/agentloom.db]

A before-hook asks a person before any file is written. The run is submitted to the queue; a
worker claims it and the run waits (status ``waiting``, nobody holds it). The person approves;
a worker resumes the run from its last step and the write happens, once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

import agentloom
from agentloom import HookDecision
from agentloom.agent.worker import Worker
from agentloom.models.offline import Script, ScriptModel


@agentloom.hook(timing="before", match="fs.write")
def ask_before_writing(event: dict[str, Any]) -> HookDecision:
    """Every file write waits for a person's yes."""
    return HookDecision.ask(f"Write {event['payload']['path']}?")


SCRIPT = Script.model_validate({"turns": [
    {"tool_calls": [{"name": "fs_write", "arguments": {"path": "hello.txt", "content": "hello\n"}}]},
    {"expect": {"role": "tool"}, "text": "hello.txt is written."},
]})


async def main(store: str) -> int:
    runtime = agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=ScriptModel(SCRIPT, source="writer"),
                             instructions="Write what you are asked to.", tools=("fs.write",))],
        store=store, hooks=[ask_before_writing], keep_workspaces=True)
    try:
        run_id = await runtime.submit("Write hello.txt", priority=1)
        print(f"submitted {run_id} (pending)")
        report = await Worker(runtime).run(once=True)  # claims it; the write asks a person
        (waiting,) = report.finished
        (call,) = waiting.waiting
        print(f"run {run_id}: {waiting.status}: {call['question']} (op {call['operation_id']})")

        await runtime.approve(run_id, call["operation_id"], reason="fine", actor="example")
        report = await Worker(runtime).run(once=True)  # any worker resumes it
        (result,) = report.finished
        print(f"run {run_id}: {result.status}: {result.output}")
        if result.workspace is not None:
            written = Path(result.workspace) / "hello.txt"
            print(f"{written} says {written.read_text(encoding='utf-8').strip()!r}")
        return 0 if result.status == "succeeded" else 1
    finally:
        await runtime.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=os.environ.get(
        "AGENTLOOM_STORE", "sqlite:///.agentloom/agentloom.db"))
    raise SystemExit(asyncio.run(main(parser.parse_args().store)))
