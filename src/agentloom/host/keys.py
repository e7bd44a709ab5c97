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

Owns: making, listing, revoking and checking keys. Does not own: the rows (the repository
``store.api_keys``: ``ApiKey``, re-exported here), what a principal may see (the host's routes
filter by it), nor the HTTP layer.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from agentloom.errors import AgentLoomError
from agentloom.refs import Principal
from agentloom.store import Store, WriteSet
from agentloom.store.api_keys import ApiKey, all_keys, get_key, new_key_op, revoke_op

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
                    created_at=time.time() if now is None else now, revoked_at=None,
                    digest=_digest(key))
    await commit(WriteSet((new_key_op(record),)))
    return record, key


def list_keys(store: Store, *, revoked: bool = False) -> list[ApiKey]:
    """The store's keys, oldest first (``revoked``: the revoked ones too)."""
    keys = all_keys(store)
    return keys if revoked else [k for k in keys if k.revoked_at is None]


async def revoke_key(store: Store, commit: Commit, key_id: str) -> ApiKey:
    """Revoke a key: every later request with it is refused. Revoking it again changes nothing
    (its first revocation time stays)."""
    record = get_key(store, key_id)
    if record is None:
        raise ApiKeyError(f"no API key {key_id!r} in this store (agentloom keys list shows them)",
                        code="KEY_NOT_FOUND")
    if record.revoked_at is not None:
        return record
    now = time.time()
    await commit(WriteSet((revoke_op(key_id, now=now),)))
    return replace(record, revoked_at=now)


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
    stored = get_key(store, match.group(1))
    if stored is None or stored.revoked_at is not None \
            or not hmac.compare_digest(stored.digest, _digest(key)):
        raise refused
    return stored.principal
