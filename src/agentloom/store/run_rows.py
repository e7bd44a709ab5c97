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

Owns: ``RunRows`` and ``run_rows``. Does not own: any write, any table's typed record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Store

__all__ = ["RunRows", "run_rows"]


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
