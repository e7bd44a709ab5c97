"""The run queue in the store (issue 17, 003 F12): what ``Store.claim_next`` guarantees, the
wake-up channel, and the listeners of ``Store.listen``.

Owns: the claim's arguments and their checks (``ClaimRequest``), which commits wake workers
(``queues_a_run``), and the listeners. Does not own: each backend's claim transaction
(``SqliteStore`` / ``PostgresStore`` / ``MemoryStore``), submitting runs, the worker loop, its
jitter, or what a worker does with a claimed run.

A claim takes **one** ``pending`` run whose ``agent`` is in ``agents`` (and whose
``release_id`` is the worker's, when it names one: a worker runs only its own release's
configuration): highest ``priority``
first, then oldest ``created_at``, then ``run_id``. It sets the run ``running``, bumps
``lease_epoch`` (fencing every older writer), records the worker as ``lease_owner`` with
``lease_expires_at = now + ttl_s``, all in one transaction, where it also checks both caps:

* the worker's: its ``running`` runs (``lease_owner == worker_id``) stay below ``worker_cap``;
* each capped agent's: its ``running`` runs, whoever holds them and in whatever release, stay
  below its cap. A pending
  run of an agent at its cap is passed over and the next run of another agent is taken.

Counts include runs whose lease expired but that nobody took over yet (they are still
``running``): a cap is never exceeded, at the price of a slot held until the takeover. A read
or count that fails refuses the claim (``StoreError``); nothing is claimed past a cap.

Wake-ups: on PostgreSQL every commit that writes a ``runs`` row with status ``pending`` runs
``pg_notify('agentloom_runs', <schema>)`` in its own transaction, so listeners wake at that
commit (never before it, never for a rolled-back one). The payload is the store's schema:
stores in other schemas of the database share the channel but ignore each other's wake-ups.
Elsewhere a listener just sleeps its timeout: polling is the fallback, with the caller's jitter.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.errors import StoreError
from agentloom.store.ports import Delete, WriteSet

RUNS_CHANNEL = "agentloom_runs"
"""The PostgreSQL ``NOTIFY`` channel of queued runs (payload: the store's schema)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimRequest:
    """The checked arguments of one ``claim_next``."""

    worker_id: str
    ttl_s: float
    agents: tuple[str, ...]
    worker_cap: int
    agent_caps: Mapping[str, int]
    release_id: str | None
    now: float

    @property
    def expires_at(self) -> float:
        return self.now + self.ttl_s

    def cap_of(self, agent: str) -> int | None:
        return self.agent_caps.get(agent)


def claim_request(worker_id: str, ttl_s: float, *, agents: Collection[str], worker_cap: int,
                  agent_caps: Mapping[str, int] | None, release_id: str | None,
                  now: float | None) -> ClaimRequest:
    """Check ``claim_next``'s arguments; caps of agents not in ``agents`` are dropped.

    Raises:
        ValueError: naming the argument and the value that cannot be meant.
    """
    if not isinstance(worker_id, str) or not worker_id:
        raise ValueError(f"claim_next needs a worker id, got {worker_id!r}")
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float) or not ttl_s > 0:
        raise ValueError(f"claim_next ttl_s must be a positive number of seconds, got {ttl_s!r}")
    if release_id is not None and (not isinstance(release_id, str) or not release_id):
        raise ValueError(f"claim_next release_id must be a release id or None, got "
                         f"{release_id!r}")
    _check_cap("worker_cap", worker_cap)
    names = _agent_names(agents)
    caps = dict(agent_caps or {})
    for name, cap in caps.items():
        _check_cap(f"agent_caps[{name!r}]", cap)
    return ClaimRequest(worker_id=worker_id, ttl_s=float(ttl_s), agents=names,
                        worker_cap=worker_cap,
                        agent_caps={a: c for a, c in caps.items() if a in names},
                        release_id=release_id, now=time.time() if now is None else float(now))


def _agent_names(agents: Collection[str]) -> tuple[str, ...]:
    if isinstance(agents, str):
        raise ValueError(f"claim_next agents must be a collection of agent names, not the "
                         f"string {agents!r}")
    for name in agents:
        if not isinstance(name, str) or not name:
            raise ValueError(f"claim_next agents must be non-empty names, got {name!r}")
    return tuple(sorted(set(agents)))


def _check_cap(name: str, cap: Any) -> None:
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError(f"claim_next {name} must be a whole number of runs of at least 1 "
                         f"(leave the agent out of agents to take none of its runs), "
                         f"got {cap!r}")


def queues_a_run(ws: WriteSet) -> bool:
    """Whether committing ``ws`` writes a ``runs`` row with status ``pending`` (a submit, or a
    run queued again): the commits that wake listening workers."""
    return any(not isinstance(op, Delete) and op.table == "runs"
               and op.row.get("status") == "pending" for op in ws.ops)


class SleepingListener:
    """The listener of a store without notifications (SQLite, memory): ``wait`` sleeps its
    timeout and says it was not woken, so the caller polls the queue."""

    def wait(self, timeout_s: float) -> bool:
        time.sleep(max(timeout_s, 0.0))
        return False

    def close(self) -> None:
        """Nothing to release."""


class PostgresListener:
    """A dedicated autocommit connection that ``LISTEN``s on ``agentloom_runs`` and wakes on
    the wake-ups of its own schema. Wake-ups that arrive between two waits are kept by the
    connection: the next ``wait`` returns ``True`` at once, so none is lost."""

    def __init__(self, conn: Any, *, safe_url: str) -> None:
        self._conn = conn
        self._safe_url = safe_url
        try:
            self._schema = str(conn.execute("SELECT current_schema()").fetchone()[0])
            conn.execute(f"LISTEN {RUNS_CHANNEL}")
        except Exception as exc:
            conn.close()
            raise StoreError(f"listening for queued runs on {safe_url} failed: {exc}") from exc

    def wait(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        try:
            while True:
                remaining = max(deadline - time.monotonic(), 0.0)
                for note in self._conn.notifies(timeout=remaining, stop_after=1):
                    if note.payload == self._schema:
                        return True
                if remaining <= 0.0:
                    return False
        except Exception as exc:
            raise StoreError(f"waiting for queued runs on {self._safe_url} failed: {exc}; "
                             "poll the queue, or listen again") from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a broken connection: nothing left to release
            self._conn.close()
