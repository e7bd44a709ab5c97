"""AgentLoom: one ``AgentSpec`` on a scripted in-process adapter with one SDK tool, run by
``Runtime.run`` on the in-memory store, a durable SQLite file or the PostgreSQL server.

The adapter scripts the turns from the length of the history it is handed (the task, then an
assistant turn and a tool result per step), exactly like the peers' fake models. Every model
turn and every tool call goes through the whole recorded path (intent, Attempt, raw and
effective result; context records for the tool), fenced by the run's lease.

Bytes per step (durable stores): the stored length of every row a step wrote — its model
call's and tool call's ``operations`` rows, their ``attempts`` rows and the tool's
``context_records`` — as ``len(json.dumps(row))`` of what the store gives back.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator
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
    peak_rss,
    pg_url,
    step_text,
    turn_index,
)

STORES = ("memory", "sqlite", "postgres")
LABELS = {"memory": "AgentLoom (in memory)", "sqlite": "AgentLoom durable SQLite",
          "postgres": "AgentLoom durable PostgreSQL"}


def available() -> str | None:
    return None


class _StepModel:
    """Turn ``k`` of ``steps``: one ``append_line`` call, then the final text."""

    model = "steps"

    def __init__(self, steps: int) -> None:
        self.steps = steps

    async def stream_once(self, request: Any, attempt: Any) -> AsyncIterator[Any]:
        from agentloom.models.types import Finish, TextDelta, ToolCallDelta

        k = turn_index(len(request.messages))
        if k < self.steps:
            yield ToolCallDelta(index=0, id=f"call_{k}", name=TOOL_NAME,
                                arguments=json.dumps({"text": step_text(k)}))
            yield Finish("tool_calls")
        else:
            yield TextDelta(FINAL_TEXT)
            yield Finish("stop")

    async def discover(self, connection: Any = None) -> list[Any]:
        return []

    async def aclose(self) -> None:
        return None


def _tool(clock: StepClock) -> Any:
    from agentloom import StrictInput, Tool, ToolContext

    class LineInput(StrictInput):
        text: str

    class AppendLine(Tool[LineInput]):
        name = TOOL_NAME
        description = TOOL_DESCRIPTION

        async def execute(self, args: LineInput, ctx: ToolContext) -> str:
            return clock.tool(args.text)

    return AppendLine()


def _store_url(store: str, folder: str) -> tuple[str, str | None]:
    if store == "memory":
        return "memory://", None
    if store == "sqlite":
        return f"sqlite:///{folder}/agentloom.db", None
    schema = f"bench_al_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    return f"{pg_url()}?schema={schema}", schema


def _drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(pg_url(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _runtime(steps: int, clock: StepClock, url: str, folder: str) -> Any:
    from agentloom.agent import AgentSpec, Limits, Runtime

    agent = AgentSpec(name="main", model=_StepModel(steps), instructions="Write the lines.",
                      tools=(_tool(clock),), limits=Limits(max_steps=steps + 1),
                      window=128_000)  # a model of its own: its window is given
    return Runtime([agent], store=url, workspace_root=f"{folder}/workspaces")


def _bytes_per_step(runtime: Any, run_id: str, steps: int) -> list[int]:
    store = runtime.store
    per_turn: dict[int, int] = {}
    for op in store.query("operations", {"run_id": run_id}):
        key = op["logical_key"]  # <run>/t<n>/model or <run>/t<n>/c0
        turn = int(key.split("/t", 1)[1].split("/", 1)[0])
        size = len(json.dumps(op, default=str))
        size += sum(len(json.dumps(a, default=str))
                    for a in store.query("attempts", {"operation_id": op["operation_id"]}))
        per_turn[turn] = per_turn.get(turn, 0) + size
    for record in store.query("context_records", {"run_id": run_id}):
        operation = record["data"].get("operation_id")
        row = store.get("operations", {"operation_id": operation}) if operation else None
        if row is not None:
            turn = int(row["logical_key"].split("/t", 1)[1].split("/", 1)[0])
            per_turn[turn] = per_turn.get(turn, 0) + len(json.dumps(record, default=str))
    return [per_turn.get(k, 0) for k in range(1, steps + 1)]


async def run_steps(steps: int, store: str = "memory") -> StepFigures:
    if store not in STORES:
        raise ValueError(f"unknown store {store!r}; AgentLoom runs on {', '.join(STORES)}")
    clock = StepClock()
    with tempfile.TemporaryDirectory(prefix="bench-al-") as folder:
        url, schema = _store_url(store, folder)
        runtime = _runtime(steps, clock, url, folder)
        try:
            t0 = time.perf_counter_ns()
            clock.start()
            result = await runtime.run("Write the lines.")
            total = time.perf_counter_ns() - t0
            check_run(clock, steps, result.output)
            sizes = _bytes_per_step(runtime, result.run_id, steps) if store != "memory" else None
        finally:
            await runtime.aclose()
            if schema:
                _drop_schema(schema)
    notes = []
    if store == "sqlite":
        notes.append("SQLite: journal_mode=wal, synchronous=FULL; 2 commits per step "
                     "(tool intent + the model call it carries, tool result)")
    if store == "postgres":
        notes.append("PostgreSQL: synchronous_commit=on; 2 commits per step, each one query")
    return StepFigures(label=LABELS[store], steps=steps, step_ns=clock.step_ns(), total_ns=total,
                       bytes_per_step=sizes, notes=notes)


async def concurrent(n_runs: int = 1000, steps: int = 10) -> ConcurrentFigures:
    """``n_runs`` runs of one runtime on the in-memory store under one ``asyncio.gather``."""
    clock = StepClock()
    with tempfile.TemporaryDirectory(prefix="bench-al-") as folder:
        runtime = _runtime(steps, clock, "memory://", folder)
        try:
            await runtime.run("warm-up")
            clock.lines.clear()
            rss_before = current_rss()
            t0 = time.perf_counter_ns()
            results = await asyncio.gather(*(runtime.run("Write the lines.")
                                             for _ in range(n_runs)))
            wall = time.perf_counter_ns() - t0
        finally:
            await runtime.aclose()
    if len(clock.lines) != n_runs * steps or any(r.output != FINAL_TEXT for r in results):
        raise RuntimeError("a concurrent AgentLoom run did not finish its script")
    return ConcurrentFigures(label="AgentLoom (in memory), Runtime.run", n_runs=n_runs,
                             steps=steps, wall_ns=wall, rss_before=rss_before,
                             peak_rss=peak_rss())
