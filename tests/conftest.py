"""Shared fixtures: every store-backed test runs on memory, a real SQLite file and the
real PostgreSQL server (127.0.0.1:5432, database ``test``), each in a fresh schema."""

from __future__ import annotations

import compileall
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.store import Store, open_store

PG_BASE = os.environ.get("AGENTLOOM_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pytest_configure(config: pytest.Config) -> None:
    """The state home of this test process (``$XDG_STATE_HOME``), where runs started without
    a ``workspace.root`` keep their workspaces (``folders.default_workspace_root``): a
    folder of its own, searchable as ``/tmp`` is, so no test writes the user's
    ``~/.local/state`` and the ``container`` shape needs no move (issue #34, 8).

    Compile the package's modules once, before any test starts: many tests run the CLI in
    a subprocess, and where ``PYTHONDONTWRITEBYTECODE`` is set each of them would compile
    every module again (a quarter of a second each). Reading ``.pyc`` files is never off."""
    state = tempfile.mkdtemp(prefix="agentloom-state-")
    os.chmod(state, 0o711)
    os.environ["XDG_STATE_HOME"] = state
    config.add_cleanup(lambda: shutil.rmtree(state, ignore_errors=True))
    if not hasattr(config, "workerinput"):  # the controller only, not each xdist worker
        compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "agentloom",
                               quiet=1)


def pg_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_BASE, connect_timeout=3):
            return True
    except Exception:
        return False


def require_pg() -> None:
    """Skip locally without PostgreSQL; in CI a missing server is a failure, never a skip."""
    if pg_available():
        return
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is not reachable at {PG_BASE} and CI must run the PG suite")
    pytest.skip(f"PostgreSQL is not reachable at {PG_BASE}")


def fresh_store_url(backend: str, tmp_path: Path) -> str:
    if backend == "memory":
        return "memory://"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'agentloom.db'}"
    if backend == "postgres":
        require_pg()
        return f"{PG_BASE}?schema=t_{uuid.uuid4().hex[:12]}"
    raise ValueError(backend)


def drop_store(store: Store) -> None:
    drop = getattr(store, "drop_schema", None)
    store.close()
    if drop is not None:
        reopened = open_store(store.url)
        reopened.drop_schema()  # type: ignore[attr-defined]
        reopened.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        s = open_store(url)
        s.drop_schema()  # type: ignore[attr-defined]
        s.close()


@pytest.fixture(params=["sqlite", "postgres"])
def durable_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        s = open_store(url)
        s.drop_schema()  # type: ignore[attr-defined]
        s.close()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    yield s
    s.close()
