"""Shared SQL machinery for the SQLite and PostgreSQL stores.

Subclasses supply a DB-API connection factory, their ``dialect`` (which SQL of each
``migrations.MIGRATIONS`` entry they apply) and its placeholder; SQL text is generated from
``schema.TABLES`` so both backends write the same rows.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from agentloom.canonical import canonical_json
from agentloom.errors import FencedOut, RevisionConflict, StoreError
from agentloom.store._readonly import RefusingWriter, check_version, not_found
from agentloom.store.clock import StoreClock
from agentloom.store.migrations import MIGRATIONS, column_type
from agentloom.store.ports import (
    Claimed,
    Delete,
    Fence,
    Insert,
    Op,
    Put,
    QueueListener,
    WriteOp,
    WriteSet,
    lease_held,
)
from agentloom.store.queue import ClaimRequest, SleepingListener, claim_request
from agentloom.store.schema import Table, table


def dumps(value: Any) -> str:
    """The stored text of a JSON column: compact, keys sorted, non-ASCII kept."""
    return canonical_json(value)


class SqlStore:
    """A store over one DB-API connection for writes and one for reads."""

    url: str
    durable: bool = True
    dialect = "sqlite"
    """The key of this backend's SQL in every ``migrations.Migration``."""
    placeholder = "?"
    integrity_errors: tuple[type[BaseException], ...] = ()
    #: One row, one column: the store's time in seconds since the epoch (``store.clock``).
    now_sql = "SELECT (julianday('now') - 2440587.5) * 86400.0"

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

    # -- writes --------------------------------------------------------------------
    def _encode(self, t: Table, row: Mapping[str, Any]) -> list[Any]:
        values: list[Any] = []
        for column, value in row.items():
            if column in t.json_columns:
                # A value may carry its own text (``json_text``: exactly what ``dumps`` would
                # make of it), e.g. an operation row whose large parts were encoded once.
                text = getattr(value, "json_text", None)
                value = text if isinstance(text, str) else dumps(value)
            values.append(value)
        return values

    def _insert_sql(self, t: Table, columns: Sequence[str], mode: str) -> str:
        key = (t.name, mode, tuple(columns))
        sql = self._sql_cache.get(key)
        if sql is None:
            unknown = set(columns) - set(t.columns)
            if unknown:
                raise ValueError(f"table {t.name!r} has no columns {sorted(unknown)}")
            cols = ", ".join(columns)
            marks = ", ".join([self.placeholder] * len(columns))
            sql = f"INSERT INTO {t.name} ({cols}) VALUES ({marks})"
            conflict = ", ".join(t.key)
            if mode == "put":
                updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in t.key)
                sql += (
                    f" ON CONFLICT ({conflict}) DO UPDATE SET {updates}"
                    if updates
                    else f" ON CONFLICT ({conflict}) DO NOTHING"
                )
            elif mode == "if_absent":
                sql += f" ON CONFLICT ({conflict}) DO NOTHING"
            self._sql_cache[key] = sql
        return sql

    def _lock_run(self, cur: Any, run_id: str, *, exclusive: bool) -> None:
        """Hold the run's lease lock until the transaction ends: shared by writers under a
        fence, exclusive for ``claim_run``, so a claim waits for in-flight commits and every
        later commit sees the new epoch. (SQLite has one writer at a time: nothing to do.)"""

    def _check_fence(self, cur: Any, fence: Fence) -> None:
        self._lock_run(cur, fence.run_id, exclusive=False)
        cur.execute(
            f"SELECT lease_epoch FROM runs WHERE run_id = {self.placeholder}", (fence.run_id,)
        )
        row = cur.fetchone()
        if row is None:
            raise FencedOut(f"run {fence.run_id} does not exist; nothing was written")
        if int(row[0]) != fence.lease_epoch:
            raise FencedOut(
                f"run {fence.run_id} is now at lease epoch {row[0]}, this writer holds "
                f"{fence.lease_epoch}: it lost the lease and nothing was written"
            )

    def _apply(self, cur: Any, ws: WriteSet, fenced: set[Fence] | None) -> None:
        """Apply one write set. ``fenced`` remembers fences already verified (and locked) in
        this transaction, so a batch checks each (run, epoch) once."""
        if ws.fence is not None and (fenced is None or ws.fence not in fenced):
            self._check_fence(cur, ws.fence)
            if fenced is not None:
                fenced.add(ws.fence)
        for op in coalesced(ws.ops):
            t = table(op.table)
            if isinstance(op, Delete):
                sql, params = self.delete_statement(op)
                cur.execute(sql, params)
                continue
            columns = list(op.row.keys())
            if isinstance(op, Put):
                mode = "put"
            elif isinstance(op, Insert):
                mode = "if_absent" if op.if_absent else "insert"
            else:  # pragma: no cover - closed union
                raise TypeError(f"unknown store op {op!r}")
            sql = self._insert_sql(t, columns, mode)  # rejects unknown columns first
            values = self._encode(t, op.row)
            try:
                if mode == "put" and self._update_existing(cur, t, columns, values):
                    continue
                cur.execute(sql, values)
            except self.integrity_errors as exc:
                if not self._is_key_conflict(exc):
                    raise
                key = {k: op.row.get(k) for k in t.key}
                raise RevisionConflict(f"{t.name} row {key} already exists") from exc

    def delete_statement(self, op: Delete) -> tuple[str, list[Any]]:
        """``DELETE FROM <table> WHERE c = ? AND …`` for ``op`` and its parameters (a ``None``
        value is ``IS NULL``)."""
        t = table(op.table)
        unknown = set(op.where) - set(t.columns)
        if unknown:
            raise ValueError(f"table {t.name!r} has no columns {sorted(unknown)}")
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in zip(op.where, self._encode(t, op.where), strict=True):
            if value is None:
                clauses.append(f"{column} IS NULL")
            else:
                clauses.append(f"{column} = {self.placeholder}")
                params.append(value)
        return f"DELETE FROM {t.name} WHERE {' AND '.join(clauses)}", params

    def _update_existing(
        self, cur: Any, t: Table, columns: Sequence[str], values: Sequence[Any]
    ) -> bool:
        """Update the given columns of an existing row; ``False`` when there is none.

        ``INSERT … ON CONFLICT DO UPDATE`` alone cannot do this: both databases check
        NOT NULL on the row to be inserted before looking for a conflict, so a ``Put``
        naming only some columns of an existing row would fail.
        """
        sql, order, updates = self._update_statement(t, columns)
        cur.execute(sql, [None if i is None else values[i] for i in order])
        if not updates:
            return cur.fetchone() is not None
        return bool(cur.rowcount)

    def _update_statement(
        self, t: Table, columns: Sequence[str]
    ) -> tuple[str, tuple[int | None, ...], bool]:
        """The UPDATE of the named columns of one row (a SELECT when only the key is named),
        the order of its parameters in the row's values, and whether it updates anything."""
        cache_key = (t.name, "update", tuple(columns))
        cached = self._update_cache.get(cache_key)
        if cached is None:
            p = self.placeholder
            where = " AND ".join(f"{k} = {p}" for k in t.key)
            sets = [c for c in columns if c not in t.key]
            if sets:
                assignments = ", ".join(f"{c} = {p}" for c in sets)
                sql = f"UPDATE {t.name} SET {assignments} WHERE {where}"
            else:
                sql = f"SELECT 1 FROM {t.name} WHERE {where}"
            # parameter i is values[order[i]], or NULL for a key column the row does not name
            order = tuple(columns.index(c) if c in columns else None for c in [*sets, *t.key])
            cached = self._update_cache[cache_key] = (sql, order, bool(sets))
        return cached

    def commit_many(self, batch: Sequence[WriteSet]) -> list[BaseException | None]:
        """One transaction for the whole batch. The common case (nothing refused) runs without
        savepoints; when a write set is refused the transaction is redone with one savepoint per
        write set, so only the refused ones are rolled back."""
        sync = any(ws.sync for ws in batch)
        with self._write_lock:
            cur = self._writer.cursor()
            try:
                self._begin(cur, sync=sync)
                fenced: set[Fence] = set()
                try:
                    for ws in batch:
                        self._apply(cur, ws, fenced)
                except (FencedOut, RevisionConflict) as exc:
                    self._writer.rollback()
                    if len(batch) == 1:
                        return [exc]
                    return self._commit_isolated(cur, batch, sync=sync)
                self._writer.commit()
                return [None] * len(batch)
            except StoreError:
                self._rollback_quietly()
                raise
            except Exception as exc:
                self._rollback_quietly()
                raise StoreError(f"commit to {self._safe_url()} failed: {exc}") from exc
            finally:
                if not sync:
                    with contextlib.suppress(Exception):
                        self._after_write(cur, sync=sync)
                cur.close()

    def _commit_isolated(self, cur: Any, batch: Sequence[WriteSet], *,
                         sync: bool = True) -> list[BaseException | None]:
        outcomes: list[BaseException | None] = [None] * len(batch)
        self._begin(cur, sync=sync)
        for i, ws in enumerate(batch):
            cur.execute(f"SAVEPOINT ws{i}")
            try:
                self._apply(cur, ws, None)
            except (FencedOut, RevisionConflict) as exc:
                cur.execute(f"ROLLBACK TO SAVEPOINT ws{i}")
                outcomes[i] = exc
            cur.execute(f"RELEASE SAVEPOINT ws{i}")
        self._writer.commit()
        return outcomes

    def _rollback_quietly(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.rollback()

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

    # -- reads ---------------------------------------------------------------------
    def queue_position(self, run_id: str) -> int | None:
        p = self.placeholder
        rows = self._read(
            "SELECT me.status, (SELECT COUNT(*) FROM runs r WHERE r.status = 'pending' "
            "AND (r.release_id = me.release_id OR (r.release_id IS NULL AND me.release_id IS NULL)) "
            "AND (r.priority > me.priority OR (r.priority = me.priority AND (r.created_at < "
            "me.created_at OR (r.created_at = me.created_at AND r.run_id < me.run_id))))) "
            f"FROM runs me WHERE me.run_id = {p}", (run_id,))
        if not rows or rows[0][0] != "pending":
            return None
        return int(rows[0][1])

    def now(self) -> float:
        """The store's time (``store.clock``): leases are written and judged in it."""
        return self._clock.now()

    def clock_offset_s(self) -> float:
        """The store's time minus this process's clock."""
        return self._clock.offset_s()

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

    def _decode(self, t: Table, row: Sequence[Any],
                columns: Sequence[str] | None = None) -> dict[str, Any]:
        out = dict(zip(t.columns if columns is None else columns, row, strict=True))
        for column, is_json in _decoded(t):
            value = out.get(column)
            if value is not None:
                out[column] = json.loads(value) if is_json else bytes(value)
        return out

    def get(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        t = table(table_name)
        if set(key) != set(t.key):
            raise ValueError(f"{t.name} is keyed by {t.key}, got {sorted(key)}")
        rows = self.query(table_name, key, limit=1)
        return rows[0] if rows else None

    def query(
        self,
        table_name: str,
        where: Mapping[str, Any] | None = None,
        *,
        order_by: Sequence[str] = (),
        descending: bool = False,
        limit: int | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        t = table(table_name)
        where = where or {}
        selected = t.columns if columns is None else tuple(columns)
        # a query's text depends on its shape only (the columns it filters on, which of
        # them are NULL, its order, limit and the columns it reads): made once per shape
        shape = (table_name, tuple((c, v is None) for c, v in where.items()), tuple(order_by),
                 descending, limit, selected)
        sql = self._query_cache.get(shape)
        if sql is None:
            sql = self._query_cache[shape] = self._query_sql(t, where, order_by, descending,
                                                             limit, selected)
        params = [v for v in where.values() if v is not None]
        return [self._decode(t, row, selected) for row in self._read(sql, params)]

    def _query_sql(self, t: Table, where: Mapping[str, Any], order_by: Sequence[str],
                   descending: bool, limit: int | None, selected: Sequence[str]) -> str:
        for column in [*where, *order_by, *selected]:
            if column not in t.columns:
                raise ValueError(f"table {t.name!r} has no column {column!r}")
        sql = f"SELECT {', '.join(selected)} FROM {t.name}"
        if where:
            clauses = [f"{column} IS NULL" if value is None else f"{column} = {self.placeholder}"
                       for column, value in where.items()]
            sql += " WHERE " + " AND ".join(clauses)
        if order_by:
            direction = " DESC" if descending else ""
            sql += " ORDER BY " + ", ".join(f"{c}{direction}" for c in order_by)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return sql

    def _safe_url(self) -> str:
        from agentloom.errors import redact_secrets

        return redact_secrets(self.url)

    def close(self) -> None:
        for conn in (self._writer, self._reader):
            with contextlib.suppress(Exception):
                conn.close()


ConnectFactory = Callable[[], Any]


@functools.cache
def _decoded(t: Table) -> tuple[tuple[str, bool], ...]:
    """The columns of ``t`` a read decodes: (column, JSON or else bytes)."""
    return tuple((c, c in t.json_columns) for c in t.columns
                 if c in t.json_columns or c in t.blob_columns)


def coalesced(ops: Sequence[WriteOp]) -> Sequence[WriteOp]:
    """The ops of one write set with every ``Put`` of a row folded into the earlier
    ``Insert`` or ``Put`` of the same row (e.g. an Attempt started and finished in one
    commit is one INSERT). The outcome is the same; a second ``Insert`` of a row is kept,
    so its conflict is still reported."""
    if len(ops) < 2 or any(isinstance(op, Delete) for op in ops):
        return ops  # a Delete between two writes of a row: keep them apart, in order
    if len({op.table for op in ops}) == len(ops):
        return ops  # one op a table (a call's commit): no two of them write the same row
    out: list[Op] = []
    index: dict[tuple[str, tuple[Any, ...]], int] = {}
    for op in ops:
        assert not isinstance(op, Delete)  # returned above
        row_key = (op.table, tuple(op.row.get(k) for k in table(op.table).key))
        i = index.get(row_key)
        if i is not None and isinstance(op, Put):
            prev = out[i]
            assert not isinstance(prev, Delete)
            if isinstance(prev, Put):
                out[i] = Put(prev.table, {**prev.row, **op.row})
                continue
            if not prev.if_absent:  # an if_absent Insert may keep an existing row: not foldable
                out[i] = Insert(prev.table, {**prev.row, **op.row})
                continue
        index[row_key] = len(out)
        out.append(op)
    return out
