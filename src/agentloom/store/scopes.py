"""The ``file_roots`` and ``workspace_scopes`` tables: frozen records, reads, op builders.

::

    file_roots(owner_kind, owner_id PK, space_id, file_root_id)  ──► file_root_id(store, …)
    workspace_scopes(workspace_scope_id PK, owner, partition, run, state, …)
                                  ──► ScopeRecord ──► get_scope / find_scope / scopes_where
    Insert("file_roots", …)       ◄── file_root_insert(…)   (a second insert: RevisionConflict)
    Insert("workspace_scopes", …) ◄── scope_insert(…)       (unique per creation key)
    Put("workspace_scopes", …)    ◄── scope_state_put(…)    (registered → revoked → deleted)

Owns: ``ScopeRecord`` and the rows' shape. Does not own: what a scope means — its folder,
who may write it, when it is revoked or deleted (``workspace.scope.WorkspaceStore``,
``workspace.cleanup``) — nor committing: the op builders return writes the caller commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Put, Store

__all__ = ["ScopeRecord", "file_root_id", "file_root_insert", "find_scope", "get_scope",
           "scope_insert", "scope_state_put", "scopes_where"]


# -- file roots ----------------------------------------------------------------------------


def file_root_id(store: Store, owner_kind: str, owner_id: str) -> str | None:
    """The owner's ``file_root_id``, or None before its first scope."""
    row = store.get("file_roots", {"owner_kind": owner_kind, "owner_id": owner_id})
    return None if row is None else str(row["file_root_id"])


def file_root_insert(*, owner_kind: str, owner_id: str, space_id: str, file_root_id: str,
                     created_at: float) -> Insert:
    """The owner's ``file_roots`` row (a second insert is a ``RevisionConflict``: the first
    writer's root is kept)."""
    return Insert("file_roots", {"owner_kind": owner_kind, "owner_id": owner_id,
                                 "space_id": space_id, "file_root_id": file_root_id,
                                 "created_at": created_at})


# -- workspace scopes ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ScopeRecord:
    """One ``workspace_scopes`` row. ``data`` holds its ``path`` (and ``bound``: the real path
    of a user's folder bound as the workspace)."""

    workspace_scope_id: str
    owner_kind: str
    owner_id: str
    space_id: str
    file_root_id: str
    partition_kind: str
    partition_id: str
    run_id: str
    invocation_id: str | None
    persistent: bool
    state: str
    created_at: float
    updated_at: float
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ScopeRecord:
        return cls(workspace_scope_id=row["workspace_scope_id"], owner_kind=row["owner_kind"],
                   owner_id=row["owner_id"], space_id=row["space_id"],
                   file_root_id=row["file_root_id"], partition_kind=row["partition_kind"],
                   partition_id=row["partition_id"], run_id=row["run_id"],
                   invocation_id=row["invocation_id"], persistent=bool(row["persistent"]),
                   state=row["state"], created_at=row["created_at"],
                   updated_at=row["updated_at"], data=row.get("data") or {})


def get_scope(store: Store, workspace_scope_id: str) -> ScopeRecord | None:
    """The scope, or None when it is not registered."""
    row = store.get("workspace_scopes", {"workspace_scope_id": workspace_scope_id})
    return None if row is None else ScopeRecord.from_row(row)


def find_scope(store: Store, *, owner_kind: str, owner_id: str, partition_kind: str,
               partition_id: str, run_id: str) -> ScopeRecord | None:
    """The scope registered under this creation key, or None."""
    rows = store.query("workspace_scopes", {
        "owner_kind": owner_kind, "owner_id": owner_id, "partition_kind": partition_kind,
        "partition_id": partition_id, "run_id": run_id}, limit=1)
    return ScopeRecord.from_row(rows[0]) if rows else None


def scopes_where(store: Store, *, owner_kind: str | None = None, owner_id: str | None = None,
                 partition_kind: str | None = None, partition_id: str | None = None,
                 run_id: str | None = None, state: str | None = None,
                 persistent: bool | None = None) -> list[ScopeRecord]:
    """The scopes equal to every filter given (None: not filtered), in no particular order."""
    where: dict[str, object] = {column: value for column, value in (
        ("owner_kind", owner_kind), ("owner_id", owner_id), ("partition_kind", partition_kind),
        ("partition_id", partition_id), ("run_id", run_id), ("state", state))
        if value is not None}
    if persistent is not None:
        where["persistent"] = int(persistent)
    return [ScopeRecord.from_row(r) for r in store.query("workspace_scopes", where)]


def scope_insert(*, workspace_scope_id: str, owner_kind: str, owner_id: str, space_id: str,
                 file_root_id: str, partition_kind: str, partition_id: str, run_id: str,
                 invocation_id: str | None, persistent: bool, created_at: float,
                 data: Mapping[str, Any]) -> Insert:
    """The row registering a scope (``registered``); unique per ``(owner, partition, run)``:
    a concurrent registration of the same key is a ``RevisionConflict``."""
    return Insert("workspace_scopes", {
        "workspace_scope_id": workspace_scope_id, "owner_kind": owner_kind,
        "owner_id": owner_id, "space_id": space_id, "file_root_id": file_root_id,
        "partition_kind": partition_kind, "partition_id": partition_id, "run_id": run_id,
        "invocation_id": invocation_id, "persistent": int(persistent), "state": "registered",
        "created_at": created_at, "updated_at": created_at, "data": data})


def scope_state_put(workspace_scope_id: str, state: str, *, updated_at: float) -> Put:
    """The ``Put`` moving a scope to ``state`` (``revoked``, ``deleted``)."""
    return Put("workspace_scopes", {"workspace_scope_id": workspace_scope_id, "state": state,
                                    "updated_at": updated_at})
