"""Issue 13, item 5: the table of run controls is ``run_controls`` (it was ``events``, which
held controls, not run events). Schema v6 renames it with what is named after it; a store at
v5 is migrated by a writable open, keeps its rows, and its runs can still be controlled."""

from __future__ import annotations

from typing import Any

import pytest

from agentloom.agent.controls import STOP, SUPPLEMENT, ControlState, send_control
from agentloom.errors import StoreError
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store import Fence, open_store
from agentloom.store.schema import MIGRATIONS

from .test_contract import RUN, is_sqlite, migration_rows, raw_sql

RENAMED_AT = 6  # the schema version whose migration renamed the table


def store_at(url: str, version: int, *statements: str) -> None:
    """Make the database behind ``url`` a store at ``version`` with the real migrations up to
    it (as that AgentLoom left it), then run ``statements`` on it."""
    real = "REAL" if is_sqlite(url) else "DOUBLE PRECISION"
    script = [
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, summary TEXT NOT NULL, "
        f"applied_at {real} NOT NULL)"
    ]
    dialect = "sqlite" if is_sqlite(url) else "postgresql"
    for n, migration in enumerate(MIGRATIONS[:version], 1):
        script += [s for s in migration.ddl(dialect).split(";") if s.strip()]
        script.append(f"INSERT INTO schema_migrations VALUES ({n}, "
                      f"'{migration.summary.replace(chr(39), chr(39) * 2)}', 0)")
    raw_sql(url, *script, *statements)


def names(url: str) -> set[str]:
    """The tables, indexes and constraints of the store's database (its schema, on
    PostgreSQL)."""
    if is_sqlite(url):
        return {r[0] for r in raw_sql(url, "SELECT name FROM sqlite_master")}
    return {r[0] for r in raw_sql(
        url,
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "UNION SELECT conname FROM pg_constraint "
        "WHERE connamespace = current_schema()::regnamespace")}


def control_rows(url: str, table: str) -> list[tuple[Any, ...]]:
    return raw_sql(url, f"SELECT event_id, run_id, type FROM {table} ORDER BY event_id")


async def test_13_5_events_table_is_run_controls_after_migration(durable_store_url: str) -> None:
    url = durable_store_url
    assert len(MIGRATIONS) >= RENAMED_AT and "run_controls" in MIGRATIONS[RENAMED_AT - 1].summary
    store_at(
        url, RENAMED_AT - 1,
        "INSERT INTO runs (run_id, status, lease_epoch, created_at, updated_at, data) "
        f"VALUES ('{RUN}', 'running', 0, 1.0, 1.0, '{{}}')",
        "INSERT INTO events VALUES ('c-1', 'run-1', 'control.supplement', 2.0, "
        "'{\"text\":\"also check b.txt\"}')",
        "INSERT INTO events VALUES ('c-2', 'run-1', 'control.supplement', 3.0, "
        "'{\"consumed_turn\":1,\"text\":\"taken on turn 1\"}')",
    )
    before = control_rows(url, "events")
    with pytest.raises(StoreError) as refused:  # a read-only open never migrates
        open_store(url, read_only=True).close()
    assert refused.value.code == "STORE_VERSION_MISMATCH"

    store = open_store(url)
    try:
        assert store.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]
        assert [r[0] for r in migration_rows(url)] == list(range(1, len(MIGRATIONS) + 1))
        assert control_rows(url, "run_controls") == before  # every row kept
        found = names(url)
        assert "events" not in found and "events_run" not in found
        assert {"run_controls", "run_controls_run"} <= found
        if not is_sqlite(url):
            assert "run_controls_pkey" in found and "events_pkey" not in found
        assert store.get("run_controls", {"event_id": "c-1"}) == {
            "event_id": "c-1", "run_id": RUN, "type": SUPPLEMENT, "created_at": 2.0,
            "data": {"text": "also check b.txt"}}

        # the run is still controllable: old controls are read, new ones written and taken
        state = ControlState(RUN)
        assert state.poll(store)
        assert state.pending == [("c-1", "also check b.txt")]
        assert state.by_turn == {1: ["taken on turn 1"]}
        await send_control(store, RUN, STOP, {"reason": "stopped after the upgrade"})
        assert state.poll(store) and state.stop_reason == "stopped after the upgrade"
        epoch = store.claim_run(RUN, "worker", 30.0)
        coordinator = CommitCoordinator(store)
        try:
            taken = await state.take(store, coordinator, Fence(RUN, epoch), turn=2, live=True)
        finally:
            coordinator.close()
        assert taken == ["also check b.txt"]
        row = store.get("run_controls", {"event_id": "c-1"})
        assert row is not None and row["data"]["consumed_turn"] == 2
        assert [r[2] for r in control_rows(url, "run_controls")].count(STOP) == 1
    finally:
        store.close()
    reader = open_store(url, read_only=True)  # and the migrated store reads read-only
    try:
        assert len(reader.query("run_controls", {"run_id": RUN})) == 3
    finally:
        reader.close()
