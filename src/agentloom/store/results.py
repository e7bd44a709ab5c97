"""The ``results`` table: a stored large result, named by its ``result_ref``.

::

    store.get("results", …) ──► ResultRecord.from_row ──► get_result(store, result_ref)
    Insert("results", …)    ◄── result_insert(…)

A row says whose result it is (``run_id``, ``role``: who may read it) and where its bytes
are: a blob of the store (``digest``) or, with ``location``, a file of the shared root's
blob store. It is written once (``if_absent``): a replayed commit keeps the first row.

Owns: ``ResultRecord`` and the rows' shape. Does not own: deciding what is stored as a
result (``context.manager.ContextManager.result_ops``), authorising or paging a read
(``context.results.ResultReadHandler``), nor committing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Store

__all__ = ["ResultRecord", "get_result", "result_insert"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRecord:
    """One ``results`` row: the result of ``operation_id`` in ``run_id``, made by ``role``
    (None: any role of the run may read it), ``size`` bytes under ``digest`` — in the file
    blob store at ``location`` when set, else a store blob."""

    result_ref: str
    operation_id: str
    run_id: str
    role: str | None
    scope_id: str | None
    digest: str
    size: int
    created_at: float
    location: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ResultRecord:
        return cls(result_ref=row["result_ref"], operation_id=row["operation_id"],
                   run_id=row["run_id"], role=row.get("role"), scope_id=row.get("scope_id"),
                   digest=row["digest"], size=int(row["size"]), created_at=row["created_at"],
                   location=row.get("location"))


def get_result(store: Store, result_ref: str) -> ResultRecord | None:
    """The stored result ``result_ref`` names, or None."""
    row = store.get("results", {"result_ref": result_ref})
    return None if row is None else ResultRecord.from_row(row)


def result_insert(*, result_ref: str, operation_id: str, run_id: str, role: str | None,
                  scope_id: str | None, digest: str, size: int, created_at: float,
                  location: str | None = None) -> Insert:
    """The ``results`` row (``if_absent``); ``location``: its bytes are a file of the shared
    root's blob store, not a store blob."""
    row: dict[str, Any] = {"result_ref": result_ref, "operation_id": operation_id,
                           "run_id": run_id, "role": role, "scope_id": scope_id,
                           "digest": digest, "size": size, "created_at": created_at}
    if location is not None:
        row["location"] = location
    return Insert("results", row, if_absent=True)
