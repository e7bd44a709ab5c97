"""What the shared SQL store's parts stand on: its two connections (one for writes, one for
reads), the hooks each SQL dialect fills in, and a single-statement read.

Owns: ``SqlBase`` (the backend's class facts — ``dialect``, ``placeholder``, ``now_sql``,
``integrity_errors`` — the connection attributes, the dialect hooks, ``_read``, the store's
clock, ``close``). Does not own: opening and migrating the store or claims (``_sql``), writes
(``_sql_writes``), table reads (``_sql_reads``), nor any dialect's SQL (``sqlite``,
``postgres``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from agentloom.store.clock import StoreClock


class SqlBase:
    """The connections and dialect hooks of ``_sql.SqlStore`` (which opens them)."""

    url: str
    durable: bool = True
    dialect = "sqlite"
    """The key of this backend's SQL in every ``migrations.Migration``."""
    placeholder = "?"
    integrity_errors: tuple[type[BaseException], ...] = ()
    #: One row, one column: the store's time in seconds since the epoch (``store.clock``).
    now_sql = "SELECT (julianday('now') - 2440587.5) * 86400.0"
    read_only: bool
    _write_lock: threading.Lock
    _read_lock: threading.Lock
    _clock: StoreClock
    _writer: Any
    _reader: Any

    # -- dialect hooks -------------------------------------------------------------
    def _connect(self, *, reader: bool = False) -> Any:
        """A new connection; the ``reader`` one only runs single-statement reads."""
        raise NotImplementedError

    def _begin(self, cur: Any, *, sync: bool = True) -> None:
        """Open a write transaction; ``sync=False``: its COMMIT need not wait for the disk
        (``WriteSet.sync``)."""
        cur.execute("BEGIN")

    def _after_write(self, cur: Any, *, sync: bool) -> None:
        """Undo what ``_begin(sync=False)`` changed on the connection (nothing by default)."""

    def _has_table(self, name: str) -> bool:
        """Whether the database (the schema, on PostgreSQL) has the table ``name``."""
        raise NotImplementedError

    def _migration_lock(self, cur: Any) -> None:
        """Serialise concurrent migrators (PostgreSQL takes an advisory lock)."""

    def _is_key_conflict(self, exc: BaseException) -> bool:
        """Whether an ``integrity_errors`` exception is a duplicate key (not, say, NOT NULL)."""
        return True

    def _execute_script(self, cur: Any, script: str) -> None:
        for statement in script.split(";"):
            if statement.strip():
                cur.execute(statement)

    def _lock_run(self, cur: Any, run_id: str, *, exclusive: bool) -> None:
        """Hold the run's lease lock until the transaction ends: shared by writers under a
        fence, exclusive for ``claim_run``, so a claim waits for in-flight commits and every
        later commit sees the new epoch. (SQLite has one writer at a time: nothing to do.)"""

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._read_lock:
            cur = self._reader.cursor()
            try:
                cur.execute(sql, params)
                rows = cur.fetchall()
                self._reader.commit()  # end the read snapshot (nothing to do in autocommit)
                return list(rows)
            finally:
                cur.close()

    def _rollback_quietly(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.rollback()

    def now(self) -> float:
        """The store's time (``store.clock``): leases are written and judged in it."""
        return self._clock.now()

    def clock_offset_s(self) -> float:
        """The store's time minus this process's clock."""
        return self._clock.offset_s()

    def _safe_url(self) -> str:
        from agentloom.errors import redact_secrets

        return redact_secrets(self.url)

    def close(self) -> None:
        for conn in (self._writer, self._reader):
            with contextlib.suppress(Exception):
                conn.close()
