"""Issue #34 (LOW): a workflow's fan-out costs linear work. Defining a fan-out of N parallel
nodes and their join (the graph checks), building its program and running it once do work
proportional to N: no scan of every node or edge per node. Counted, never timed — the work is
every line the workflow modules (``agentloom.squad``, ``agentloom.config``: graph checks,
templates) execute, and the store reads of the run; ``bench/fan_out.py`` prints the times."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from tests.agent.conftest import WAIT_S

import agentloom.config
import agentloom.squad
from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram, node_rows

WATCHED = tuple(str(Path(m.__file__).parent) for m in (agentloom.squad, agentloom.config)
                if m.__file__)


class StepInput(StrictInput):
    text: str


class Step(Tool[StepInput]):
    name = "step"
    description = "One trivial node."
    rerunnable = True

    async def execute(self, args: StepInput, ctx: ToolContext) -> str:
        return f"ok {len(args.text)}"


def fan_out(n: int) -> Workflow:
    """``src`` → ``n`` parallel nodes (each reads ``src``'s output) → ``sink`` (join: all)."""
    wf = Workflow(f"fan{n}").capability("src", "step", args={"text": "{{ input.task }}"})
    names = [f"p{i:04d}" for i in range(n)]
    for name in names:
        wf.capability(name, "step", args={"text": "{{ nodes.src.output }}"})
    return (wf.capability("sink", "step", args={"text": "{{ nodes.p0000.output }}"})
            .edge("src", names).edge(names, "sink", join="all"))


@contextmanager
def lines_run(counter: list[int]) -> Iterator[None]:
    """Count (in ``counter[0]``) the lines executed in the watched modules — a loop's every
    turn, a comprehension's every item — until the block ends."""

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            counter[0] += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename.startswith(WATCHED) else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        yield
    finally:
        sys.settrace(previous)


async def work(n: int, tmp_path: Path, make: Callable[..., Runtime]) -> tuple[int, int]:
    """(lines the workflow modules ran, store reads of the run) to define, build and run a
    fan-out of ``n``."""
    counter = [0]
    with lines_run(counter):
        spec = fan_out(n).build()
        rt = make([AgentSpec(name="main", model="test", window=8192)], store="memory://",
                  workspace_root=tmp_path / f"ws{n}",
                  programs=[WorkflowProgram(spec, tools=[Step()])])
        reads = [0]
        store: Any = rt.store
        get, query = store.get, store.query

        def counted(method: Callable[..., Any]) -> Callable[..., Any]:
            def read(*args: Any, **kwargs: Any) -> Any:
                reads[0] += 1
                return method(*args, **kwargs)
            return read

        store.get, store.query = counted(get), counted(query)
        try:
            result = await asyncio.wait_for(rt.run("go", agent=f"workflow:fan{n}"), WAIT_S)
        finally:
            store.get, store.query = get, query
    assert result.status == "succeeded", result.error
    assert len(node_rows(rt.store, result.run_id)) == n + 2
    return counter[0], reads[0]


async def test_i34_workflow_fan_out_is_linear(
        tmp_path: Path, runtime_factory: Callable[..., Runtime]) -> None:
    (lines10, reads10), (lines100, reads100), (lines400, reads400) = [
        await work(n, tmp_path, runtime_factory) for n in (10, 100, 400)]

    assert lines100 <= 12 * lines10, (lines10, lines100)
    assert reads100 <= 12 * reads10, (reads10, reads100)
    # what one more node costs does not grow with the width (a scan per node would)
    per_node_100, per_node_400 = (lines100 - lines10) / 90, (lines400 - lines100) / 300
    assert per_node_400 <= 1.25 * per_node_100, (per_node_100, per_node_400)
    assert (reads400 - reads100) / 300 <= 1.25 * max(1.0, (reads100 - reads10) / 90)
