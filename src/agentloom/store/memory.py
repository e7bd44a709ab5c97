"""An in-process store with the same contract as the SQL stores; nothing survives the process."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom.errors import FencedOut, RevisionConflict, StoreError
from agentloom.store.ports import Insert, Op, Put, WriteSet
from agentloom.store.schema import TABLES, table

# What the v1 DDL enforces beyond columns and primary keys: column DEFAULTs, and UNIQUE
# constraints (a tuple holding a NULL never collides, as in SQL).
_DEFAULTS: dict[str, dict[str, Any]] = {"runs": {"lease_epoch": 0, "data": {}}}
_UNIQUE: dict[str, tuple[tuple[str, ...], ...]] = {"operations": (("run_id", "logical_key"),)}


class MemoryStore:
    durable = False

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._lock = threading.Lock()
        self._tables: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {
            name: {} for name in TABLES
        }

    def _key(self, table_name: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(k) for k in table(table_name).key)

    def _validate(self, batch: Sequence[WriteSet]) -> None:
        """Refuse the whole batch, as the SQL stores' rolled-back transaction does."""
        for ws in batch:
            for op in ws.ops:
                try:
                    t = table(op.table)
                except ValueError as exc:
                    raise StoreError(str(exc)) from exc
                unknown = set(op.row) - set(t.columns)
                if unknown:
                    raise StoreError(f"table {t.name!r} has no columns {sorted(unknown)}")

    def _check(self, ws: WriteSet) -> None:
        if ws.fence is not None:
            run = self._tables["runs"].get((ws.fence.run_id,))
            if run is None:
                raise FencedOut(f"run {ws.fence.run_id} does not exist; nothing was written")
            if run["lease_epoch"] != ws.fence.lease_epoch:
                raise FencedOut(
                    f"run {ws.fence.run_id} is now at lease epoch {run['lease_epoch']}, "
                    f"this writer holds {ws.fence.lease_epoch}: nothing was written"
                )
        seen: set[tuple[str, tuple[Any, ...]]] = set()
        claimed: dict[tuple[str, tuple[str, ...], tuple[Any, ...]], tuple[Any, ...]] = {}
        for op in ws.ops:
            key = self._key(op.table, op.row)
            taken = key in self._tables[op.table] or (op.table, key) in seen
            if isinstance(op, Insert) and not op.if_absent and taken:
                raise RevisionConflict(f"{op.table} row {key} already exists")
            seen.add((op.table, key))
            self._check_unique(op, key, claimed)

    def _check_unique(
        self,
        op: Op,
        key: tuple[Any, ...],
        claimed: dict[tuple[str, tuple[str, ...], tuple[Any, ...]], tuple[Any, ...]],
    ) -> None:
        rows = self._tables[op.table]
        if isinstance(op, Insert) and op.if_absent and key in rows:
            return
        row = {**rows.get(key, {}), **op.row}
        for columns in _UNIQUE.get(op.table, ()):
            value = tuple(row.get(c) for c in columns)
            if None in value:
                continue
            holder = claimed.setdefault((op.table, columns, value), key)
            if holder != key or any(
                k != key and tuple(r.get(c) for c in columns) == value for k, r in rows.items()
            ):
                raise RevisionConflict(
                    f"{op.table} row with {dict(zip(columns, value, strict=True))} already exists"
                )

    def commit_many(self, batch: Sequence[WriteSet]) -> list[BaseException | None]:
        outcomes: list[BaseException | None] = []
        with self._lock:
            self._validate(batch)
            for ws in batch:
                try:
                    self._check(ws)
                except (FencedOut, RevisionConflict) as exc:
                    outcomes.append(exc)
                    continue
                for op in ws.ops:
                    rows = self._tables[op.table]
                    key = self._key(op.table, op.row)
                    if isinstance(op, Put) and key in rows:
                        rows[key] = {**rows[key], **copy.deepcopy(dict(op.row))}
                    elif isinstance(op, Insert) and op.if_absent and key in rows:
                        continue
                    else:
                        full = dict.fromkeys(table(op.table).columns)
                        full.update(copy.deepcopy(_DEFAULTS.get(op.table, {})))
                        full.update(copy.deepcopy(dict(op.row)))
                        rows[key] = full
                outcomes.append(None)
        return outcomes

    def get(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        t = table(table_name)
        if set(key) != set(t.key):
            raise ValueError(f"{t.name} is keyed by {t.key}, got {sorted(key)}")
        with self._lock:
            row = self._tables[table_name].get(self._key(table_name, key))
            return copy.deepcopy(row) if row is not None else None

    def query(
        self,
        table_name: str,
        where: Mapping[str, Any] | None = None,
        *,
        order_by: Sequence[str] = (),
        descending: bool = False,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        t = table(table_name)
        where = where or {}
        for column in [*where, *order_by]:
            if column not in t.columns:
                raise ValueError(f"table {t.name!r} has no column {column!r}")
        with self._lock:
            rows = [
                copy.deepcopy(r)
                for r in self._tables[table_name].values()
                if all(r.get(c) == v for c, v in where.items())
            ]
        if order_by:
            rows.sort(key=lambda r: tuple(r.get(c) for c in order_by), reverse=descending)
        return rows[:limit] if limit is not None else rows

    def claim_run(self, run_id: str, owner: str, ttl_s: float) -> int:
        with self._lock:
            run = self._tables["runs"].get((run_id,))
            if run is None:
                raise StoreError(f"run {run_id} does not exist", code="RUN_NOT_FOUND")
            run["lease_epoch"] += 1
            run["lease_owner"] = owner
            run["lease_expires_at"] = time.time() + ttl_s
            return int(run["lease_epoch"])

    def schema_version(self) -> int:
        from agentloom.store.schema import MIGRATIONS

        return len(MIGRATIONS)

    def close(self) -> None:
        pass
