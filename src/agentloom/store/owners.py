"""Owner tombstones (000 §7.4): a deleted agent or workflow gets no new run.

Deleting an owner first commits its tombstone — a ``deleted_owners`` row, ``deleting`` while
its runs are stopped and its rows, blobs and folders removed, ``deleted`` once all of that is
done — and only then touches anything of it. Every place that creates a run or a session
checks the tombstone first (``check_owner``) and refuses with ``OWNER_DELETED``. The
tombstone itself holds no content of the owner: its identity, when, and the counts of what
was deleted. An owner is ``kind:id``: its tombstone covers every space, as its file root does.

Owns: the tombstone row and the refusal. Does not own: what deleting an owner removes
(``agent.owners``) nor its folders (``workspace.cleanup``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.refs import OwnerRef
from agentloom.store.ports import Put, Store

__all__ = ["OWNER_DELETED", "TOMBSTONES", "OwnerDeleted", "TombstoneState", "check_owner",
           "owner_label", "tombstone", "tombstone_op"]

TOMBSTONES = "deleted_owners"
OWNER_DELETED = "OWNER_DELETED"
TombstoneState = Literal["deleting", "deleted"]


class OwnerDeleted(AgentLoomError):
    """A run or session of an owner that was deleted (or is being deleted) was refused
    (``OWNER_DELETED``): nothing was created."""

    default_code = OWNER_DELETED
    default_category: ErrorCategory = "not_found"


def owner_label(owner: OwnerRef) -> str:
    """The owner as the CLI writes it: ``kind:id``."""
    return f"{owner.kind}:{owner.id}"


def tombstone(store: Store, owner: OwnerRef) -> dict[str, Any] | None:
    """The owner's ``deleted_owners`` row, or None while it was never deleted."""
    return store.get(TOMBSTONES, {"owner_kind": owner.kind, "owner_id": owner.id})


def check_owner(store: Store, owner: OwnerRef) -> None:
    """Refuse a new run or session of a deleted owner.

    Raises:
        OwnerDeleted: the owner has a tombstone (``deleting`` or ``deleted``).
    """
    row = tombstone(store, owner)
    if row is not None:
        raise OwnerDeleted(
            f"{owner_label(owner)} was deleted (agentloom owners delete; state {row['state']}): "
            "it can start no run and open no session")


def tombstone_op(owner: OwnerRef, state: TombstoneState, *, created_at: float | None = None,
                 data: Mapping[str, Any] | None = None) -> Put:
    """The write of the owner's tombstone in ``state`` (``data``: what was deleted)."""
    now = time.time()
    return Put(TOMBSTONES, {
        "owner_kind": owner.kind, "owner_id": owner.id, "space_id": owner.space_id,
        "state": state, "created_at": now if created_at is None else created_at,
        "updated_at": now, "data": dict(data or {})})
