"""The ``api_keys`` repository: the host's keys as stored — never the key itself, only its
SHA-256 digest — as frozen ``ApiKey`` records, their reads and the ops that write them.

::

    store.get("api_keys", …)    ──► ApiKey.from_row ──► get_key(store, key_id)
    store.query("api_keys", …)  ──► ApiKey.from_row ──► all_keys(store)
    Put("api_keys", row)        ◄── new_key_op(record) / revoke_op(key_id, now=…)

Owns: ``ApiKey``, its reads and op builders. Does not own: making a key, checking one or
refusing a request (``host.keys``), when a write commits (the caller's commit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentloom.refs import Principal
from agentloom.store.ports import Put, Store

__all__ = ["ApiKey", "all_keys", "get_key", "new_key_op", "revoke_op"]

TABLE = "api_keys"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    """One key as stored: never the key itself. ``digest`` (the SHA-256 of the key, what a
    request's key is compared with) is left out of ``to_dict`` and ``repr``."""

    key_id: str
    actor: str
    project: str
    created_at: float
    revoked_at: float | None
    digest: str = field(default="", repr=False, compare=False)

    @property
    def principal(self) -> Principal:
        return Principal(actor=self.actor, project=self.project)

    def to_dict(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "actor": self.actor, "project": self.project,
                "created_at": self.created_at, "revoked_at": self.revoked_at,
                "revoked": self.revoked_at is not None}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ApiKey:
        return cls(key_id=row["key_id"], actor=row["actor"], project=row["project"],
                   created_at=row["created_at"], revoked_at=row["revoked_at"],
                   digest=row.get("digest") or "")


def get_key(store: Store, key_id: str) -> ApiKey | None:
    """The key ``key_id``, revoked or not; None when the store has none of that id."""
    row = store.get(TABLE, {"key_id": key_id})
    return None if row is None else ApiKey.from_row(row)


def all_keys(store: Store) -> list[ApiKey]:
    """Every key of the store, revoked ones too, oldest first."""
    return [ApiKey.from_row(r) for r in store.query(TABLE, order_by=("created_at",))]


def new_key_op(key: ApiKey) -> Put:
    """The ``Put`` of a new key's row (its ``digest`` set: the key itself is never stored)."""
    return Put(TABLE, {"key_id": key.key_id, "digest": key.digest, "actor": key.actor,
                       "project": key.project, "created_at": key.created_at,
                       "revoked_at": key.revoked_at, "data": {}})


def revoke_op(key_id: str, *, now: float) -> Put:
    """The ``Put`` revoking the key at ``now`` (its other columns stay)."""
    return Put(TABLE, {"key_id": key_id, "revoked_at": now})
