"""003 F05: a node's step result comes from its one committed envelope, never from a default or
from files. The five shapes, through a real workflow run on every store:

- success with content → succeeded, its text the output;
- success that carries only patches → succeeded, the patches applied to the blackboard;
- failure that carries patches → failed, the patches dropped;
- an empty result → failed ``NODE_EMPTY_RESULT`` with a reason that says so;
- an unknown outcome → the node waits for a person, the call listed as an unknown effect
  (never succeeded, never run again by itself).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from tests.agent.conftest import WAIT_S

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.errors import OperationError
from agentloom.results import ToolResult
from agentloom.squad import Workflow
from agentloom.squad.collab import blackboard
from agentloom.squad.driver import WorkflowProgram, node_rows

SHAPES: dict[str, ToolResult] = {
    "text": ToolResult.success("built"),
    "patches_only": ToolResult(status="succeeded", metadata={"patches": {"version": "2.0"}}),
    "failure_with_patches": ToolResult.failure("the build broke",
                                               metadata={"patches": {"broken": True}}),
    "empty": ToolResult.success(None),
    "unknown": ToolResult.unknown(OperationError(
        code="CONNECTION_LOST", category="transport", external_outcome="unknown",
        message="the connection dropped after the request was sent")),
}


class ShapeInput(StrictInput):
    shape: str


class Shape(Tool[ShapeInput]):
    """Returns the result of the shape it is asked for; counts its calls."""

    name = "shape"
    description = "Return a result of a given shape."

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def execute(self, args: ShapeInput, ctx: ToolContext) -> ToolResult:
        self.calls.append(args.shape)
        return SHAPES[args.shape]


async def _run(runtime_factory: Callable[..., Runtime], store_url: str, shape: str
               ) -> tuple[Runtime, Any, Shape]:
    tool = Shape()
    spec = Workflow("one").capability("step", "shape", args={"shape": shape}).build()
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)], store=store_url,
                         programs=[WorkflowProgram(spec, tools=[tool])])
    result = await asyncio.wait_for(rt.run("go", agent="workflow:one"), WAIT_S)
    return rt, result, tool


def _row(rt: Runtime, run_id: str) -> dict[str, Any]:
    (row,) = node_rows(rt.store, run_id)
    return dict(row)


async def test_f05_a_success_with_content_is_succeeded_with_its_text(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    rt, result, _ = await _run(runtime_factory, store_url, "text")

    assert result.status == "succeeded" and result.output == "built"
    assert _row(rt, result.run_id)["status"] == "succeeded"


async def test_f05_a_success_carrying_only_patches_is_succeeded_and_applies_them(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    rt, result, _ = await _run(runtime_factory, store_url, "patches_only")

    assert result.status == "succeeded", result.error
    row = _row(rt, result.run_id)
    assert row["status"] == "succeeded" and row["data"]["output"] == ""
    assert row["data"]["patches"] == ["version"]
    assert blackboard(rt.store, result.run_id) == {"version": "2.0"}


async def test_f05_a_failure_carrying_patches_stays_failed_and_drops_them(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    rt, result, _ = await _run(runtime_factory, store_url, "failure_with_patches")

    assert result.status == "failed"
    assert result.error is not None and "the build broke" in result.error.message
    assert _row(rt, result.run_id)["status"] == "failed"
    assert blackboard(rt.store, result.run_id) == {}


async def test_f05_an_empty_result_is_a_failure_with_a_clear_reason(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    rt, result, _ = await _run(runtime_factory, store_url, "empty")

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "NODE_EMPTY_RESULT"
    assert "empty result" in result.error.message and "not a success" in result.error.message
    assert _row(rt, result.run_id)["data"]["error"]["code"] == "NODE_EMPTY_RESULT"


async def test_f05_an_unknown_outcome_waits_for_a_person_and_is_never_run_again_by_itself(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    rt, result, tool = await _run(runtime_factory, store_url, "unknown")

    assert result.status == "waiting"
    (call,) = result.waiting
    assert "effect of its call is unknown" in call["question"]
    row = _row(rt, result.run_id)
    assert row["status"] == "waiting"
    (unknown,) = row["data"]["unknown"]
    assert unknown["capability"] == "shape" and unknown["arguments"] == {"shape": "unknown"}
    # without an answer it waits (nobody holds it) and nothing runs again
    assert rt.store.query("runs", {"run_id": result.run_id})[0]["status"] == "waiting"
    assert tool.calls == ["unknown"]
    # a person rejects the re-run: the node fails with the unknown effect named, nothing re-ran
    await rt.reject(result.run_id, call["operation_id"], reason="check the remote first")
    ended = await asyncio.wait_for((await rt.resume(result.run_id)).result(), WAIT_S)
    assert ended.status == "failed"
    assert ended.error is not None and ended.error.code == "NODE_OUTCOME_UNKNOWN"
    assert tool.calls == ["unknown"]


@pytest.mark.parametrize("store_url", ["memory"], indirect=True)
async def test_f05_an_approved_rerun_runs_the_call_once_more_and_takes_its_result(
        store_url: str, runtime_factory: Callable[..., Runtime]) -> None:
    tool = Shape()
    spec = Workflow("one").capability("step", "shape", args={"shape": "unknown"}).build()
    rt = runtime_factory([AgentSpec(name="main", model="test", window=8192)], store=store_url,
                         programs=[WorkflowProgram(spec, tools=[tool])])
    first = await asyncio.wait_for(rt.run("go", agent="workflow:one"), WAIT_S)
    tool.execute = _answer(tool, "text")  # type: ignore[method-assign]  # the remote is back

    (call,) = first.waiting
    await rt.approve(first.run_id, call["operation_id"])
    ended = await asyncio.wait_for((await rt.resume(first.run_id)).result(), WAIT_S)

    assert ended.status == "succeeded" and ended.output == "built"
    assert tool.calls == ["unknown", "text"]


def _answer(tool: Shape, shape: str) -> Callable[..., Any]:
    async def execute(args: ShapeInput, ctx: ToolContext) -> ToolResult:
        tool.calls.append(shape)
        return SHAPES[shape]
    return execute
