"""003 F11: a node record (the workflow's checkpoint) that cannot be committed is a persistence
failure, reported as one, and is never followed by a ``node.completed`` event or another node —
on the memory store, SQLite and PostgreSQL. The failure is injected at the store's edge: its
``commit_many`` refuses every write set that holds a ``workflow_nodes`` row."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest
from tests.agent.conftest import WAIT_S

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, RunEvent, Runtime
from agentloom.agent.runtime import RunError
from agentloom.errors import StoreError
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.store import WriteSet, open_store
from agentloom.store.ports import Store


class StepInput(StrictInput):
    n: int


class Step(Tool[StepInput]):
    name = "step"
    description = "One trivial step."

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def execute(self, args: StepInput, ctx: ToolContext) -> str:
        self.calls.append(args.n)
        return f"step {args.n} done"


def refuse_node_records(store: Store) -> None:
    """Make ``store`` fail every write set that records a workflow node (its disk is full)."""
    commit_many = store.commit_many

    def failing(batch: Sequence[WriteSet]) -> list[BaseException | None]:
        if any(op.table == "workflow_nodes" for ws in batch for op in ws.ops):
            raise StoreError("disk full: the write could not be made durable")
        return commit_many(batch)

    store.commit_many = failing  # type: ignore[method-assign]


async def test_f11_a_failed_checkpoint_flush_is_a_persistence_failure_and_no_completed_event(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    store = open_store(store_url)
    step = Step()
    spec = (Workflow("two").capability("first", "step", args={"n": 1})
            .capability("second", "step", args={"n": 2}).edge("first", "second").build())
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)], store=store,
                         programs=[WorkflowProgram(spec, tools=[step])])
    refuse_node_records(store)
    events: list[RunEvent] = []

    handle = await rt.start("go", agent="workflow:two")
    listening = asyncio.ensure_future(_collect(handle.events(), events))
    with pytest.raises(RunError) as raised:
        await asyncio.wait_for(handle.result(), WAIT_S)
    await asyncio.wait_for(listening, WAIT_S)

    assert raised.value.code == "RUN_CRASHED"
    assert "STORE_FAILED" in str(raised.value) and "disk full" in str(raised.value)
    kinds = [(e.type, e.data.get("node")) for e in events if e.type.startswith("node.")]
    assert kinds == [("node.started", "first")]  # never node.completed, never the next node
    assert step.calls == [1]
    assert node_rows(rt.store, handle.run_id) == []
    run = rt.store.query("runs", {"run_id": handle.run_id})[0]
    assert run["status"] != "succeeded"
    assert run["data"]["failures"]["last"]["code"] == "STORE_FAILED"


async def _collect(stream: object, into: list[RunEvent]) -> None:
    async for event in stream:  # type: ignore[attr-defined]
        into.append(event)
