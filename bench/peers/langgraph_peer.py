"""LangGraph peer: the usual two-node ReAct graph (agent → tools → agent) over ``MessagesState``.

The agent node calls a small ``BaseChatModel`` subclass (``ScriptedChatModel``) through
``bind_tools``, as a real chat model is called; the tools node is ``langgraph.prebuilt.ToolNode``
and routing is ``tools_condition``. Stores:

* ``memory`` — no checkpointer, sync ``graph.invoke`` (or, with ``api="async"``, ``ainvoke`` on
  the same graph with a coroutine agent node: the sync ``ToolNode`` hands every tool call to a
  fresh thread pool, the async one does not);
* ``sqlite`` — ``SqliteSaver`` on a fresh file (the saver switches it to WAL; ``synchronous`` is
  SQLite's default, FULL, recorded in the notes), ``durability="sync"``;
* ``postgres`` — ``PostgresSaver`` (autocommit, no pipeline, as ``from_conn_string`` opens it) in a
  fresh schema on :func:`common.pg_url`, dropped afterwards, ``durability="sync"``.

The durable runs use the sync API because ``SqliteSaver`` and ``PostgresSaver`` are the sync
savers; the no-checkpointer run uses it too, so the three differ only in the checkpointer.

Bytes per step (logical): every checkpoint row is charged to its superstep (``metadata.step``)
with the blobs it first references (PostgreSQL keeps channel values in ``checkpoint_blobs``,
SQLite inline in the checkpoint); every ``writes`` row to the superstep of the task that made it
(its parent checkpoint's step + 1). Step ``k`` is supersteps ``2k + 1`` (agent turn ``k``) and
``2k + 2`` (tool call ``k``); the input supersteps and the closing turn are left out. Sizes are
``length()`` on SQLite and ``pg_column_size()`` (stored, after TOAST compression) on PostgreSQL.
Physical growth: the SQLite file after ``wal_checkpoint(TRUNCATE)``, or the summed
``pg_total_relation_size`` of the saver's tables, from just after ``setup()`` to the run's end.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

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
    pg_url,
    step_text,
    turn_index,
)

STORES = ("memory", "sqlite", "postgres")
LABELS = {
    "memory": "LangGraph (no checkpointer)",
    "sqlite": "LangGraph + SqliteSaver (sync)",
    "postgres": "LangGraph + PostgresSaver (sync)",
}
LABEL_MEMORY_ASYNC = "LangGraph (no checkpointer, ainvoke)"
PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def available() -> str | None:
    """``None`` when LangGraph and both savers import, else why not."""
    return missing("langchain_core", "langgraph.prebuilt", "langgraph.checkpoint.sqlite",
                   "langgraph.checkpoint.postgres")


# -- the graph ----------------------------------------------------------------------------------
@functools.cache
def _model_class() -> type[Any]:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class ScriptedChatModel(BaseChatModel):
        """Tool call ``step k`` on turn ``k < steps``, then the final answer."""

        steps: int

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

        def _turn(self, history_len: int) -> ChatResult:
            k = turn_index(history_len)
            if k < self.steps:
                call = {"name": TOOL_NAME, "args": {"text": step_text(k)}, "id": f"call_{k}",
                        "type": "tool_call"}
                message = AIMessage(content="", tool_calls=[call])
            else:
                message = AIMessage(content=FINAL_TEXT)
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            return self._turn(len(messages))

        async def _agenerate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> ChatResult:
            return self._turn(len(messages))

    return ScriptedChatModel


def build_graph(steps: int, clock: StepClock, *, checkpointer: Any = None, use_async: bool = False) -> Any:
    """The compiled graph; ``use_async`` makes the agent node a coroutine (for ``ainvoke``)."""
    from langchain_core.tools import StructuredTool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    def append_line(text: str) -> str:
        return clock.tool(text)

    async def append_line_async(text: str) -> str:
        return clock.tool(text)

    tool = StructuredTool.from_function(func=append_line, coroutine=append_line_async, name=TOOL_NAME,
                                        description=TOOL_DESCRIPTION)
    model = _model_class()(steps=steps).bind_tools([tool])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def agent_async(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent_async if use_async else agent)
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def _config(steps: int, thread_id: str) -> dict[str, Any]:
    # Two supersteps per step plus the closing turn; the default limit (25) stops at 12 steps.
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 2 * steps + 10}


def _inputs() -> dict[str, Any]:
    from langchain_core.messages import HumanMessage

    return {"messages": [HumanMessage(content="Write the lines.")]}


def _run(graph: Any, steps: int, clock: StepClock, *, durable: bool) -> tuple[object, int]:
    extra = {"durability": "sync"} if durable else {}
    t0 = time.perf_counter_ns()
    clock.start()
    result = graph.invoke(_inputs(), _config(steps, "bench"), **extra)
    total = time.perf_counter_ns() - t0
    return result["messages"][-1].content, total


# -- bytes per step -----------------------------------------------------------------------------
def _per_step(checkpoints: Iterable[tuple[str, int, int]], writes: dict[str, int], steps: int) -> list[int]:
    """``checkpoints``: (id, superstep, bytes incl. new blobs); ``writes``: bytes by parent id."""
    by_superstep: dict[int, int] = {}
    for cid, superstep, size in checkpoints:
        by_superstep[superstep] = by_superstep.get(superstep, 0) + size
        by_superstep[superstep + 1] = by_superstep.get(superstep + 1, 0) + writes.get(cid, 0)
    return [by_superstep.get(2 * k + 1, 0) + by_superstep.get(2 * k + 2, 0) for k in range(steps)]


def _sqlite_bytes(conn: sqlite3.Connection, steps: int) -> list[int]:
    writes = dict(conn.execute("SELECT checkpoint_id, SUM(LENGTH(value)) FROM writes GROUP BY checkpoint_id"))
    rows = conn.execute(
        "SELECT checkpoint_id, metadata, LENGTH(checkpoint) + LENGTH(metadata) FROM checkpoints"
    ).fetchall()
    return _per_step(((cid, json.loads(meta)["step"], size) for cid, meta, size in rows), writes, steps)


def _pg_bytes(conn: Any, steps: int) -> list[int]:
    blobs = {(r["channel"], r["version"]): r["size"] for r in conn.execute(
        "SELECT channel, version, COALESCE(pg_column_size(blob), 0) AS size FROM checkpoint_blobs")}
    writes = {r["checkpoint_id"]: r["size"] for r in conn.execute(
        "SELECT checkpoint_id, SUM(pg_column_size(blob))::bigint AS size FROM checkpoint_writes "
        "GROUP BY checkpoint_id")}
    rows = conn.execute(
        "SELECT checkpoint_id, (metadata->>'step')::int AS step,"
        " checkpoint->'channel_versions' AS versions,"
        " pg_column_size(checkpoint) + pg_column_size(metadata) AS size"
        " FROM checkpoints ORDER BY checkpoint_id"
    ).fetchall()
    seen: set[tuple[str, str]] = set()
    charged = []
    for r in rows:
        size = r["size"]
        for channel, version in (r["versions"] or {}).items():
            key = (channel, str(version))
            if key in blobs and key not in seen:
                seen.add(key)
                size += blobs[key]
        charged.append((r["checkpoint_id"], r["step"], size))
    return _per_step(charged, writes, steps)


def _pg_relation_bytes(conn: Any) -> int:
    row = conn.execute(
        "SELECT SUM(pg_total_relation_size(c.oid))::bigint AS size FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relname = ANY(%s)", (list(PG_TABLES),)).fetchone()
    return int(row["size"])


@contextmanager
def _pg_schema(url: str) -> Iterator[str]:
    import psycopg

    schema = f"bench_lg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield schema
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


# -- the runs -----------------------------------------------------------------------------------
async def run_steps(steps: int, store: str, *, api: Literal["sync", "async"] = "sync") -> StepFigures:
    """One run of ``steps`` steps on ``store`` (``memory``, ``sqlite`` or ``postgres``).

    ``api="sync"`` runs ``graph.invoke`` on the calling thread, blocking the event loop for the
    run; ``api="async"`` (``memory`` only) awaits ``graph.ainvoke`` on a graph whose agent node is
    a coroutine, so no step goes through a thread.
    """
    clock = StepClock()
    if store == "memory" and api == "async":
        graph = build_graph(steps, clock, use_async=True)
        t0 = time.perf_counter_ns()
        clock.start()
        result = await graph.ainvoke(_inputs(), _config(steps, "bench"))
        total = time.perf_counter_ns() - t0
        check_run(clock, steps, result["messages"][-1].content)
        return StepFigures(label=LABEL_MEMORY_ASYNC, steps=steps, step_ns=clock.step_ns(), total_ns=total)
    if api != "sync":
        raise ValueError(f"api={api!r} is measured on the memory store only")
    if store == "memory":
        final, total = _run(build_graph(steps, clock), steps, clock, durable=False)
        check_run(clock, steps, final)
        return StepFigures(label=LABELS[store], steps=steps, step_ns=clock.step_ns(), total_ns=total)
    if store == "sqlite":
        return _run_sqlite(steps, clock)
    if store == "postgres":
        return _run_postgres(steps, clock)
    raise ValueError(f"unknown store {store!r}; LangGraph runs on {', '.join(STORES)}")


def _run_sqlite(steps: int, clock: StepClock) -> StepFigures:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with tempfile.TemporaryDirectory(prefix="bench-lg-") as tmp:
        path = Path(tmp) / "checkpoints.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            before = path.stat().st_size
            synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]
            journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
            final, total = _run(build_graph(steps, clock, checkpointer=saver), steps, clock, durable=True)
            check_run(clock, steps, final)
            per_step = _sqlite_bytes(conn, steps)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            growth = path.stat().st_size - before
        finally:
            conn.close()
    notes = [f"SqliteSaver: journal_mode={journal}, synchronous={synchronous} (2 = FULL)"]
    return StepFigures(label=LABELS["sqlite"], steps=steps, step_ns=clock.step_ns(), total_ns=total,
                       bytes_per_step=per_step, stored_growth=growth, notes=notes)


def _run_postgres(steps: int, clock: StepClock) -> StepFigures:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    url = pg_url()
    with _pg_schema(url) as schema, psycopg.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=f"-c search_path={schema}"
    ) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        before = _pg_relation_bytes(conn)
        sync_commit = conn.execute("SHOW synchronous_commit").fetchone()["synchronous_commit"]
        final, total = _run(build_graph(steps, clock, checkpointer=saver), steps, clock, durable=True)
        check_run(clock, steps, final)
        per_step = _pg_bytes(conn, steps)
        growth = _pg_relation_bytes(conn) - before
    notes = [f"PostgresSaver: autocommit, no pipeline, synchronous_commit={sync_commit}"]
    return StepFigures(label=LABELS["postgres"], steps=steps, step_ns=clock.step_ns(), total_ns=total,
                       bytes_per_step=per_step, stored_growth=growth, notes=notes)


async def concurrent(n_runs: int = 1000, steps: int = 10) -> ConcurrentFigures:
    """``n_runs`` ``ainvoke`` runs of the no-checkpointer graph under one ``asyncio.gather``.

    One compiled graph serves every run (the model keys its turn on the history, not on state).
    """
    import asyncio

    clock = StepClock()
    graph = build_graph(steps, clock, use_async=True)
    config = _config(steps, "bench")
    await graph.ainvoke(_inputs(), config)  # warm-up
    clock.lines.clear()
    rss_before = current_rss()
    t0 = time.perf_counter_ns()
    results = await asyncio.gather(*(graph.ainvoke(_inputs(), config) for _ in range(n_runs)))
    wall = time.perf_counter_ns() - t0
    if len(clock.lines) != n_runs * steps or any(r["messages"][-1].content != FINAL_TEXT for r in results):
        raise RuntimeError("a concurrent LangGraph run did not finish its script")
    return ConcurrentFigures(label="LangGraph (no checkpointer), ainvoke", n_runs=n_runs, steps=steps,
                             wall_ns=wall, rss_before=rss_before, peak_rss=peak_rss())
