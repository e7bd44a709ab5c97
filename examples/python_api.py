"""The Python API: agents, a tool function and a hook function in code, on a durable store.

    python examples/python_api.py [--store sqlite:///.agentloom/agentloom.db]

A Planner delegates to an Executor; both use tools in the run's shared workspace; a hook
rewrites one argument; the run's events stream live and are read back from the store.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

import agentloom
from agentloom import HookDecision
from agentloom.models.offline import Script, ScriptModel


@agentloom.tool(name="text.count_words")
def count_words(text: str) -> int:
    """Count the words of a text (an int reaches the model as {"result": <int>})."""
    return len(text.split())


@agentloom.hook(timing="before", match="text.count_words")
def polite(event: dict[str, Any]) -> HookDecision:
    """Before-hook on text.count_words: strip surrounding blanks from the text."""
    text = event["payload"]["text"]
    if text == text.strip():
        return HookDecision.allow()
    return HookDecision("allow", payload_patch=[
        {"op": "replace", "path": "/payload/text", "value": text.strip()}])


PLANNER = Script.model_validate({"turns": [
    {"tool_calls": [
        {"name": "delegate_writer", "arguments": {"task": "Write hello.txt saying hello"}},
        {"name": "text_count_words", "arguments": {"text": "  two words  "}}]},
    {"expect": {"role": "tool"}, "tool_calls": [{"name": "fs_read", "arguments": {"path": "hello.txt"}}]},
    {"expect": {"role": "tool", "contains": "hello"}, "text": "hello.txt is written and says hello."},
]})
WRITER = Script.model_validate({"turns": [
    {"tool_calls": [{"name": "fs_write", "arguments": {"path": "hello.txt", "content": "hello\n"}}]},
    {"expect": {"role": "tool"}, "text": "Wrote hello.txt."},
]})


async def main(store: str) -> int:
    runtime = agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=ScriptModel(PLANNER, source="planner"),
                             instructions="Plan, delegate, check.", tools=("fs.read", count_words),
                             executors=("writer",), limits=agentloom.Limits(batch_concurrency=2)),
         agentloom.AgentSpec(name="writer", model=ScriptModel(WRITER, source="writer"),
                             instructions="Write what you are asked to.", tools=("fs.write",))],
        store=store,
        hooks=[polite],
    )
    try:
        handle = await runtime.start("Write a greeting file and check it", session="example")
        async for event in handle.events():
            if event.type.endswith(".completed"):
                print(f"  {event.type:26} {event.data.get('role')!s:7} "
                      f"{event.data.get('capability', '')!s:22} {event.data.get('status')}")
        result = await handle.result()
        print(f"run {result.run_id}: {result.status}: {result.output}")
        stored = [e.type for e in runtime.events(result.run_id)]
        print(f"{len(stored)} events stored; see them with: agentloom runs events {result.run_id}")
        return 0 if result.status == "succeeded" else 1
    finally:
        await runtime.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=os.environ.get(
        "AGENTLOOM_STORE", "sqlite:///.agentloom/agentloom.db"))
    raise SystemExit(asyncio.run(main(parser.parse_args().store)))
