"""The ``context_records`` table: frozen records of its rows, the reads, the insert.

::

    store.query("context_records", …) ──► ContextRecord.from_row ──► history / current / in_scope
    Insert("context_records", …)      ◄── record_insert(…)

A record is never overwritten: a change inserts revision ``n + 1`` under the same key
``(scope_id, record_id)``, and that insert is the compare-and-set (a second writer of
``n + 1`` gets a ``RevisionConflict``).

Owns: ``ContextRecord`` and the rows' shape. Does not own: the revision rules, the effective
view of a scope or what a record holds (``context.manager.ContextManager``), nor committing —
``record_insert`` returns the write the caller commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Store

__all__ = ["ContextRecord", "current", "history", "in_scope", "record_insert"]


@dataclass(frozen=True, slots=True)
class ContextRecord:
    """One revision of one context record: its scope, stable ``record_id``, ``revision``, kind,
    position in the view and data. Revisions are never overwritten; the view is the latest
    revision of each record."""

    scope_id: str
    record_id: str
    revision: int
    kind: str
    position: str
    data: dict[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ContextRecord:
        return cls(
            row["scope_id"], row["record_id"], int(row["revision"]), row["kind"],
            row["position"], row["data"],
        )


def history(store: Store, scope_id: str, record_id: str) -> list[ContextRecord]:
    """Every revision of one record, oldest first."""
    rows = store.query("context_records", {"scope_id": scope_id, "record_id": record_id},
                       order_by=("revision",))
    return [ContextRecord.from_row(r) for r in rows]


def current(store: Store, scope_id: str, record_id: str) -> ContextRecord | None:
    """The latest revision of one record, or None when it has none."""
    rows = store.query("context_records", {"scope_id": scope_id, "record_id": record_id},
                       order_by=("revision",), descending=True, limit=1)
    return ContextRecord.from_row(rows[0]) if rows else None


def in_scope(store: Store, scope_id: str) -> list[ContextRecord]:
    """Every revision of every record of ``scope_id``, in no particular order."""
    return [ContextRecord.from_row(r)
            for r in store.query("context_records", {"scope_id": scope_id})]


def record_insert(*, scope_id: str, run_id: str, record_id: str, revision: int, kind: str,
                  position: str, created_at: float, data: Mapping[str, Any]) -> Insert:
    """The row of revision ``revision`` of a record (its insert is the CAS on ``revision - 1``)."""
    return Insert("context_records", {
        "scope_id": scope_id, "record_id": record_id, "revision": revision, "run_id": run_id,
        "position": position, "kind": kind, "created_at": created_at, "data": data})
