"""The store port: whitelisted tables, row writes grouped into fenced write sets.

A ``WriteSet`` is the unit of atomicity: all of its ops commit together or none
does. ``Store.commit_many`` commits several write sets in one transaction (group
commit) yet keeps them independent: a write set whose fence or insert fails is
rolled back alone and reported, the others still commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from agentloom.errors import StoreError


@dataclass(frozen=True, slots=True)
class Fence:
    """Commit only while ``runs.lease_epoch`` of ``run_id`` still equals ``lease_epoch``."""

    run_id: str
    lease_epoch: int


@dataclass(frozen=True, slots=True)
class Put:
    """Insert or update a row by its primary key."""

    table: str
    row: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Insert:
    """Insert a row. An existing key is a ``RevisionConflict`` unless ``if_absent`` is set,
    in which case the existing row is kept (content-addressed blobs, idempotent intents)."""

    table: str
    row: Mapping[str, Any]
    if_absent: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete every row whose columns equal ``where`` (at least one column; none matching is
    no error). Owner deletion (000 §7.4) is its only user: the runtime never deletes a row
    of a live run."""

    table: str
    where: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not self.where:
            raise ValueError(f"a Delete from {self.table!r} names no column: it would empty "
                             "the table")


Op: TypeAlias = Put | Insert
WriteOp: TypeAlias = Put | Insert | Delete
"""What a write set may hold: a row written (``Op``), or rows deleted."""


@dataclass(frozen=True, slots=True)
class WriteSet:
    """The writes of one commit: operations applied all together or not at all, fenced by the
    run's lease epoch when ``fence`` is set. ``label`` names it in diagnostics only.

    ``sync=False`` marks a record of what has already happened (an operation's terminal
    result): the commit is complete — every reader sees it and it survives a crash of this
    process — but it does not wait for the disk. The next synced commit carries it there: a
    log (SQLite's WAL, PostgreSQL's) reaches the disk in order, so what a power loss can take
    is only the newest unsynced commits, never one before a commit that was synced. The
    pipeline syncs every commit that precedes an effect outside the process (an intent before
    its Attempt, the end of a run), so a lost record is a call reported ``unknown``, never one
    run twice nor one reported done that did not happen. A batch is synced when any of its
    write sets asks for it."""

    ops: tuple[WriteOp, ...]
    fence: Fence | None = None
    label: str = field(default="", compare=False)
    sync: bool = field(default=True, compare=False)


class Store(Protocol):
    """What the pipeline, the context manager and the runtime need from storage.

    Methods block; the ``CommitCoordinator`` calls ``commit_many`` from its writer
    thread, readers may call the query methods from any thread.
    """

    url: str
    durable: bool

    def commit_many(self, batch: Sequence[WriteSet]) -> list[BaseException | None]:
        """Commit each write set atomically, in one physical transaction where possible.

        Returns one entry per write set: ``None`` when it committed, otherwise the
        ``FencedOut`` / ``RevisionConflict`` / ``StoreError`` that rolled it back.
        Raises ``StoreError`` when the transaction as a whole could not commit.
        """
        ...

    def get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None: ...

    def query(
        self,
        table: str,
        where: Mapping[str, Any] | None = None,
        *,
        order_by: Sequence[str] = (),
        descending: bool = False,
        limit: int | None = None,
    ) -> list[dict[str, Any]]: ...

    def claim_run(self, run_id: str, owner: str, ttl_s: float, *,
                  only_if_expired: bool = False) -> int:
        """Take the run's lease: bump and return its ``lease_epoch`` (fencing every older writer).

        ``only_if_expired`` takes it only from nobody: while the current lease has not expired
        the claim is refused with ``StoreError`` code ``LEASE_HELD`` (a worker picking up
        interrupted runs never steals one that a live process drives).
        """
        ...

    def close(self) -> None: ...


def lease_held(run_id: str) -> StoreError:
    """The refusal of ``claim_run(..., only_if_expired=True)`` while a live lease holds the run."""
    return StoreError(f"run {run_id} is held by a live lease; nothing was claimed",
                      code="LEASE_HELD")
