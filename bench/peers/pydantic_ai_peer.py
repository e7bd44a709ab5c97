"""PydanticAI peer: one ``Agent`` on a ``FunctionModel`` with one plain tool, run by ``Agent.run``.

The function scripts the turns from the length of the message history it is handed (one
request to open, then a response and a request per step) and reports a fixed usage, as a
provider does. ``UsageLimits(request_limit=None)``
lifts the default cap of 50 model requests. The agent keeps a run's messages in memory only,
so ``memory`` is its one store.
"""

from __future__ import annotations

import time
from typing import Any

from peers.common import (
    FINAL_TEXT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ConcurrentFigures,
    StepClock,
    StepFigures,
    check_run,
    current_rss,
    missing,
    peak_rss,
    step_text,
    turn_index,
)

STORES = ("memory",)
LABEL = "PydanticAI (in memory)"


def available() -> str | None:
    """``None`` when ``pydantic_ai`` imports, else why not."""
    return missing("pydantic_ai", "pydantic_ai.models.function")


def _agent(steps: int, clock: StepClock) -> Any:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        # Usage as a provider reports it; without it FunctionModel estimates tokens over the whole
        # history on every turn, a cost of the fake, not of PydanticAI.
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        k = turn_index(len(messages))
        if k < steps:
            call = ToolCallPart(tool_name=TOOL_NAME, args={"text": step_text(k)}, tool_call_id=f"call_{k}")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart(content=FINAL_TEXT)], usage=usage)

    async def append_line(text: str) -> str:
        return clock.tool(text)

    tool = Tool(append_line, takes_ctx=False, name=TOOL_NAME, description=TOOL_DESCRIPTION)
    return Agent(FunctionModel(script), tools=[tool], instructions="Write the lines.")


async def _run(agent: Any) -> Any:
    from pydantic_ai.usage import UsageLimits

    result = await agent.run("Write the lines.", usage_limits=UsageLimits(request_limit=None))
    return result.output


async def run_steps(steps: int, store: str = "memory") -> StepFigures:
    """One run of ``steps`` steps (``store`` must be ``memory``)."""
    if store not in STORES:
        raise ValueError(f"unknown store {store!r}; PydanticAI runs on {', '.join(STORES)}")
    clock = StepClock()
    agent = _agent(steps, clock)
    t0 = time.perf_counter_ns()
    clock.start()
    final = await _run(agent)
    total = time.perf_counter_ns() - t0
    check_run(clock, steps, final)
    return StepFigures(label=LABEL, steps=steps, step_ns=clock.step_ns(), total_ns=total)


async def concurrent(n_runs: int = 1000, steps: int = 10) -> ConcurrentFigures:
    """``n_runs`` ``Agent.run`` calls on one agent under one ``asyncio.gather``."""
    import asyncio

    clock = StepClock()
    agent = _agent(steps, clock)
    await _run(agent)  # warm-up
    clock.lines.clear()
    rss_before = current_rss()
    t0 = time.perf_counter_ns()
    finals = await asyncio.gather(*(_run(agent) for _ in range(n_runs)))
    wall = time.perf_counter_ns() - t0
    if len(clock.lines) != n_runs * steps or any(f != FINAL_TEXT for f in finals):
        raise RuntimeError("a concurrent PydanticAI run did not finish its script")
    return ConcurrentFigures(label="PydanticAI, Agent.run", n_runs=n_runs, steps=steps,
                             wall_ns=wall, rss_before=rss_before, peak_rss=peak_rss())
