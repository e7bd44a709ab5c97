"""The host's API keys (issue 18): each key names one principal — an actor in a project — and
is stored only as its SHA-256 digest; the key itself is shown once, when it is created.

::

    key = "alk_<key_id>_<secret>"       # 256 random bits in the secret
    api_keys row: key_id, digest = sha256(key), actor, project, created_at, revoked_at

``authenticate`` takes an ``Authorization: Bearer KEY`` value and returns the key's
``Principal``, or raises ``AuthError`` (``UNAUTHENTICATED``) — the same error, whatever was wrong
(no header, a malformed key, an unknown or revoked one), so a caller learns nothing about which
keys exist. A random key of this length needs no slow hash: the digest is compared in constant
time.

Owns: making, listing, revoking and checking keys. Does not own: what a principal may see (the
host's routes filter by it), nor the HTTP layer.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentloom.errors import AgentLoomError
from agentloom.refs import Principal
from agentloom.store import Put, Store, WriteSet

__all__ = ["ApiKey", "ApiKeyError", "AuthError", "authenticate", "create_key", "list_keys",
           "revoke_key", "valid_name"]

PREFIX = "alk_"
_KEY = re.compile(r"^alk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$")

Commit = Callable[[WriteSet], Awaitable[None]]


class AuthError(AgentLoomError):
    """A request without a valid API key (``UNAUTHENTICATED``): the message never says which
    part was wrong."""

    default_code = "UNAUTHENTICATED"


class ApiKeyError(AgentLoomError):
    """A key command that cannot be done: an unknown key id (``KEY_NOT_FOUND``), a bad actor or
    project name (``INVALID_NAME``)."""

    default_code = "KEY_ERROR"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    """One key as stored: never the key itself."""

    key_id: str
    actor: str
    project: str
    created_at: float
    revoked_at: float | None

    @property
    def principal(self) -> Principal:
        return Principal(actor=self.actor, project=self.project)

    def to_dict(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "actor": self.actor, "project": self.project,
                "created_at": self.created_at, "revoked_at": self.revoked_at,
                "revoked": self.revoked_at is not None}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ApiKey:
        return cls(key_id=row["key_id"], actor=row["actor"], project=row["project"],
                   created_at=row["created_at"], revoked_at=row["revoked_at"])


def valid_name(value: str, what: str) -> str:
    """``value`` as an actor or project name (letters, digits, ``._@:+-``, at most 128, starting
    with a letter or digit), else ``ApiKeyError`` ``INVALID_NAME`` naming ``what``."""
    if not isinstance(value, str) or not _NAME.match(value):
        raise ApiKeyError(f"{what} {value!r} is not a valid name: 1 to 128 letters, digits or "
                        "._@:+- starting with a letter or digit", code="INVALID_NAME")
    return value


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("ascii")).hexdigest()


async def create_key(store: Store, commit: Commit, *, actor: str, project: str,
                     now: float | None = None) -> tuple[ApiKey, str]:
    """Make a key for ``actor`` in ``project``; returns its record and the key (shown once)."""
    valid_name(actor, "actor")
    valid_name(project, "project")
    key_id = secrets.token_hex(8)
    key = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    record = ApiKey(key_id=key_id, actor=actor, project=project,
                    created_at=time.time() if now is None else now, revoked_at=None)
    await commit(WriteSet((Put("api_keys", {
        "key_id": key_id, "digest": _digest(key), "actor": actor, "project": project,
        "created_at": record.created_at, "revoked_at": None, "data": {}}),)))
    return record, key


def list_keys(store: Store, *, revoked: bool = False) -> list[ApiKey]:
    """The store's keys, oldest first (``revoked``: the revoked ones too)."""
    keys = [ApiKey.from_row(r) for r in store.query("api_keys", order_by=("created_at",))]
    return keys if revoked else [k for k in keys if k.revoked_at is None]


async def revoke_key(store: Store, commit: Commit, key_id: str) -> ApiKey:
    """Revoke a key: every later request with it is refused. Revoking it again changes nothing
    (its first revocation time stays)."""
    row = store.get("api_keys", {"key_id": key_id})
    if row is None:
        raise ApiKeyError(f"no API key {key_id!r} in this store (agentloom keys list shows them)",
                        code="KEY_NOT_FOUND")
    record = ApiKey.from_row(row)
    if record.revoked_at is not None:
        return record
    now = time.time()
    await commit(WriteSet((Put("api_keys", {"key_id": key_id, "revoked_at": now}),)))
    return ApiKey(key_id=record.key_id, actor=record.actor, project=record.project,
                  created_at=record.created_at, revoked_at=now)


def authenticate(store: Store, authorization: str | None) -> Principal:
    """The principal of an ``Authorization: Bearer KEY`` header value.

    Raises:
        AuthError: no header, not a bearer key, or an unknown or revoked key.
    """
    refused = AuthError("a valid API key is required: Authorization: Bearer KEY "
                        "(agentloom keys create makes one)")
    if not authorization:
        raise refused
    scheme, _, key = authorization.strip().partition(" ")
    key = key.strip()
    match = _KEY.match(key)
    if scheme.lower() != "bearer" or match is None:
        raise refused
    row = store.get("api_keys", {"key_id": match.group(1)})
    if row is None or row["revoked_at"] is not None \
            or not hmac.compare_digest(row["digest"], _digest(key)):
        raise refused
    return Principal(actor=row["actor"], project=row["project"])
