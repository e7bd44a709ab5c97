"""The writes of the shared SQL store: one transaction per batch of write sets, each fenced by
its run's lease epoch, with a savepoint per write set when one is refused.

Owns: ``SqlWrites`` (``commit_many``, ``delete_statement``, the INSERT / upsert / UPDATE text
of each op shape, fence checks) and the stored text of JSON columns (``dumps``), ``coalesced``.
Does not own: the connections and dialect hooks (``_sql_base``), migrations and claims
(``_sql``), nor the ops' meaning (``store.ports``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom.canonical import canonical_json
from agentloom.errors import FencedOut, RevisionConflict, StoreError
from agentloom.store._sql_base import SqlBase
from agentloom.store.ports import (
    Delete,
    Fence,
    Insert,
    Op,
    Put,
    WriteOp,
    WriteSet,
)
from agentloom.store.schema import Table, table


def dumps(value: Any) -> str:
    """The stored text of a JSON column: compact, keys sorted, non-ASCII kept."""
    return canonical_json(value)


class SqlWrites(SqlBase):
    """``commit_many`` and the statements it runs (part of ``_sql.SqlStore``)."""

    _sql_cache: dict[tuple[str, str, tuple[str, ...]], str]
    _update_cache: dict[
        tuple[str, str, tuple[str, ...]], tuple[str, tuple[int | None, ...], bool]
    ]

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
