"""Issue 37 point 1: the ``artifacts`` table on every store (memory, a SQLite file, the
PostgreSQL server) — its rows round-trip, a second write of a key keeps the first row (a
replayed publish records nothing twice), and a v12 database migrates to v13 with its rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import drop_store, fresh_store_url
from tests.store.test_contract import migration_rows
from tests.store.test_run_controls_migration import names, store_at

from agentloom.store import Store, WriteSet, open_store
from agentloom.store.artifacts import (
    ArtifactRecord,
    artifact_insert,
    artifacts_of,
    run_artifacts,
)
from agentloom.store.schema import MIGRATIONS

RUN = "wf-run-1"
V13 = 13


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store(fresh_store_url(request.param, tmp_path))
    yield s
    if request.param == "postgres":
        drop_store(s)
    else:
        s.close()


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


def record(path: str, digest: str = "d" * 64, *, attempt: int = 1,
           how: str = "outputs") -> ArtifactRecord:
    return ArtifactRecord(run_id=RUN, node="coder", attempt=attempt, path=path, digest=digest,
                          size=3, source_owner="agent:coder", invocation=f"{RUN}/n/coder/{attempt}",
                          created_at=1.0, data={"how": how, "media_type": "text/plain"})


def test_i37_1_artifact_rows_round_trip_and_a_second_write_of_a_key_keeps_the_first(
    store: Store,
) -> None:
    first = [record("src/a.py"), record("src/b.py"), record("src/a.py", attempt=2)]
    assert store.commit_many([WriteSet(tuple(artifact_insert(r) for r in first))]) == [None]
    again = record("src/a.py", "e" * 64, how="publish")  # a replay: same key, other content
    assert store.commit_many([WriteSet((artifact_insert(again),))]) == [None]

    assert artifacts_of(store, RUN, "coder", 1) == [record("src/a.py"), record("src/b.py")]
    assert [(a.attempt, a.path) for a in run_artifacts(store, RUN)] == [
        (1, "src/a.py"), (1, "src/b.py"), (2, "src/a.py")]


def test_i37_1_an_unknown_source_owner_kind_is_refused_when_read(store: Store) -> None:
    bad = record("x").to_row() | {"source_owner": "person:bob"}
    with pytest.raises(ValueError, match="unknown source_owner 'person:bob'"):
        ArtifactRecord.from_row(bad)


def test_i37_1_a_v12_store_migrates_to_v13_with_the_artifacts_table(durable_url: str) -> None:
    assert len(MIGRATIONS) >= V13 and "workflow_artifacts" in MIGRATIONS[V13 - 1].summary
    store_at(durable_url, V13 - 1,
             "INSERT INTO runs (run_id, status, lease_epoch, created_at, updated_at, data) "
             f"VALUES ('{RUN}', 'running', 0, 1.0, 1.0, '{{\"kept\":true}}')")
    assert "workflow_artifacts" not in names(durable_url)

    store = open_store(durable_url)
    try:
        assert store.schema_version() >= V13  # type: ignore[attr-defined]
        assert [r[0] for r in migration_rows(durable_url)] == list(range(1, len(MIGRATIONS) + 1))
        assert {"workflow_artifacts", "workflow_artifacts_owner"} <= names(durable_url)
        run = store.get("runs", {"run_id": RUN})
        assert run is not None and run["data"] == {"kept": True}  # the old rows stay
        assert store.commit_many([WriteSet((artifact_insert(record("a.txt")),))]) == [None]
        assert artifacts_of(store, RUN, "coder", 1) == [record("a.txt")]
    finally:
        store.close()
