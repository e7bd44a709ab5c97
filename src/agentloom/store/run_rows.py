"""Every row of one run's calls exactly as stored, for a harness or a forensic view to compare
with what it saw happen (``testing.killharness``).

::

    store.query("operations", run)          ──► RunRows.operations   (oldest first)
    store.query("attempts", operation)      ──► RunRows.attempts     (by attempt_no)
    store.query("hook_invocations", op.)    ──► RunRows.hook_rows    (by timing, position)
    store.query("context_records", run)     ──► RunRows.context      (by record_id, revision)

The rows are not decoded into records on purpose: a crash test checks the columns a
damaged or half-written row has, which a record would refuse or normalise. Code that acts on
rows reads them through the tables' repositories (``store.records``, ``store.operations``,
``store.context_records``).

``every_row`` is wider: every row of a run in every table with a ``run_id`` (and the attempts
and hook rows of its operations), keyed by table — what owner deletion scans for copies of a
deleted agent's content in another owner's run (``agent.derived``); ``operation_rows`` and
``context_record_rows`` are the two tables it also reads alone.

Owns: ``RunRows``, ``run_rows``, ``every_row``, ``operation_rows``, ``context_record_rows``.
Does not own: any write, any table's typed record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Store
from agentloom.store.schema import TABLES

__all__ = ["RunRows", "context_record_rows", "every_row", "operation_rows", "run_rows"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRows:
    """One run's call rows as stored: its operations oldest first; each operation's attempts
    by ``attempt_no`` and hook rows by (``timing``, ``position``), keyed by ``operation_id``;
    its context records' revisions by ``record_id``, oldest first."""

    operations: Sequence[Mapping[str, Any]]
    attempts: Mapping[str, Sequence[Mapping[str, Any]]]
    hook_rows: Mapping[str, Sequence[Mapping[str, Any]]]
    context: Mapping[str, Sequence[Mapping[str, Any]]]


def run_rows(store: Store, run_id: str) -> RunRows:
    """Every operation, attempt, hook and context row of ``run_id``, as stored now."""
    operations = store.query("operations", {"run_id": run_id}, order_by=("created_at",))
    attempts = {r["operation_id"]: store.query("attempts", {"operation_id": r["operation_id"]},
                                               order_by=("attempt_no",))
                for r in operations}
    hook_rows = {r["operation_id"]: store.query(
        "hook_invocations", {"operation_id": r["operation_id"]}, order_by=("timing", "position"))
        for r in operations}
    context: dict[str, list[dict[str, Any]]] = {}
    for record in store.query("context_records", {"run_id": run_id},
                              order_by=("record_id", "revision")):
        context.setdefault(record["record_id"], []).append(record)
    return RunRows(operations=operations, attempts=attempts, hook_rows=hook_rows,
                   context=context)


def operation_rows(store: Store, run_id: str | None = None) -> list[dict[str, Any]]:
    """The operation rows of ``run_id`` as stored (every run's when ``None``)."""
    return store.query("operations", None if run_id is None else {"run_id": run_id})


def context_record_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Every context record revision of ``run_id`` as stored."""
    return store.query("context_records", {"run_id": run_id})


def every_row(store: Store, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of ``run_id`` as stored, by table: each table with a ``run_id`` column (a
    key for each, empty when it holds none), and the ``attempts`` and ``hook_invocations`` of
    its operations."""
    rows = {name: store.query(name, {"run_id": run_id}) for name, t in TABLES.items()
            if "run_id" in t.columns}
    for name in ("attempts", "hook_invocations"):
        rows[name] = [r for op in rows["operations"]
                      for r in store.query(name, {"operation_id": op["operation_id"]})]
    return rows
