"""What a store opened with ``read_only=True`` does instead of creating, migrating or writing.

A read-only open (``runs list|show|events``) finds the store as it is or fails, with a
``StoreError`` that says which:

=========================  =====================================================
``STORE_NOT_FOUND``        no store there: a missing SQLite file or PostgreSQL
                           schema, or a database without ``schema_migrations``
``STORE_VERSION_MISMATCH`` the store's schema version is not this code's (a newer
                           one also refuses a writable open; an older one is
                           migrated only by a writable open)
``STORE_READ_ONLY``        a write (``commit_many``, ``claim_run``) was attempted
=========================  =====================================================
"""

from __future__ import annotations

from typing import NoReturn

from agentloom.errors import StoreError
from agentloom.store.schema import MIGRATIONS

#: The code of "no store there" (the CLI adds how to point at another store).
NOT_FOUND = "STORE_NOT_FOUND"


def not_found(message: str) -> StoreError:
    """There is no store where the URL points (nothing is created to make one)."""
    return StoreError(message, code=NOT_FOUND, category="not_found")


def check_version(current: int, safe_url: str, *, read_only: bool) -> None:
    """Refuse a store at a schema version this code cannot use as it is: a newer one always,
    an older one when it may not be migrated (``read_only``).

    Raises:
        StoreError: ``STORE_VERSION_MISMATCH``, naming both versions and what to do.
    """
    latest = len(MIGRATIONS)
    if current > latest:
        raise StoreError(
            f"database schema version {current} is newer than this AgentLoom ({latest}); "
            f"upgrade agentloom before opening {safe_url!r}", code="STORE_VERSION_MISMATCH")
    if current < latest and read_only:
        raise StoreError(
            f"database schema version {current} is older than this AgentLoom ({latest}) and a "
            f"read-only command never migrates {safe_url!r}; a command that writes to it (run, "
            "worker, runs resume) migrates it first", code="STORE_VERSION_MISMATCH")


class RefusingWriter:
    """The writer connection of a read-only store: every write is refused before it starts."""

    def __init__(self, safe_url: str) -> None:
        self._safe_url = safe_url

    def cursor(self) -> NoReturn:
        raise StoreError(f"the store {self._safe_url} is open read-only: nothing was written",
                         code="STORE_READ_ONLY", category="permission")

    def commit(self) -> None:
        """Nothing to commit."""

    def rollback(self) -> None:
        """Nothing to roll back."""

    def close(self) -> None:
        """No connection to close."""
