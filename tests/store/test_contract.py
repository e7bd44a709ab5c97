"""The one store contract (DESIGN §4, STYLE 16): every backend behind ``open_store`` passes it.

``store`` / ``store_url`` run each test on memory, a SQLite file and the real PostgreSQL
server; ``durable_store_url`` on the two SQL backends only. The SQL backends are also
inspected from outside (``raw_sql``) so migrations are checked against the database itself.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from agentloom.errors import ConfigError, FencedOut, RevisionConflict, StoreError
from agentloom.store import Fence, Insert, Op, Put, Store, WriteSet, open_store
from agentloom.store.schema import MIGRATIONS

RUN = "run-1"
DEADLINE_S = 60.0
INJECTION = "x; DROP TABLE runs"


# --- rows and helpers -----------------------------------------------------------------


# the queue columns a row gets by default (schema v10)
QUEUE_DEFAULTS = {"agent": None, "priority": 0, "release_id": None, "actor": None,
                  "project": None}


def run_row(run_id: str = RUN, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run_id": run_id,
        "status": "running",
        "lease_epoch": 0,
        "created_at": 1.0,
        "updated_at": 1.0,
        "data": {},
    }
    row.update(overrides)
    return row


def event_row(event_id: str, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "event_id": event_id,
        "run_id": RUN,
        "type": "note",
        "created_at": 1.0,
        "data": {"event": event_id},
    }
    row.update(overrides)
    return row


def operation_row(operation_id: str, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "operation_id": operation_id,
        "run_id": RUN,
        "logical_key": f"key-{operation_id}",
        "capability_key": "tool:echo",
        "event_type": "tool.call",
        "phase": "pending",
        "outcome": None,
        "created_at": 1.0,
        "updated_at": 1.0,
        "data": {},
    }
    row.update(overrides)
    return row


def commit(store: Store, *ops: Op, fence: Fence | None = None) -> BaseException | None:
    """Commit one write set alone; return its outcome."""
    [outcome] = store.commit_many([WriteSet(tuple(ops), fence=fence)])
    return outcome


def seed(store: Store, *ops: Op) -> None:
    assert commit(store, *ops) is None


def event_ids(store: Store) -> list[str]:
    return [r["event_id"] for r in store.query("run_controls", order_by=("event_id",))]


def ids(rows: Sequence[dict[str, Any]], column: str = "operation_id") -> list[str]:
    return [r[column] for r in rows]


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite:///")


def raw_sql(url: str, *statements: str) -> list[tuple[Any, ...]]:
    """Run ``statements`` on the database behind a SQL store URL, outside the store,
    in one transaction; return the rows of the last one."""
    if is_sqlite(url):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            cur = conn.cursor()
            for statement in statements:
                cur.execute(statement)
            rows = cur.fetchall()
            conn.commit()
            return [tuple(r) for r in rows]
        finally:
            conn.close()
    import psycopg

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    schema = query.pop("schema")
    with psycopg.connect(urlunsplit(parts._replace(query=urlencode(query)))) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        cur = conn.cursor()
        for statement in statements:
            cur.execute(statement)  # type: ignore[arg-type]  # literal test SQL
        return [tuple(r) for r in cur.fetchall()] if cur.description else []


def migration_rows(url: str) -> list[tuple[Any, ...]]:
    return raw_sql(url, "SELECT version, summary, applied_at FROM schema_migrations ORDER BY 1")


def run_threads(targets: Sequence[Any]) -> None:
    """Start one thread per callable, join each within the deadline, re-raise the first error."""
    errors: list[BaseException] = []

    def guarded(target: Any) -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=DEADLINE_S)
    assert not any(t.is_alive() for t in threads), "a thread missed its deadline"
    if errors:
        raise errors[0]


# --- opening and migrations -----------------------------------------------------------


def test_open_store_reports_whether_the_backend_survives_the_process(
    store: Store, store_url: str
) -> None:
    assert store.url == store_url
    assert store.durable is (not store_url.startswith("memory://"))


@pytest.mark.parametrize(
    "url",
    ["mysql://localhost/db", "sqlite:///", "postgresql://localhost/db?schema=Bad-Name;"],
    ids=["unknown-scheme", "no-file-path", "schema-not-an-identifier"],
)
def test_open_store_rejects_a_url_it_cannot_serve_with_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError):
        open_store(url)


def test_fresh_store_is_at_the_latest_schema_version(store: Store) -> None:
    assert store.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]


def test_fresh_sql_database_records_every_migration_once_with_its_summary(
    durable_store_url: str,
) -> None:
    open_store(durable_store_url).close()
    recorded = [(version, summary) for version, summary, _ in migration_rows(durable_store_url)]
    assert recorded == [(i + 1, m.summary) for i, m in enumerate(MIGRATIONS)]


def test_reopening_a_sql_database_applies_no_migration_twice_and_keeps_its_rows(
    durable_store_url: str,
) -> None:
    first = open_store(durable_store_url)
    seed(first, Insert("runs", run_row(data={"kept": True})))
    first.close()
    applied = migration_rows(durable_store_url)

    reopened = open_store(durable_store_url)
    try:
        assert reopened.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]
        assert migration_rows(durable_store_url) == applied  # same rows, same applied_at
        run = reopened.get("runs", {"run_id": RUN})
        assert run is not None
        assert run["data"] == {"kept": True}
    finally:
        reopened.close()


@pytest.mark.parametrize("start", range(len(MIGRATIONS)))
def test_sql_database_at_every_earlier_schema_version_migrates_to_the_latest(
    durable_store_url: str, start: int
) -> None:
    real = "REAL" if is_sqlite(durable_store_url) else "DOUBLE PRECISION"
    statements = [
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, summary TEXT NOT NULL, "
        f"applied_at {real} NOT NULL)"
    ]
    dialect = "sqlite" if is_sqlite(durable_store_url) else "postgresql"
    for version, migration in enumerate(MIGRATIONS[:start], 1):
        statements += [s for s in migration.ddl(dialect).split(";") if s.strip()]
        statements.append(
            "INSERT INTO schema_migrations VALUES "
            f"({version}, '{migration.summary.replace(chr(39), chr(39) * 2)}', 0)"
        )
    raw_sql(durable_store_url, *statements)

    store = open_store(durable_store_url)
    try:
        assert store.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]
        rows = migration_rows(durable_store_url)
        assert [r[0] for r in rows] == list(range(1, len(MIGRATIONS) + 1))
        assert [r[2] for r in rows[:start]] == [0] * start  # earlier ones were not re-applied
        seed(store, Insert("runs", run_row()))
        assert store.get("runs", {"run_id": RUN}) is not None
    finally:
        store.close()


def test_sql_database_from_a_newer_agentloom_refuses_to_open_with_a_store_error(
    durable_store_url: str,
) -> None:
    open_store(durable_store_url).close()
    newer = len(MIGRATIONS) + 1
    raw_sql(
        durable_store_url,
        f"INSERT INTO schema_migrations VALUES ({newer}, 'from the future', 0)",
    )
    try:
        with pytest.raises(StoreError, match=rf"schema version {newer} is newer"):
            open_store(durable_store_url)
        assert [r[0] for r in migration_rows(durable_store_url)] == [
            *range(1, len(MIGRATIONS) + 1),
            newer,
        ]
    finally:  # the fixture's teardown reopens the database to drop it
        raw_sql(durable_store_url, f"DELETE FROM schema_migrations WHERE version = {newer}")


# --- inserts and puts -----------------------------------------------------------------


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in-a-batch"])
def test_insert_of_an_existing_key_is_a_revision_conflict_and_writes_nothing_of_its_write_set(
    store: Store, batched: bool
) -> None:
    seed(store, Insert("runs", run_row()), Insert("run_controls", event_row("e-old", data={"v": 1})))
    conflicting = WriteSet(
        (
            Insert("run_controls", event_row("e-new")),
            Put("runs", {"run_id": RUN, "status": "done"}),
            Insert("run_controls", event_row("e-old", data={"v": 2})),
        )
    )
    neighbour = WriteSet((Insert("run_controls", event_row("e-neighbour")),))

    outcomes = store.commit_many([neighbour, conflicting] if batched else [conflicting])

    assert isinstance(outcomes[-1], RevisionConflict)
    assert outcomes[:-1] == ([None] if batched else [])
    assert event_ids(store) == (["e-neighbour", "e-old"] if batched else ["e-old"])
    assert store.get("run_controls", {"event_id": "e-old"})["data"] == {"v": 1}  # type: ignore[index]
    assert store.get("runs", {"run_id": RUN})["status"] == "running"  # type: ignore[index]


def test_insert_of_one_key_twice_in_a_write_set_is_a_revision_conflict_and_writes_neither(
    store: Store,
) -> None:
    outcome = commit(
        store, Insert("run_controls", event_row("e-1")), Insert("run_controls", event_row("e-1"))
    )
    assert isinstance(outcome, RevisionConflict)
    assert event_ids(store) == []


def test_insert_that_repeats_a_unique_run_and_logical_key_is_a_revision_conflict(
    store: Store,
) -> None:
    seed(store, Insert("operations", operation_row("op-1", logical_key="step-1")))
    outcome = commit(store, Insert("operations", operation_row("op-2", logical_key="step-1")))
    assert isinstance(outcome, RevisionConflict)
    assert ids(store.query("operations")) == ["op-1"]
    seed(store, Insert("operations", operation_row("op-3", run_id="run-2", logical_key="step-1")))


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in-a-batch"])
def test_store_accepts_writes_after_a_write_set_was_rolled_back(
    store: Store, batched: bool
) -> None:
    seed(store, Insert("run_controls", event_row("e-1")))
    duplicate = WriteSet((Insert("run_controls", event_row("e-1")),))
    batch = [duplicate, WriteSet((Insert("run_controls", event_row("e-0")),))] if batched else [duplicate]
    assert isinstance(store.commit_many(batch)[0], RevisionConflict)

    seed(store, Insert("run_controls", event_row("e-2")))
    assert event_ids(store) == (["e-0", "e-1", "e-2"] if batched else ["e-1", "e-2"])


def test_insert_if_absent_keeps_the_existing_row(store: Store) -> None:
    seed(store, Insert("blobs", {"digest": "d1", "size": 3, "created_at": 1.0, "content": b"old"}))
    replacement = {"digest": "d1", "size": 3, "created_at": 2.0, "content": b"new"}
    assert commit(store, Insert("blobs", replacement, if_absent=True)) is None
    assert store.get("blobs", {"digest": "d1"}) == {
        "digest": "d1",
        "size": 3,
        "created_at": 1.0,
        "content": b"old",
        "chunk_size": None,
    }


def test_insert_if_absent_writes_a_missing_row(store: Store) -> None:
    row = {"digest": "d1", "size": 3, "created_at": 1.0, "content": b"abc"}
    assert commit(store, Insert("blobs", row, if_absent=True)) is None
    assert store.get("blobs", {"digest": "d1"}) == {**row, "chunk_size": None}


def test_put_inserts_a_missing_row(store: Store) -> None:
    assert commit(store, Put("runs", run_row(status="queued"))) is None
    assert store.get("runs", {"run_id": RUN}) == {
        **run_row(status="queued"),
        "lease_owner": None,
        "lease_expires_at": None,
        **QUEUE_DEFAULTS,
    }


def test_put_of_an_existing_key_updates_only_the_given_columns(store: Store) -> None:
    seed(store, Insert("runs", run_row(lease_owner="w1", data={"a": 1})))
    assert commit(store, Put("runs", {"run_id": RUN, "status": "done", "updated_at": 9.0})) is None
    assert store.get("runs", {"run_id": RUN}) == {
        **run_row(lease_owner="w1", data={"a": 1}),
        "status": "done",
        "updated_at": 9.0,
        "lease_expires_at": None,
        **QUEUE_DEFAULTS,
    }


def test_put_of_only_the_key_columns_leaves_an_existing_row_unchanged(store: Store) -> None:
    seed(store, Insert("runs", run_row(status="queued")))
    assert commit(store, Put("runs", {"run_id": RUN})) is None
    assert store.get("runs", {"run_id": RUN})["status"] == "queued"  # type: ignore[index]


@pytest.mark.parametrize("make_op", [Insert, Put], ids=["insert", "put"])
def test_rows_naming_the_same_columns_in_another_order_are_written_column_by_column(
    store: Store, make_op: type[Insert] | type[Put]
) -> None:
    first = event_row("e-1", type="first")
    second = dict(reversed(list(event_row("e-2", type="second", run_id="run-2").items())))
    seed(store, make_op("run_controls", first))
    seed(store, make_op("run_controls", second))
    assert store.query("run_controls", order_by=("event_id",)) == [
        first,
        event_row("e-2", type="second", run_id="run-2"),
    ]


def test_run_inserted_without_lease_columns_starts_at_epoch_zero_with_empty_data(
    store: Store,
) -> None:
    seed(store, Insert("runs", {"run_id": RUN, "status": "queued", "created_at": 1.0,
                                "updated_at": 1.0}))
    run = store.get("runs", {"run_id": RUN})
    assert run is not None
    assert (run["lease_epoch"], run["data"]) == (0, {})
    assert store.claim_run(RUN, "w1", 60.0) == 1


def test_rows_read_or_written_are_copies_the_caller_may_mutate(store: Store) -> None:
    data: dict[str, Any] = {"list": [1]}
    seed(store, Insert("runs", run_row(data=data)))
    data["list"].append(2)
    first = store.get("runs", {"run_id": RUN})
    assert first is not None
    first["data"]["list"].append(3)
    assert store.get("runs", {"run_id": RUN})["data"] == {"list": [1]}  # type: ignore[index]


# --- fencing by lease epoch -----------------------------------------------------------


def test_claim_run_bumps_the_lease_epoch_and_records_the_owner(store: Store) -> None:
    seed(store, Insert("runs", run_row()))
    assert store.claim_run(RUN, "worker-a", 60.0) == 1
    assert store.claim_run(RUN, "worker-b", 60.0) == 2
    run = store.get("runs", {"run_id": RUN})
    assert run is not None
    assert (run["lease_epoch"], run["lease_owner"]) == (2, "worker-b")
    assert run["lease_expires_at"] is not None


def test_claim_run_of_a_missing_run_is_a_run_not_found_store_error(store: Store) -> None:
    with pytest.raises(StoreError) as caught:
        store.claim_run("no-such-run", "worker-a", 60.0)
    assert caught.value.code == "RUN_NOT_FOUND"


def test_claim_run_only_if_expired_takes_a_run_nobody_holds_and_refuses_a_live_lease(
    store: Store
) -> None:
    seed(store, Insert("runs", run_row()))  # never claimed: nobody holds it
    assert store.claim_run(RUN, "worker-a", 60.0, only_if_expired=True) == 1
    with pytest.raises(StoreError) as caught:
        store.claim_run(RUN, "worker-b", 60.0, only_if_expired=True)
    assert caught.value.code == "LEASE_HELD"
    run = store.get("runs", {"run_id": RUN})
    assert run is not None and (run["lease_epoch"], run["lease_owner"]) == (1, "worker-a")
    seed(store, Put("runs", {"run_id": RUN, "lease_expires_at": 0.0}))  # worker-a died
    assert store.claim_run(RUN, "worker-b", 60.0, only_if_expired=True) == 2
    with pytest.raises(StoreError) as missing:
        store.claim_run("no-such-run", "worker-a", 60.0, only_if_expired=True)
    assert missing.value.code == "RUN_NOT_FOUND"


def test_i17_claim_run_expect_epoch_is_a_compare_and_set_on_the_judged_epoch(
    store: Store
) -> None:
    """Two workers judge the same dead holder (epoch 1) and both claim: one takes epoch 2, the
    other is refused — it never takes over from the holder the first one became."""
    seed(store, Insert("runs", run_row()))
    assert store.claim_run(RUN, "dead", 60.0) == 1
    seed(store, Put("runs", {"run_id": RUN, "lease_expires_at": 0.0}))
    assert store.claim_run(RUN, "worker-a", 60.0, only_if_expired=True, expect_epoch=1) == 2
    seed(store, Put("runs", {"run_id": RUN, "lease_expires_at": 0.0}))  # even once expired
    with pytest.raises(StoreError) as caught:
        store.claim_run(RUN, "worker-b", 60.0, only_if_expired=True, expect_epoch=1)
    assert caught.value.code == "LEASE_HELD"
    run = store.get("runs", {"run_id": RUN})
    assert run is not None and (run["lease_epoch"], run["lease_owner"]) == (2, "worker-a")
    assert store.claim_run(RUN, "worker-b", 60.0, expect_epoch=2) == 3  # --force, judged 2


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in-a-batch"])
def test_store_write_with_stale_lease_epoch_fails_and_changes_nothing(
    store: Store, batched: bool
) -> None:
    seed(store, Insert("runs", run_row()), Insert("run_controls", event_row("e-old", data={"v": 1})))
    assert store.claim_run(RUN, "worker-a", 60.0) == 1
    assert store.claim_run(RUN, "worker-b", 60.0) == 2
    stale = WriteSet(
        (
            Insert("run_controls", event_row("e-stale")),
            Put("run_controls", event_row("e-old", data={"v": 2})),
            Put("runs", {"run_id": RUN, "status": "done"}),
        ),
        fence=Fence(RUN, 1),
    )
    neighbour = WriteSet((Insert("run_controls", event_row("e-neighbour")),))

    outcomes = store.commit_many([neighbour, stale] if batched else [stale])

    assert isinstance(outcomes[-1], FencedOut)
    assert event_ids(store) == (["e-neighbour", "e-old"] if batched else ["e-old"])
    assert store.get("run_controls", {"event_id": "e-old"})["data"] == {"v": 1}  # type: ignore[index]
    run = store.get("runs", {"run_id": RUN})
    assert run is not None
    assert (run["status"], run["lease_epoch"], run["lease_owner"]) == ("running", 2, "worker-b")


def test_store_write_with_current_lease_epoch_commits(store: Store) -> None:
    seed(store, Insert("runs", run_row()))
    epoch = store.claim_run(RUN, "worker-a", 60.0)
    outcome = commit(
        store,
        Insert("run_controls", event_row("e-1")),
        Put("runs", {"run_id": RUN, "status": "waiting"}),
        fence=Fence(RUN, epoch),
    )
    assert outcome is None
    assert event_ids(store) == ["e-1"]
    assert store.get("runs", {"run_id": RUN})["status"] == "waiting"  # type: ignore[index]


def test_store_write_fenced_on_a_missing_run_fails_and_changes_nothing(store: Store) -> None:
    outcome = commit(store, Insert("run_controls", event_row("e-1")), fence=Fence("no-such-run", 0))
    assert isinstance(outcome, FencedOut)
    assert event_ids(store) == []


# --- group commit ---------------------------------------------------------------------


def test_commit_many_keeps_the_write_sets_of_one_batch_independent(store: Store) -> None:
    seed(store, Insert("runs", run_row()), Insert("run_controls", event_row("e-old", data={"v": 1})))
    epoch = store.claim_run(RUN, "worker-a", 60.0)
    good_1 = WriteSet((Insert("run_controls", event_row("e-good-1")),), fence=Fence(RUN, epoch))
    stale = WriteSet((Insert("run_controls", event_row("e-stale")),), fence=Fence(RUN, epoch - 1))
    duplicate = WriteSet(
        (
            Insert("run_controls", event_row("e-duplicate-fresh")),
            Insert("run_controls", event_row("e-old", data={"v": 2})),
        ),
        fence=Fence(RUN, epoch),
    )
    good_2 = WriteSet(
        (Insert("run_controls", event_row("e-good-2")), Put("runs", {"run_id": RUN, "status": "idle"})),
        fence=Fence(RUN, epoch),
    )

    outcomes = store.commit_many([good_1, stale, duplicate, good_2])

    assert [type(o) for o in outcomes] == [type(None), FencedOut, RevisionConflict, type(None)]
    assert event_ids(store) == ["e-good-1", "e-good-2", "e-old"]
    assert store.get("run_controls", {"event_id": "e-old"})["data"] == {"v": 1}  # type: ignore[index]
    assert store.get("runs", {"run_id": RUN})["status"] == "idle"  # type: ignore[index]


def test_later_write_sets_of_a_batch_see_the_earlier_ones(store: Store) -> None:
    outcomes = store.commit_many(
        [
            WriteSet((Insert("runs", run_row()), Insert("run_controls", event_row("e-1")))),
            WriteSet((Insert("run_controls", event_row("e-1")),)),
            WriteSet((Insert("run_controls", event_row("e-2")),), fence=Fence(RUN, 0)),
        ]
    )
    assert [type(o) for o in outcomes] == [type(None), RevisionConflict, type(None)]
    assert event_ids(store) == ["e-1", "e-2"]


def test_commit_many_of_an_empty_batch_returns_no_outcomes(store: Store) -> None:
    assert store.commit_many([]) == []


@pytest.mark.parametrize(
    "bad_op",
    [
        Insert("run_controls", {**event_row("e-bad"), INJECTION: 1}),
        Put("run_controls", {"event_id": "e-bad", INJECTION: 1}),
        Insert("no_such_table", {"id": 1}),
        Insert("runs; DROP TABLE runs; --", {"run_id": "r"}),
    ],
    ids=["unknown-column", "unknown-column-in-put", "unknown-table", "table-injection"],
)
def test_batch_naming_an_unknown_table_or_column_raises_a_store_error_and_writes_nothing(
    store: Store, bad_op: Op
) -> None:
    seed(store, Insert("runs", run_row()))
    batch = [
        WriteSet((Insert("run_controls", event_row("e-good")),)),
        WriteSet((Insert("run_controls", event_row("e-other")), bad_op)),
    ]
    with pytest.raises(StoreError):
        store.commit_many(batch)
    assert event_ids(store) == []
    assert store.get("runs", {"run_id": RUN}) is not None  # the runs table is still there
    seed(store, Insert("run_controls", event_row("e-after")))  # and the store still writes


# --- values ---------------------------------------------------------------------------

NESTED: dict[str, Any] = {
    "text": "naïve café — 日本語 — ☃ — 🚀",
    "ключ": {"значение": ["ä", "ß", "€"]},
    "escapes": 'quote " backslash \\ newline \n tab \t nul \x00 end',
    "scalars": [0, -1, 2**53, 0.1, 1e-300, True, False, None, ""],
    "nested": {"deeper": {"deepest": [{"k": "v"}, [], {}]}},
    "sql": "'); DROP TABLE runs; --",
}


def test_json_columns_round_trip_nested_data_and_unicode(store: Store) -> None:
    top_level_list = [NESTED, ["x", 1.5], "plain"]
    seed(
        store,
        Insert("runs", run_row(data=NESTED)),
        Insert("run_controls", event_row("e-1", data=top_level_list)),
    )
    assert store.get("runs", {"run_id": RUN})["data"] == NESTED  # type: ignore[index]
    assert store.get("run_controls", {"event_id": "e-1"})["data"] == top_level_list  # type: ignore[index]


@pytest.mark.parametrize(
    "content",
    [bytes(range(256)) * 4 + b"\x00\x00", b"\x00", b"", "☃".encode()],
    ids=["every-byte", "nul", "empty", "utf8"],
)
def test_blob_column_round_trips_bytes_exactly(store: Store, content: bytes) -> None:
    seed(store, Insert("blobs", {"digest": "d", "size": len(content), "created_at": 1.0,
                                 "content": content}))
    row = store.get("blobs", {"digest": "d"})
    assert row is not None
    assert type(row["content"]) is bytes
    assert row["content"] == content


def test_text_values_are_stored_literally_never_run_as_sql(store: Store) -> None:
    hostile = "'); DROP TABLE runs; --"
    seed(store, Insert("runs", run_row(hostile, status=hostile)))
    assert store.get("runs", {"run_id": hostile})["status"] == hostile  # type: ignore[index]
    assert ids(store.query("runs", {"status": hostile}), "run_id") == [hostile]


@pytest.mark.parametrize("text", [
    "100%s done %(x)s %%", "back\\slash \\x00 \\'", "semi; COMMIT; ROLLBACK;", "$$dollar$$ $tag$",
    "E'escaped' U&'\\0041'", "quote ' and \" double",
], ids=["percent", "backslash", "semicolon", "dollar", "escapes", "quotes"])
def test_values_that_look_like_sql_round_trip_exactly_in_text_and_json_columns(
    store: Store, text: str
) -> None:
    """PostgreSQL sends a batch as one query with the values bound client-side: every value
    must come back byte for byte, and nothing in it may end or run a statement."""
    seed(store, Insert("runs", run_row(text, status=text, data={"k": text, text: [text]})),
         Put("run_controls", event_row("e-1", type=text, data=[text, {"t": text}])))
    run = store.get("runs", {"run_id": text})
    assert run is not None and run["status"] == text
    assert run["data"] == {"k": text, text: [text]}
    assert store.get("run_controls", {"event_id": "e-1"})["data"] == [text, {"t": text}]  # type: ignore[index]


def test_a_row_inserted_then_put_in_one_write_set_has_the_put_columns(store: Store) -> None:
    seed(store, Insert("runs", run_row(status="queued")),
         Put("runs", {"run_id": RUN, "status": "running", "updated_at": 5.0}),
         Put("runs", {"run_id": RUN, "lease_owner": "w"}))
    assert store.get("runs", {"run_id": RUN}) == {
        **run_row(status="running", updated_at=5.0), "lease_owner": "w",
        "lease_expires_at": None, **QUEUE_DEFAULTS}


def test_an_insert_if_absent_then_put_of_an_existing_row_updates_it(store: Store) -> None:
    seed(store, Insert("runs", run_row(status="queued")))
    seed(store, Insert("runs", run_row(status="ignored"), if_absent=True),
         Put("runs", {"run_id": RUN, "lease_owner": "w"}))
    row = store.get("runs", {"run_id": RUN})
    assert row is not None and (row["status"], row["lease_owner"]) == ("queued", "w")


def test_a_put_of_some_columns_of_a_missing_row_is_refused_with_a_store_error(
    store: Store
) -> None:
    """The NOT NULL columns it does not name stop it: nothing of its write set is written."""
    if not store.durable:
        pytest.skip("the in-memory store has no NOT NULL columns")
    with pytest.raises(StoreError):
        store.commit_many([WriteSet((Insert("run_controls", event_row("e-1")),
                                     Put("runs", {"run_id": "missing", "status": "x"})))])
    assert store.query("run_controls") == []


# --- reads ----------------------------------------------------------------------------


@pytest.fixture
def operations(store: Store) -> Store:
    seed(
        store,
        Insert("operations", operation_row("op-1", phase="done", outcome="ok", created_at=3.0)),
        Insert("operations", operation_row("op-2", phase="pending", created_at=1.0)),
        Insert("operations", operation_row("op-3", run_id="run-b", phase="done", created_at=2.0)),
        Insert("operations", operation_row("op-4", phase="done", outcome="error", created_at=4.0)),
    )
    return store


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (None, ["op-1", "op-2", "op-3", "op-4"]),
        ({}, ["op-1", "op-2", "op-3", "op-4"]),
        ({"run_id": RUN}, ["op-1", "op-2", "op-4"]),
        ({"run_id": RUN, "phase": "done"}, ["op-1", "op-4"]),
        ({"outcome": None}, ["op-2", "op-3"]),
        ({"run_id": RUN, "outcome": None}, ["op-2"]),
        ({"outcome": "ok"}, ["op-1"]),
        ({"run_id": "no-such-run"}, []),
    ],
    ids=["none", "empty", "one-column", "two-columns", "is-null", "null-and-value", "value",
         "no-match"],
)
def test_query_returns_the_rows_equal_on_every_filter_column_with_none_as_null(
    operations: Store, where: dict[str, Any] | None, expected: list[str]
) -> None:
    assert ids(operations.query("operations", where, order_by=("operation_id",))) == expected


@pytest.mark.parametrize(
    ("order_by", "descending", "limit", "expected"),
    [
        (("created_at",), False, None, ["op-2", "op-3", "op-1", "op-4"]),
        (("created_at",), True, None, ["op-4", "op-1", "op-3", "op-2"]),
        (("created_at",), False, 2, ["op-2", "op-3"]),
        (("created_at",), True, 2, ["op-4", "op-1"]),
        (("phase", "created_at"), False, None, ["op-3", "op-1", "op-4", "op-2"]),
        (("phase", "created_at"), True, None, ["op-2", "op-4", "op-1", "op-3"]),
        (("created_at",), False, 0, []),
        (("created_at",), False, 10, ["op-2", "op-3", "op-1", "op-4"]),
    ],
    ids=["asc", "desc", "asc-limit", "desc-limit", "two-columns-asc", "two-columns-desc",
         "limit-zero", "limit-above-count"],
)
def test_query_orders_by_the_given_columns_and_limits(
    operations: Store,
    order_by: tuple[str, ...],
    descending: bool,
    limit: int | None,
    expected: list[str],
) -> None:
    rows = operations.query("operations", order_by=order_by, descending=descending, limit=limit)
    assert ids(rows) == expected


def test_query_filters_before_it_orders_and_limits(operations: Store) -> None:
    rows = operations.query(
        "operations", {"run_id": RUN}, order_by=("created_at",), descending=True, limit=1
    )
    assert ids(rows) == ["op-4"]


def test_query_returns_whole_decoded_rows(operations: Store) -> None:
    assert operations.query("operations", {"operation_id": "op-1"}) == [
        operation_row("op-1", phase="done", outcome="ok", created_at=3.0)
    ]


def test_get_returns_the_row_by_its_whole_key_or_none(store: Store) -> None:
    attempt = {"operation_id": "op-1", "attempt_no": 2, "status": "ok", "started_at": 1.0,
               "finished_at": 2.0, "data": {"n": 2}}
    seed(store, Insert("attempts", attempt), Insert("attempts", {**attempt, "attempt_no": 1}))
    assert store.get("attempts", {"operation_id": "op-1", "attempt_no": 2}) == attempt
    assert store.get("attempts", {"operation_id": "op-1", "attempt_no": 3}) is None


@pytest.mark.parametrize(
    ("table_name", "key"),
    [
        ("runs", {}),
        ("runs", {"id": RUN}),
        ("runs", {"run_id": RUN, "status": "running"}),
        ("attempts", {"operation_id": "op-1"}),
        ("runs", {INJECTION: RUN}),
    ],
    ids=["empty", "wrong-column", "extra-column", "partial-composite", "injection"],
)
def test_get_with_a_wrong_key_set_is_a_value_error(
    store: Store, table_name: str, key: dict[str, Any]
) -> None:
    seed(store, Insert("runs", run_row()))
    with pytest.raises(ValueError):
        store.get(table_name, key)
    assert store.get("runs", {"run_id": RUN}) is not None


@pytest.mark.parametrize("name", ["no_such_table", "runs; DROP TABLE runs", "runs --"])
def test_reading_an_unknown_table_is_a_value_error(store: Store, name: str) -> None:
    seed(store, Insert("runs", run_row()))
    with pytest.raises(ValueError):
        store.query(name)
    with pytest.raises(ValueError):
        store.get(name, {"run_id": RUN})
    assert store.get("runs", {"run_id": RUN}) is not None


@pytest.mark.parametrize(
    "query_kwargs",
    [
        {"where": {INJECTION: 1}},
        {"where": {"no_such_column": 1}},
        {"order_by": (INJECTION,)},
        {"order_by": ("run_id", "run_id DESC; DROP TABLE runs")},
    ],
    ids=["where-injection", "where-unknown", "order-injection", "order-second-injection"],
)
def test_query_naming_an_unknown_column_is_a_value_error_never_sql(
    store: Store, query_kwargs: dict[str, Any]
) -> None:
    seed(store, Insert("runs", run_row()))
    with pytest.raises(ValueError):
        store.query("runs", **query_kwargs)
    assert store.get("runs", {"run_id": RUN}) is not None


# --- durability and concurrency -------------------------------------------------------

CHILD_WRITES_A_RUN = """
import sys
from agentloom.store import Insert, WriteSet, open_store

