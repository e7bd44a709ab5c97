"""Issue #5: a durable step (one model turn, one tool call) costs two commits, and every call
still reaches the store.

The model call's rows ride on the first commit of the tool call it asked for (the intent and
Attempt start, which must be durable before the tool runs); the tool's result is the second.
The last model call (the final answer) is committed when the invocation ends, before the
run's terminal state, so a finished run has every call it made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentloom.agent import AgentSpec, Limits, Runtime
from agentloom.models.types import ModelRequest

from .notes import Note, NoteTaker


def steps_asked(request: ModelRequest) -> int:
    """N of the task ``take N notes``."""
    return int(str(request.messages[0].content).split()[1])


async def commits_of_a_run(rt: Runtime, steps: int) -> tuple[int, str]:
    stats = rt.kernel.coordinator.stats
    before = stats.write_sets  # commits asked for (group commit may merge some into one)
    result = await rt.run(f"take {steps} notes")
    assert result.status == "succeeded" and result.output == "done"
    return stats.write_sets - before, result.run_id


async def test_s9_a_durable_step_costs_two_commits_and_every_call_reaches_the_store(
    durable_store_url: str, tmp_path: Path
) -> None:
    rt = Runtime([AgentSpec(name="main", model=NoteTaker(steps_asked), tools=(Note(),),
                            window=128_000, limits=Limits(max_steps=20))],
                 store=durable_store_url, workspace_root=tmp_path)
    try:
        await commits_of_a_run(rt, 0)  # the agent's file root exists from now on
        short, _ = await commits_of_a_run(rt, 3)
        long, run_id = await commits_of_a_run(rt, 10)
        assert long - short == 2 * (10 - 3)
        ops = rt.store.query("operations", {"run_id": run_id})
        by_type: dict[str, list[dict[str, Any]]] = {}
        for op in ops:
            by_type.setdefault(op["event_type"], []).append(op)
        # 11 model calls, the final answer's included; 10 tool calls; all delivered
        assert sorted(op["logical_key"] for op in by_type["model"]) == sorted(
            f"{run_id}/t{n}/model" for n in range(1, 12))
        assert len(by_type["tool"]) == 10
        assert {(op["phase"], op["outcome"]) for op in ops} == {("delivered", "succeeded")}
        for op in ops:
            (attempt,) = rt.store.query("attempts", {"operation_id": op["operation_id"]})
            assert attempt["status"] == "succeeded"
            assert attempt["started_at"] is not None and attempt["finished_at"] is not None
    finally:
        await rt.aclose()
