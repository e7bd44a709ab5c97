"""The ``revocations`` table: a holder's receipt that its processes of (run, epoch) are gone.

::

    store.get("revocations", …) ──► RevocationRecord ──► get_revocation(store, run_id, epoch)
    Put("revocations", …)       ◄── revocation_put(…)

When a holder lets a run go it stops the run's sandbox processes and stdio servers of its
lease and records whether that is confirmed (the kernel's ``record_revocation``). A takeover
of the run reads the receipt of the epoch it would take from (``agent.leases``): a confirmed
one lets it take the run at once.

Owns: ``RevocationRecord`` and the rows' shape. Does not own: revoking (the environment), when
a receipt is written (the kernel), what a takeover decides from it (``agent.leases``), nor
committing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Put, Store

__all__ = ["RevocationRecord", "get_revocation", "revocation_put"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RevocationRecord:
    """One receipt: ``worker_id`` let epoch ``lease_epoch`` of ``run_id`` go; ``confirmed``
    when every process of it is known gone (``data.killed``: how many were stopped)."""

    run_id: str
    lease_epoch: int
    worker_id: str
    confirmed: bool
    created_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RevocationRecord:
        return cls(run_id=row["run_id"], lease_epoch=int(row["lease_epoch"]),
                   worker_id=row["worker_id"], confirmed=bool(row["confirmed"]),
                   created_at=row["created_at"], data=row.get("data") or {})


def get_revocation(store: Store, run_id: str, lease_epoch: int) -> RevocationRecord | None:
    """The receipt of epoch ``lease_epoch`` of the run, or None when none was written."""
    row = store.get("revocations", {"run_id": run_id, "lease_epoch": lease_epoch})
    return None if row is None else RevocationRecord.from_row(row)


def revocation_put(*, run_id: str, lease_epoch: int, worker_id: str, confirmed: bool,
                   created_at: float, killed: int) -> Put:
    """The receipt's row (a second one for the same epoch replaces it)."""
    return Put("revocations", {"run_id": run_id, "lease_epoch": lease_epoch,
                               "worker_id": worker_id, "confirmed": 1 if confirmed else 0,
                               "created_at": created_at, "data": {"killed": killed}})
