"""Shared fixtures: every store-backed test runs on memory, a real SQLite file and the
real PostgreSQL server (127.0.0.1:5432, database ``test``), each in a fresh schema."""

from __future__ import annotations

import compileall
import os
import re
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


# The slow tests (issue #36, 12): `pytest -m "not slow"` leaves them out, for a quick pass while
# working. tests/slow.txt lists them, one node id a line (a file, a class, a test or one of its parameters),
# as `python tests/slow_list.py` picks them from a run's `--durations=0` report.
SLOW_LIST = Path(__file__).with_name("slow.txt")


def _slow_prefixes() -> tuple[str, ...]:
    lines = SLOW_LIST.read_text(encoding="utf-8").splitlines() if SLOW_LIST.exists() else []
    return tuple(s for s in (line.split("#", 1)[0].strip() for line in lines) if s)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    prefixes = _slow_prefixes()
    for item in items:
        nodeid = item.nodeid
        listed = any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)
        if listed or item.get_closest_marker("kill") is not None:
            item.add_marker(pytest.mark.slow)


_LOCATION = re.compile(r"^Skipped: ")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Every skip with its reason, grouped (issue #36, 12): a skip is a backend or tool this
    machine lacks, never a test that passed by doing nothing (README, "What a skip means")."""
    reports = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, int] = {}
    for report in reports:
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = _LOCATION.sub("", str(reason)).strip()
        reasons[reason] = reasons.get(reason, 0) + 1
    if not reasons:
        return
    terminalreporter.section(f"{len(reports)} skipped, by reason (README: what a skip means)")
    for reason, count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        terminalreporter.write_line(f"{count:5d} × {reason}")


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
