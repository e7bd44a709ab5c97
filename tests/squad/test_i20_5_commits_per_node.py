"""Issue 20, acceptance 5 (what the benchmark's figure rests on, counted, never timed): a node
of a workflow costs a fixed number of commits whatever the workflow's length — a re-runnable
capability (``Tool.rerunnable``: no side effect) exactly one unsynced commit holding its call
and the node's record; a capability with a side effect one synced intent before it runs, then
an unsynced commit of its result and one of the node's record (three, none of them growing) —
and
the node's record has the same size at every position of a linear workflow."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from tests.agent.conftest import WAIT_S

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.store import WriteSet


class StepInput(StrictInput):
    text: str


class Pure(Tool[StepInput]):
    name = "pure"
    description = "A pure step."
    rerunnable = True

    async def execute(self, args: StepInput, ctx: ToolContext) -> str:
        return args.text[:2] + "."  # the same size at every node


class Effect(Tool[StepInput]):
    name = "effect"
    description = "A step with a side effect."

    async def execute(self, args: StepInput, ctx: ToolContext) -> str:
        return args.text[:2] + "!"


def line(capability: str, n: int) -> Workflow:
    wf = Workflow("line")
    for i in range(n):
        source = "{{ input.task }}" if i == 0 else "{{ nodes.n" + str(i - 1) + ".output }}"
        wf.capability(f"n{i}", capability, args={"text": source})
        if i:
            wf.edge(f"n{i - 1}", f"n{i}")
    return wf


async def _count(rt: Runtime, n: int) -> tuple[Counter[tuple[bool, tuple[str, ...]]], str]:
    store = rt.store
    commit_many = store.commit_many
    seen: Counter[tuple[bool, tuple[str, ...]]] = Counter()

    def counting(batch: Sequence[WriteSet]) -> list[BaseException | None]:
        for ws in batch:
            seen[(ws.sync, tuple(sorted({op.table for op in ws.ops})))] += 1
        return commit_many(batch)

    store.commit_many = counting  # type: ignore[method-assign]
    result = await asyncio.wait_for(rt.run("go", agent="workflow:line"), WAIT_S)
    store.commit_many = commit_many  # type: ignore[method-assign]
    assert result.status == "succeeded", result.error
    return seen, result.run_id


@pytest.mark.parametrize("n", [5, 20])
async def test_i20_5_a_pure_node_is_one_unsynced_commit_with_its_record(
        n: int, tmp_path: Path, runtime_factory: Callable[..., Runtime]) -> None:
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)],
                         store=f"sqlite:///{tmp_path / 's.db'}",
                         programs=[WorkflowProgram(line("pure", n).build(), tools=[Pure()])])

    seen, run_id = await _count(rt, n)

    nodes = {k: v for k, v in seen.items() if "workflow_nodes" in k[1] or "operations" in k[1]}
    assert nodes == {(False, ("attempts", "operations", "workflow_nodes")): n}
    sizes = {len(json.dumps(r["data"], sort_keys=True)) for r in node_rows(rt.store, run_id)}
    # the same record size at every position (but the node's name: n9 → n10 in its call id)
    assert max(sizes) - min(sizes) <= 1


async def test_i20_5_a_node_with_a_side_effect_is_a_synced_intent_then_its_result_and_record(
        tmp_path: Path, runtime_factory: Callable[..., Runtime]) -> None:
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)],
                         store=f"sqlite:///{tmp_path / 's.db'}",
                         programs=[WorkflowProgram(line("effect", 6).build(), tools=[Effect()])])

    seen, _ = await _count(rt, 6)

    nodes = {k: v for k, v in seen.items() if "workflow_nodes" in k[1] or "operations" in k[1]}
    assert nodes == {(True, ("attempts", "operations")): 6,  # the intent, before the effect
                     (False, ("attempts", "operations")): 6,  # its result, once it happened
                     (False, ("workflow_nodes",)): 6}  # the node's record


async def test_i20_5_a_run_of_pure_nodes_syncs_twice_its_start_and_its_end(
        tmp_path: Path, runtime_factory: Callable[..., Runtime]) -> None:
    """What a whole run commits, whatever its length: its row and scope in one synced commit,
    one unsynced commit per node, its end with the scope's revocation synced, and the cleanup
    record of what was deleted unsynced."""
    n = 7
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)],
                         store=f"sqlite:///{tmp_path / 's.db'}",
                         programs=[WorkflowProgram(line("pure", n).build(), tools=[Pure()])])
    await _count(rt, n)  # the workflow's first run also makes its file root

    seen, _ = await _count(rt, n)

    assert seen == Counter({(True, ("runs", "workspace_scopes")): 2,
                            (False, ("attempts", "operations", "workflow_nodes")): n,
                            (False, ("cleanup_jobs", "workspace_scopes")): 1})
