"""The store port: whitelisted tables, row writes grouped into fenced write sets.

A ``WriteSet`` is the unit of atomicity: all of its ops commit together or none
does. ``Store.commit_many`` commits several write sets in one transaction (group
commit) yet keeps them independent: a write set whose fence or insert fails is
rolled back alone and reported, the others still commit.

The run queue (issue 17) is part of the port too: ``Store.claim_next`` takes one ``pending``
run for a worker within its caps (the rules are in ``store.queue``), ``Store.listen`` gives a
``QueueListener`` that wakes an idle worker when a run is queued.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed:
    """A run ``Store.claim_next`` took: it is ``running`` now, held by the claiming worker
    under ``lease_epoch`` (fence every commit of it with ``Fence(run_id, lease_epoch)``)."""

    run_id: str
    lease_epoch: int
    agent: str
    priority: int
    created_at: float


class QueueListener(Protocol):
    """Wakes an idle worker when a run may have been queued (``Store.listen``)."""

    def wait(self, timeout_s: float) -> bool:
        """Block until a wake-up or ``timeout_s``; ``True`` when woken by a wake-up (a run was
        queued since the last wait), ``False`` on timeout (poll the queue anyway)."""
        ...

    def close(self) -> None: ...


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
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of ``table`` equal to ``where`` (``None``: IS NULL), in ``order_by``
        order, at most ``limit``; ``columns``: only these columns of each row (a listing
        reads no more than it needs: no JSON column it does not show is decoded)."""
        ...

    def now(self) -> float:
        """The store's time, in seconds since the epoch (``store.clock``): leases and
        heartbeats are written and judged in it, whatever this process's clock says."""
        ...

    def clock_offset_s(self) -> float:
        """The store's time minus this process's clock (measured now and then)."""
        ...

    def claim_run(self, run_id: str, owner: str, ttl_s: float, *,
                  only_if_expired: bool = False, expect_epoch: int | None = None) -> int:
        """Take the run's lease: bump and return its ``lease_epoch`` (fencing every older writer).

        ``only_if_expired`` takes it only from nobody: while the current lease has not expired
        the claim is refused with ``StoreError`` code ``LEASE_HELD`` (a worker picking up
        interrupted runs never steals one that a live process drives). ``expect_epoch`` takes
        it only while its epoch is still that one (a compare-and-set: the caller judged that
        epoch's holder gone; another claim meanwhile refuses this one, ``LEASE_HELD``).
        """
        ...

    def claim_next(self, worker_id: str, ttl_s: float, *, agents: Collection[str],
                   worker_cap: int, agent_caps: Mapping[str, int] | None = None,
                   release_id: str | None = None, now: float | None = None) -> Claimed | None:
        """Take one ``pending`` run of one of ``agents`` (of ``release_id`` only, when given)
        for ``worker_id``, highest priority first, then oldest, within the worker's and the
        agents' caps checked in the same transaction; ``None`` when there is nothing it may
        take (``store.queue``).

        Raises:
            ValueError: a cap, ``ttl_s`` or ``agents`` that cannot be meant.
            StoreError: reading, counting or claiming failed (nothing was claimed, or the
                commit's outcome is not known and the lease will expire).
        """
        ...

    def queue_position(self, run_id: str) -> int | None:
        """How many ``pending`` runs of the same release a worker claims before ``run_id``
        (higher priority, or equal and older), counted in the store — ``None`` when the run is
        not ``pending``."""
        ...

    def listen(self) -> QueueListener:
        """A listener woken when a commit queues a run (PostgreSQL ``LISTEN``; elsewhere it
        only times out, and the caller polls)."""
        ...

    def close(self) -> None: ...


def lease_held(run_id: str) -> StoreError:
    """The refusal of ``claim_run(..., only_if_expired=True)`` while a live lease holds the run."""
    return StoreError(f"run {run_id} is held by a live lease; nothing was claimed",
                      code="LEASE_HELD")
