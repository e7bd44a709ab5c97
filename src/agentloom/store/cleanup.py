"""The ``cleanup_jobs`` table: a run's workspace cleanup, done or left to retry.

::

    store.get("cleanup_jobs", …)    ──► CleanupJobRecord ──► get_cleanup_job(store, job_id)
    store.query("cleanup_jobs", …)  ──► CleanupJobRecord ──► pending_cleanup_jobs(store)
    Insert / Put("cleanup_jobs", …) ◄── cleanup_job_op(…)

Owns: ``CleanupJobRecord`` and the rows' shape. Does not own: what a cleanup does, its
back-off or when it is retried (``workspace.cleanup``), nor committing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Put, Store

__all__ = ["CleanupJobRecord", "cleanup_job_op", "get_cleanup_job", "pending_cleanup_jobs",
           "run_cleanup_jobs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupJobRecord:
    """One ``cleanup_jobs`` row: the cleanup of ``run_id``'s folders, ``pending`` (to retry)
    or ``done``, tried ``attempts`` times. ``data`` holds the lease epoch, what was deleted
    and kept, the errors, the workspace root and the next due try (``next_try``)."""

    job_id: str
    run_id: str
    state: str
    attempts: int
    created_at: float
    updated_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> CleanupJobRecord:
        return cls(job_id=row["job_id"], run_id=row["run_id"], state=row["state"],
                   attempts=int(row["attempts"]), created_at=row["created_at"],
                   updated_at=row["updated_at"], data=row.get("data") or {})


def get_cleanup_job(store: Store, job_id: str) -> CleanupJobRecord | None:
    """The job, or None when there is none of that id."""
    row = store.get("cleanup_jobs", {"job_id": job_id})
    return None if row is None else CleanupJobRecord.from_row(row)


def pending_cleanup_jobs(store: Store) -> list[CleanupJobRecord]:
    """The jobs still ``pending``, oldest first."""
    return [CleanupJobRecord.from_row(r) for r in store.query(
        "cleanup_jobs", {"state": "pending"}, order_by=("created_at",))]


def run_cleanup_jobs(store: Store, run_id: str) -> list[CleanupJobRecord]:
    """The cleanup jobs of ``run_id``, done or not, in the store's order."""
    return [CleanupJobRecord.from_row(r)
            for r in store.query("cleanup_jobs", {"run_id": run_id})]


def cleanup_job_op(*, new: bool, job_id: str, run_id: str, state: str, attempts: int,
                   created_at: float, updated_at: float, data: Mapping[str, Any]) -> Put | Insert:
    """The job's row as it now stands: inserted the first time (``new``), put after."""
    row = {"job_id": job_id, "run_id": run_id, "state": state, "attempts": attempts,
           "created_at": created_at, "updated_at": updated_at, "data": data}
    return Insert("cleanup_jobs", row) if new else Put("cleanup_jobs", row)


def has_cleanup_job(store: Store, run_id: str) -> bool:
    """Whether ``run_id`` has a cleanup job, done or not (its run-end cleanup was recorded)."""
    return bool(store.query("cleanup_jobs", {"run_id": run_id}, limit=1))