store = open_store(sys.argv[1])
outcomes = store.commit_many([WriteSet((Insert("runs", {
    "run_id": "run-from-child", "status": "running", "lease_epoch": 0,
    "created_at": 1.0, "updated_at": 1.0, "data": {"writer": "child", "text": "naïve ☃"},
}),))])
store.close()
print(outcomes)
"""


def test_committed_rows_survive_close_and_reopen(durable_store_url: str) -> None:
    first = open_store(durable_store_url)
    seed(first, Insert("runs", run_row(data=NESTED)), Insert("run_controls", event_row("e-1")))
    first.close()

    reopened = open_store(durable_store_url)
    try:
        assert reopened.get("runs", {"run_id": RUN})["data"] == NESTED  # type: ignore[index]
        assert event_ids(reopened) == ["e-1"]
    finally:
        reopened.close()


def test_rows_committed_by_another_process_are_read_after_it_exits(
    durable_store_url: str,
) -> None:
    open_store(durable_store_url).close()  # migrate here, so the child only writes
    child = subprocess.run(
        [sys.executable, "-c", CHILD_WRITES_A_RUN, durable_store_url],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[None]"

    store = open_store(durable_store_url)
    try:
        run = store.get("runs", {"run_id": "run-from-child"})
        assert run is not None
        assert run["data"] == {"writer": "child", "text": "naïve ☃"}
    finally:
        store.close()


CLAIMERS = 8


def test_concurrent_claims_on_one_store_yield_distinct_epochs_1_to_n(store: Store) -> None:
    seed(store, Insert("runs", run_row()))
    barrier = threading.Barrier(CLAIMERS, timeout=DEADLINE_S)
    epochs: list[int] = []

    def claim(owner: str) -> None:
        barrier.wait()
        epochs.append(store.claim_run(RUN, owner, 60.0))

    run_threads([lambda i=i: claim(f"worker-{i}") for i in range(CLAIMERS)])
    assert sorted(epochs) == list(range(1, CLAIMERS + 1))


def test_concurrent_claims_from_separate_sql_stores_yield_distinct_epochs_1_to_n(
    durable_store_url: str,
) -> None:
    stores = [open_store(durable_store_url) for _ in range(CLAIMERS)]
    try:
        seed(stores[0], Insert("runs", run_row()))
        barrier = threading.Barrier(CLAIMERS, timeout=DEADLINE_S)
        epochs: list[int] = []

        def claim(s: Store, owner: str) -> None:
            barrier.wait()
            epochs.append(s.claim_run(RUN, owner, 60.0))

        run_threads(
            [lambda s=s, i=i: claim(s, f"worker-{i}") for i, s in enumerate(stores)]
        )
        assert sorted(epochs) == list(range(1, CLAIMERS + 1))
        assert stores[0].get("runs", {"run_id": RUN})["lease_epoch"] == CLAIMERS  # type: ignore[index]
    finally:
        for s in stores:
            s.close()
