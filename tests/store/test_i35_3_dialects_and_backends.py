"""Issue #35 item 3: migrations keyed by dialect; store backends found through a scheme registry.

- every migration has SQL for every dialect, and its summary is the one ``schema_migrations``
  has always recorded (``vN: …``), so an existing database migrates on as before;
- a dialect a migration has no SQL for is refused naming the migration and the dialect;
- ``open_store`` finds the backend by the URL's scheme in ``BACKENDS``; a URL no backend takes
  keeps the error it always had.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.store import open_store
from agentloom.store.memory import MemoryStore
from agentloom.store.migrations import DIALECTS, MIGRATIONS, Migration
from agentloom.store.schema import MIGRATIONS as REEXPORTED
from agentloom.store.sqlite import SqliteStore
from agentloom.store.url import BACKENDS

UNSUPPORTED = "use sqlite:///path.db, postgresql://host/db or memory://"


def test_i35_3_every_migration_has_sql_for_every_dialect() -> None:
    assert set(DIALECTS) == {"sqlite", "postgresql"}
    for version, migration in enumerate(MIGRATIONS, 1):
        assert migration.summary.startswith(f"v{version}: ")
        assert set(migration.sql) == set(DIALECTS), migration.summary
        for dialect in DIALECTS:
            assert migration.ddl(dialect).strip()
    assert REEXPORTED is MIGRATIONS  # the old import path keeps working


def test_i35_3_shared_templates_differ_only_in_their_column_types() -> None:
    v1 = MIGRATIONS[0]
    assert "REAL" in v1.ddl("sqlite") and "WITHOUT ROWID" in v1.ddl("sqlite")
    assert "DOUBLE PRECISION" in v1.ddl("postgresql") and "BYTEA" in v1.ddl("postgresql")
    assert "WITHOUT ROWID" not in v1.ddl("postgresql")
    assert "json_extract" in MIGRATIONS[9].ddl("sqlite")
    assert "::jsonb" in MIGRATIONS[9].ddl("postgresql")


def test_i35_3_a_dialect_without_sql_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"migration v1 has no SQL for dialect 'oracle'"):
        MIGRATIONS[0].ddl("oracle")
    assert Migration("v99: x", {"sqlite": "SELECT 1"}).ddl("sqlite") == "SELECT 1"


def test_i35_3_backends_are_found_by_the_url_scheme(tmp_path: Path) -> None:
    assert {"memory", "sqlite", "postgresql", "postgres"} <= set(BACKENDS)
    assert BACKENDS["postgres"] is BACKENDS["postgresql"]
    memory = open_store("memory://")
    assert isinstance(memory, MemoryStore)
    sqlite = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    try:
        assert isinstance(sqlite, SqliteStore)
        assert sqlite.dialect == "sqlite"
    finally:
        sqlite.close()


@pytest.mark.parametrize("url", ["mysql://h/db", "sqlite://a.db", "SQLITE:///a.db", "a.db",
                                 "memory:", ""])
def test_i35_3_a_url_no_backend_takes_keeps_its_error(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_store(url)
    assert str(refused.value).startswith(f"unsupported store URL {url!r}: {UNSUPPORTED}")


def test_i35_3_a_sqlite_url_without_a_path_says_so() -> None:
    with pytest.raises(ConfigError, match="sqlite store URL needs a file path"):
        open_store("sqlite:///")
