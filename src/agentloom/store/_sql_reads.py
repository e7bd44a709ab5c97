"""The reads of the shared SQL store: a row by key, a query by columns, a run's queue position.

Owns: ``SqlReads`` (``get``, ``query`` — its SQL text made once per query shape —,
``queue_position``) and decoding stored JSON and blob columns. Does not own: the connection
and ``_read`` (``_sql_base``), writes (``_sql_writes``), nor the repository read functions
built on ``query`` (``store/*.py``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom.store._sql_base import SqlBase
from agentloom.store.schema import Table, table


class SqlReads(SqlBase):
    """``get``, ``query`` and ``queue_position`` (part of ``_sql.SqlStore``)."""

    _query_cache: dict[tuple[Any, ...], str]

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


@functools.cache
def _decoded(t: Table) -> tuple[tuple[str, bool], ...]:
    """The columns of ``t`` a read decodes: (column, JSON or else bytes)."""
    return tuple((c, c in t.json_columns) for c in t.columns
                 if c in t.json_columns or c in t.blob_columns)
