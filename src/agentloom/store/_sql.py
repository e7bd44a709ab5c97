"""Shared SQL machinery for the SQLite and PostgreSQL stores.

Subclasses supply a DB-API connection factory, their ``dialect`` (which SQL of each
``migrations.MIGRATIONS`` entry they apply) and its placeholder; SQL text is generated from
``schema.TABLES`` so both backends write the same rows.

Owns: ``SqlStore`` — opening a store (read-only or migrated to this code's schema version) and
the run claims (``claim_run``, ``claim_next``); its writes, reads and dialect hooks are its
parts ``_sql_writes``, ``_sql_reads`` and ``_sql_base``. This module's names (``SqlStore``,
``dumps``, ``coalesced``) are the import path of all of them. Does not own: any dialect's SQL
(``sqlite``, ``postgres``), the queue's order and caps (``queue``), nor the schema
(``schema``, ``migrations``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from agentloom.errors import StoreError
from agentloom.store._readonly import RefusingWriter, check_version, not_found
from agentloom.store._sql_base import SqlBase
from agentloom.store._sql_reads import SqlReads
from agentloom.store._sql_writes import SqlWrites, coalesced, dumps
from agentloom.store.clock import StoreClock
from agentloom.store.migrations import MIGRATIONS, column_type
from agentloom.store.ports import (
    Claimed,
    QueueListener,
    lease_held,
)
from agentloom.store.queue import ClaimRequest, SleepingListener, claim_request

__all__ = ["ConnectFactory", "SqlBase", "SqlStore", "coalesced", "dumps"]


class SqlStore(SqlWrites, SqlReads):
    """A store over one DB-API connection for writes and one for reads."""

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.url = url
        self.read_only = read_only
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._clock = StoreClock(lambda: float(self._read(self.now_sql, ())[0][0]))
        # Keyed by the columns *in order*: the values are bound in the row's order.
        self._sql_cache: dict[tuple[str, str, tuple[str, ...]], str] = {}
        self._query_cache: dict[tuple[Any, ...], str] = {}
        self._update_cache: dict[
            tuple[str, str, tuple[str, ...]], tuple[str, tuple[int | None, ...], bool]
        ] = {}
        if read_only:  # no writer, no migration: the store must already be there, as it is
            self._writer: Any = RefusingWriter(self._safe_url())
            self._reader: Any = self._connect(reader=True)
            try:
                self._check_store()
            except BaseException:
                self._reader.close()
                raise
            return
        self._writer = self._connect()
        try:
            self._migrate()
        except BaseException:
            self._writer.close()  # a store that refuses to open must not leak its connection
            raise
        self._reader = self._connect(reader=True)
    # -- migrations ----------------------------------------------------------------
    def _migrate(self) -> None:
        with self._write_lock:
            cur = self._writer.cursor()
            try:
                self._begin(cur)
                self._migration_lock(cur)
                cur.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    "version INTEGER PRIMARY KEY, summary TEXT NOT NULL, applied_at "
                    + column_type(self.dialect, "real")
                    + " NOT NULL)"
                )
                cur.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
                current = int(cur.fetchone()[0])
                check_version(current, self._safe_url(), read_only=False)
                for version in range(current + 1, len(MIGRATIONS) + 1):
                    migration = MIGRATIONS[version - 1]
                    self._execute_script(cur, migration.ddl(self.dialect))
                    cur.execute(
                        "INSERT INTO schema_migrations (version, summary, applied_at) "
                        f"VALUES ({self.placeholder}, {self.placeholder}, {self.placeholder})",
                        (version, migration.summary, time.time()),
                    )
                self._writer.commit()
            except BaseException:
                self._writer.rollback()
                raise
            finally:
                cur.close()

    def _check_store(self) -> None:
        """A read-only open: the database holds a store at this code's schema version."""
        if not self._has_table("schema_migrations"):
            raise not_found(f"{self._safe_url()} holds no AgentLoom store (no schema_migrations "
                            "table): nothing has run there yet, or the URL names another "
                            "database")
        check_version(self.schema_version(), self._safe_url(), read_only=True)

    def schema_version(self) -> int:
        rows = self._read("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", ())
        return int(rows[0][0])

    def claim_run(self, run_id: str, owner: str, ttl_s: float, *,
                  only_if_expired: bool = False, expect_epoch: int | None = None) -> int:
        p = self.placeholder
        now = self.now()
        held = f" AND COALESCE(lease_expires_at, 0) < {p}" if only_if_expired else ""
        conditions: tuple[Any, ...] = (now,) if only_if_expired else ()
        if expect_epoch is not None:
            held += f" AND lease_epoch = {p}"
            conditions += (expect_epoch,)
        conditional = only_if_expired or expect_epoch is not None
        exists = False
        with self._write_lock:
            cur = self._writer.cursor()
            try:
                self._begin(cur)
                self._lock_run(cur, run_id, exclusive=True)
                cur.execute(
                    f"UPDATE runs SET lease_epoch = lease_epoch + 1, lease_owner = {p}, "
                    f"lease_expires_at = {p}, updated_at = {p} WHERE run_id = {p}{held} "
                    "RETURNING lease_epoch",
                    (owner, now + ttl_s, now, run_id, *conditions),
                )
                row = cur.fetchone()
                if row is None and conditional:
                    cur.execute(f"SELECT 1 FROM runs WHERE run_id = {p}", (run_id,))
                    exists = cur.fetchone() is not None
                self._writer.commit()
            except Exception as exc:
                self._rollback_quietly()
                raise StoreError(f"claiming run {run_id} failed: {exc}") from exc
            finally:
                cur.close()
        if row is None:
            if conditional and exists:
                raise lease_held(run_id)
            raise StoreError(f"run {run_id} does not exist", code="RUN_NOT_FOUND")
        return int(row[0])

    def claim_next(self, worker_id: str, ttl_s: float, *, agents: Collection[str],
                   worker_cap: int, agent_caps: Mapping[str, int] | None = None,
                   release_id: str | None = None, now: float | None = None) -> Claimed | None:
        req = claim_request(worker_id, ttl_s, agents=agents, worker_cap=worker_cap,
                            agent_caps=agent_caps, release_id=release_id,
                            now=self.now() if now is None else now)
        if not req.agents:
            return None
        with self._write_lock:
            cur = self._writer.cursor()
            try:
                self._begin(cur)
                claimed = self._claim(cur, req)
                if claimed is None:
                    self._writer.rollback()
                else:
                    self._writer.commit()
                return claimed
            except Exception as exc:
                self._rollback_quietly()
                raise StoreError(f"claiming a queued run for worker {worker_id} on "
                                 f"{self._safe_url()} failed: {exc}; nothing was claimed (if "
                                 "only the COMMIT was lost, the lease expires)") from exc
            finally:
                cur.close()

    def _claim(self, cur: Any, req: ClaimRequest) -> Claimed | None:
        """The claim inside its open transaction (each dialect's; ``store.queue``)."""
        raise NotImplementedError

    def listen(self) -> QueueListener:
        return SleepingListener()

ConnectFactory = Callable[[], Any]
