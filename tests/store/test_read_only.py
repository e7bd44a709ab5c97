"""``open_store(url, read_only=True)`` on SQLite and PostgreSQL (issue 11, "read-only commands
open stores read-only"): it reads the store as it is, creates and migrates nothing, and refuses
every write."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import pytest

from agentloom.errors import ConfigError, StoreError
from agentloom.store import Insert, Put, WriteSet, open_store

from .test_contract import RUN, is_sqlite, migration_rows, run_row, seed


def test_i11_a_store_opened_read_only_reads_its_rows_and_refuses_every_write(
    durable_store_url: str,
) -> None:
    writer = open_store(durable_store_url)
    seed(writer, Insert("runs", run_row(data={"kept": True})))
    writer.close()
    applied = migration_rows(durable_store_url)

    reader = open_store(durable_store_url, read_only=True)
    try:
        row = reader.get("runs", {"run_id": RUN})
        assert row is not None and row["data"] == {"kept": True}
        with pytest.raises(StoreError) as written:
            reader.commit_many([WriteSet((Put("runs", {"run_id": RUN, "status": "failed"}),))])
        assert written.value.code == "STORE_READ_ONLY"
        with pytest.raises(StoreError) as claimed:
            reader.claim_run(RUN, "me", 30.0)
        assert claimed.value.code == "STORE_READ_ONLY"
    finally:
        reader.close()

    after = open_store(durable_store_url)
    try:
        row = after.get("runs", {"run_id": RUN})
        assert row is not None and row["status"] == run_row()["status"]
        assert row["lease_epoch"] == 0
    finally:
        after.close()
    assert migration_rows(durable_store_url) == applied


def _exists(url: str) -> bool:
    """Whether the SQLite file, or the PostgreSQL schema, of ``url`` exists."""
    if is_sqlite(url):
        return Path(url[len("sqlite:///"):]).exists()
    import psycopg

    parts = urlsplit(url)
    schema = dict(parse_qsl(parts.query))["schema"]
    with psycopg.connect(urlunsplit(parts._replace(query=""))) as conn:
        row = conn.execute("SELECT count(*) FROM information_schema.schemata "
                           "WHERE schema_name = %s", (schema,)).fetchone()
    return bool(row and row[0])


def test_i11_opening_a_missing_store_read_only_is_store_not_found_and_creates_nothing(
    durable_store_url: str,
) -> None:
    assert not _exists(durable_store_url)

    with pytest.raises(StoreError) as missing:
        open_store(durable_store_url, read_only=True)

    assert missing.value.code == "STORE_NOT_FOUND"
    assert not _exists(durable_store_url)


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "pg_toast", "pg_mine", ""])
def test_i11_a_store_url_never_names_a_system_schema_or_an_empty_one(schema: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(ConfigError) as refused:
        open_store(f"postgresql://nobody@127.0.0.1:1/x?schema={schema}")

    assert repr(schema) in refused.value.error.message
