"""OpenAI Agents SDK peer: one ``Agent`` with one function tool, driven by ``Runner.run``.

The model is a ``Model`` subclass (``ScriptedModel`` below, built on the SDK's public
``agents.testing`` item helpers) that answers from the length of the input it is handed; tracing
is disabled for the whole process (``set_tracing_disabled``) and in the ``RunConfig``. The SDK
keeps a run's state in memory only (no store), so ``memory`` is its one store.
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
LABEL = "OpenAI Agents SDK (in memory)"


def available() -> str | None:
    """``None`` when the ``agents`` package imports, else why not."""
    return missing("agents", "agents.testing")


def _model(steps: int) -> Any:
    from agents import Model, ModelResponse, Usage
    from agents.testing import assistant_message, function_call

    class ScriptedModel(Model):
        """Tool call ``step k`` on turn ``k < steps``, then the final answer."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> ModelResponse:
            k = turn_index(len(input)) if isinstance(input, list) else 0
            if k < steps:
                item = function_call(TOOL_NAME, {"text": step_text(k)}, call_id=f"call_{k}")
            else:
                item = assistant_message(FINAL_TEXT)
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark never streams")

    return ScriptedModel()


def _agent(steps: int, clock: StepClock) -> Any:
    from agents import Agent, function_tool, set_tracing_disabled

    set_tracing_disabled(True)

    async def append_line(text: str) -> str:
        return clock.tool(text)

    tool = function_tool(append_line, name_override=TOOL_NAME, description_override=TOOL_DESCRIPTION)
    return Agent(name="bench", instructions="Write the lines.", model=_model(steps), tools=[tool])


async def _run(agent: Any, steps: int) -> Any:
    from agents import RunConfig, Runner

    result = await Runner.run(agent, "Write the lines.", max_turns=steps + 1,
                              run_config=RunConfig(tracing_disabled=True))
    return result.final_output


async def run_steps(steps: int, store: str = "memory") -> StepFigures:
    """One run of ``steps`` steps (``store`` must be ``memory``)."""
    if store not in STORES:
        raise ValueError(f"unknown store {store!r}; the OpenAI Agents SDK runs on {', '.join(STORES)}")
    clock = StepClock()
    agent = _agent(steps, clock)
    t0 = time.perf_counter_ns()
    clock.start()
    final = await _run(agent, steps)
    total = time.perf_counter_ns() - t0
    check_run(clock, steps, final)
    return StepFigures(label=LABEL, steps=steps, step_ns=clock.step_ns(), total_ns=total)


async def concurrent(n_runs: int = 1000, steps: int = 10) -> ConcurrentFigures:
    """``n_runs`` ``Runner.run`` calls on one agent under one ``asyncio.gather``."""
    import asyncio

    clock = StepClock()
    agent = _agent(steps, clock)
    await _run(agent, steps)  # warm-up
    clock.lines.clear()
    rss_before = current_rss()
    t0 = time.perf_counter_ns()
    finals = await asyncio.gather(*(_run(agent, steps) for _ in range(n_runs)))
    wall = time.perf_counter_ns() - t0
    if len(clock.lines) != n_runs * steps or any(f != FINAL_TEXT for f in finals):
        raise RuntimeError("a concurrent OpenAI Agents SDK run did not finish its script")
    return ConcurrentFigures(label="OpenAI Agents SDK, Runner.run", n_runs=n_runs, steps=steps,
                             wall_ns=wall, rss_before=rss_before, peak_rss=peak_rss())
