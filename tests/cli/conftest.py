"""Fixtures for the CLI tests: an isolated environment, an ``init``-ed project, a CLI runner.

Every test runs offline on a SQLite store under ``tmp_path``. ``runtime_from_config`` puts the
config's folder on ``sys.path`` and the example's ``hooks`` module gets imported: both are
undone after each test so one test's project never leaks into the next.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .support import Cli


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("AGENTLOOM_STORE", raising=False)
    path = list(sys.path)
    # pytest puts tests/ on sys.path, where the package tests/hooks would shadow the example
    # project's hooks.py (the config's folder is searched after sys.path): hide it, as it is
    # hidden in a real `agentloom` process.
    sys.path[:] = [p for p in path if not (Path(p or ".") / "hooks" / "__init__.py").is_file()]
    earlier = sys.modules.pop("hooks", None)
    yield
    sys.path[:] = path
    sys.modules.pop("hooks", None)
    if earlier is not None:
        sys.modules["hooks"] = earlier


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}"


@pytest.fixture
def cli(store_url: str) -> Cli:
    return Cli(store_url)


@pytest.fixture
def project(tmp_path: Path, cli: Cli) -> Path:
    """The example project ``agentloom init`` writes."""
    folder = tmp_path / "proj"
    result = cli("init", str(folder))
    assert result.exit_code == 0, result.stderr
    return folder
