"""An in-process store with the same contract as the SQL stores; nothing survives the process."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agentloom.canonical import compact_json
from agentloom.errors import FencedOut, RevisionConflict, StoreError
from agentloom.store.ports import Claimed, Delete, Insert, Put, QueueListener, WriteSet, lease_held
from agentloom.store.queue import ClaimRequest, SleepingListener, claim_request
from agentloom.store.schema import TABLES, table

# What the v1 DDL enforces beyond columns and primary keys: column DEFAULTs, and UNIQUE
# constraints (a tuple holding a NULL never collides, as in SQL).
_DEFAULTS: dict[str, dict[str, Any]] = {"runs": {"lease_epoch": 0, "priority": 0, "data": {}}}
_UNIQUE: dict[str, tuple[tuple[str, ...], ...]] = {
    "operations": (("run_id", "logical_key"),),
    "file_roots": (("file_root_id",),),
    "workspace_scopes": (("owner_kind", "owner_id", "partition_kind", "partition_id", "run_id"),),
}


_KEYS = {name: t.key for name, t in TABLES.items()}
_COLUMNS = {name: frozenset(t.columns) for name, t in TABLES.items()}
_JSON = {name: t.json_columns for name, t in TABLES.items()}
_encode = compact_json  # as the SQL stores keep text, but keys in insertion order


def _stored(table_name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """Rows are kept as the SQL stores keep them: JSON columns as text, so a caller that
    mutates its dict after a commit (or after a read) never changes what is stored."""
    json_columns = _JSON[table_name]
    return {c: _encode(v) if c in json_columns else v for c, v in row.items()}


def _loaded(table_name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    json_columns = _JSON[table_name]
    return {
        c: json.loads(v) if c in json_columns and v is not None else v for c, v in row.items()
    }


# A new row: every column NULL, then the DDL's defaults (as the SQL stores fill them).
_EMPTY = {
    name: {**dict.fromkeys(t.columns), **_stored(name, _DEFAULTS.get(name, {}))}
    for name, t in TABLES.items()
}


class MemoryStore:
    """An in-process ``Store`` with the SQL stores' contract (the same conformance suite);
    nothing survives the process (``durable = False``). For tests and throwaway runs."""

    durable = False

    def __init__(self, url: str = "memory://") -> None:
        self.url = url
        self._lock = threading.Lock()
        self._tables: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {
            name: {} for name in TABLES
        }
        # (table, unique columns) -> value tuple -> primary key of the row holding it
        self._unique: dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], tuple[Any, ...]]] = {
            (name, columns): {} for name, groups in _UNIQUE.items() for columns in groups
        }

    def _key(self, table_name: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple([row.get(k) for k in _KEYS[table_name]])

    def _validate(self, batch: Sequence[WriteSet]) -> None:
        """Refuse the whole batch, as the SQL stores' rolled-back transaction does."""
        for ws in batch:
            for op in ws.ops:
                columns = _COLUMNS.get(op.table)
                if columns is None:
                    raise StoreError(f"unknown table {op.table!r}; known: {sorted(TABLES)}")
                unknown = (op.where if isinstance(op, Delete) else op.row).keys() - columns
                if unknown:
                    raise StoreError(f"table {op.table!r} has no columns {sorted(unknown)}")

    def _check(self, ws: WriteSet) -> list[tuple[Any, ...]]:
        """Fence and key checks for one write set; returns each op's primary key."""
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
        keys = []
        for op in ws.ops:
            if isinstance(op, Delete):
                keys.append(())
                continue
            key = self._key(op.table, op.row)
            keys.append(key)
            taken = key in self._tables[op.table] or (op.table, key) in seen
            if isinstance(op, Insert) and not op.if_absent and taken:
                raise RevisionConflict(f"{op.table} row {key} already exists")
            seen.add((op.table, key))
            self._check_unique(op, key, claimed)
        return keys

    def _check_unique(
        self,
        op: Put | Insert,
        key: tuple[Any, ...],
        claimed: dict[tuple[str, tuple[str, ...], tuple[Any, ...]], tuple[Any, ...]],
    ) -> None:
        groups = _UNIQUE.get(op.table)
        if not groups:
            return
        rows = self._tables[op.table]
        if isinstance(op, Insert) and op.if_absent and key in rows:
            return
        row = {**rows.get(key, {}), **op.row}
        for columns in groups:
            value = tuple(row.get(c) for c in columns)
            if None in value:
                continue
            holder = claimed.setdefault((op.table, columns, value), key)
            stored = self._unique[(op.table, columns)].get(value)
            if holder != key or (stored is not None and stored != key):
                raise RevisionConflict(
                    f"{op.table} row with {dict(zip(columns, value, strict=True))} already exists"
                )

    def commit_many(self, batch: Sequence[WriteSet]) -> list[BaseException | None]:
        outcomes: list[BaseException | None] = []
        with self._lock:
            self._validate(batch)
            for ws in batch:
                try:
                    if any(isinstance(op, Delete) for op in ws.ops):
                        self._apply_in_order(ws)
                    else:
                        keys = self._check(ws)
                        for op, key in zip(ws.ops, keys, strict=True):
                            assert not isinstance(op, Delete)
                            self._write(op, key)
                except (FencedOut, RevisionConflict) as exc:
                    outcomes.append(exc)
                    continue
                outcomes.append(None)
        return outcomes

    def _write(self, op: Put | Insert, key: tuple[Any, ...]) -> None:
        rows = self._tables[op.table]
        old = rows.get(key)
        if isinstance(op, Put) and old is not None:
            new = {**old, **_stored(op.table, op.row)}
        elif isinstance(op, Insert) and op.if_absent and old is not None:
            return
        else:
            new = {**_EMPTY[op.table], **_stored(op.table, op.row)}
        rows[key] = new
        if op.table in _UNIQUE:
            self._reindex(op.table, key, old, new)

    def _apply_in_order(self, ws: WriteSet) -> None:
        """A write set holding a ``Delete``: each op is checked against what the ops before it
        left (a deleted key may be inserted again), as SQL does; a refusal restores every
        table as it was."""
        tables = {name: dict(rows) for name, rows in self._tables.items()}
        unique = {index: dict(values) for index, values in self._unique.items()}
        try:
            self._check(WriteSet((), ws.fence))
            for op in ws.ops:
                if isinstance(op, Delete):
                    self._delete(op)
                else:
                    [key] = self._check(WriteSet((op,)))
                    self._write(op, key)
        except (FencedOut, RevisionConflict):
            self._tables, self._unique = tables, unique
            raise

    def _delete(self, op: Delete) -> None:
        rows = self._tables[op.table]
        where = _stored(op.table, op.where)
        for key in [k for k, r in rows.items() if all(r.get(c) == v for c, v in where.items())]:
            old = rows.pop(key)
            for columns in _UNIQUE.get(op.table, ()):
                self._unique[(op.table, columns)].pop(tuple(old.get(c) for c in columns), None)

    def _reindex(
        self, table_name: str, key: tuple[Any, ...], old: dict[str, Any] | None,
        new: dict[str, Any],
    ) -> None:
        for columns in _UNIQUE.get(table_name, ()):
            index = self._unique[(table_name, columns)]
            if old is not None:
                index.pop(tuple(old.get(c) for c in columns), None)
            value = tuple(new.get(c) for c in columns)
            if None not in value:
                index[value] = key

    def _candidates(self, t_name: str, where: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Rows that may match ``where``, found by primary or unique key when it is covered."""
        rows = self._tables[t_name]
        t = table(t_name)
        if where and all(k in where for k in t.key):
            row = rows.get(tuple(where[k] for k in t.key))
            return [row] if row is not None else []
        for columns in _UNIQUE.get(t_name, ()):
            if all(c in where and where[c] is not None for c in columns):
                pk = self._unique[(t_name, columns)].get(tuple(where[c] for c in columns))
                return [rows[pk]] if pk is not None else []
        return list(rows.values())

    def get(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        t = table(table_name)
        if set(key) != set(t.key):
            raise ValueError(f"{t.name} is keyed by {t.key}, got {sorted(key)}")
        with self._lock:
            row = self._tables[table_name].get(self._key(table_name, key))
            return _loaded(table_name, row) if row is not None else None

    def queue_position(self, run_id: str) -> int | None:
        with self._lock:
            me = self._tables["runs"].get((run_id,))
            if me is None or me["status"] != "pending":
                return None
            mine = (-me["priority"], me["created_at"], me["run_id"])
            return sum(1 for r in self._tables["runs"].values()
                       if r["status"] == "pending" and r.get("release_id") == me.get("release_id")
                       and (-r["priority"], r["created_at"], r["run_id"]) < mine)

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
        for column in [*where, *order_by, *(columns or ())]:
            if column not in t.columns:
                raise ValueError(f"table {t.name!r} has no column {column!r}")
        with self._lock:  # rows as stored (JSON as text): only the ones returned are loaded
            found = [r for r in self._candidates(table_name, where)
                     if all(r.get(c) == v for c, v in where.items())]
            if order_by:
                found.sort(key=lambda r: tuple(r.get(c) for c in order_by), reverse=descending)
            found = found[:limit] if limit is not None else found
            if columns is not None:
                found = [{c: r.get(c) for c in columns} for r in found]
            return [_loaded(table_name, r) for r in found]

    def now(self) -> float:
        """The store's time (``store.clock``): this process's, the store lives in it."""
        return time.time()

    def clock_offset_s(self) -> float:
        return 0.0

    def claim_run(self, run_id: str, owner: str, ttl_s: float, *,
                  only_if_expired: bool = False, expect_epoch: int | None = None) -> int:
        with self._lock:
            run = self._tables["runs"].get((run_id,))
            if run is None:
                raise StoreError(f"run {run_id} does not exist", code="RUN_NOT_FOUND")
            if only_if_expired and (run.get("lease_expires_at") or 0) >= self.now():
                raise lease_held(run_id)
            if expect_epoch is not None and run["lease_epoch"] != expect_epoch:
                raise lease_held(run_id)
            run["lease_epoch"] += 1
            run["lease_owner"] = owner
            run["lease_expires_at"] = self.now() + ttl_s
            return int(run["lease_epoch"])

    def claim_next(self, worker_id: str, ttl_s: float, *, agents: Collection[str],
                   worker_cap: int, agent_caps: Mapping[str, int] | None = None,
                   release_id: str | None = None, now: float | None = None) -> Claimed | None:
        req = claim_request(worker_id, ttl_s, agents=agents, worker_cap=worker_cap,
                            agent_caps=agent_caps, release_id=release_id, now=now)
        with self._lock:  # one lock covers the counts and the claim
            run = self._next_pending(req)
            if run is None:
                return None
            run.update(status="running", lease_epoch=run["lease_epoch"] + 1,
                       lease_owner=req.worker_id, lease_expires_at=req.expires_at,
                       updated_at=req.now)
            return Claimed(run_id=run["run_id"], lease_epoch=int(run["lease_epoch"]),
                           agent=run["agent"], priority=int(run["priority"]),
                           created_at=float(run["created_at"]))

    def _next_pending(self, req: ClaimRequest) -> dict[str, Any] | None:
        """The stored row of the first pending run ``req`` may take, under the caps."""
        runs = self._tables["runs"].values()
        held = sum(r["status"] == "running" and r["lease_owner"] == req.worker_id for r in runs)
        if held >= req.worker_cap:
            return None
        running: dict[str, int] = {}
        for r in runs:
            if r["status"] == "running":
                running[r["agent"]] = running.get(r["agent"], 0) + 1
        open_agents = {a for a in req.agents
                       if a not in req.agent_caps or running.get(a, 0) < req.agent_caps[a]}
        pending = [r for r in runs if r["status"] == "pending" and r["agent"] in open_agents
                   and req.release_id in (None, r["release_id"])]
        return min(pending, key=lambda r: (-r["priority"], r["created_at"], r["run_id"]),
                   default=None)

    def listen(self) -> QueueListener:
        return SleepingListener()

    def schema_version(self) -> int:
        from agentloom.store.schema import MIGRATIONS

        return len(MIGRATIONS)

    def close(self) -> None:
        pass
