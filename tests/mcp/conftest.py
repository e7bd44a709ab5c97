"""Fixtures for the MCP tests: real servers only — the npm reference server
``@modelcontextprotocol/server-everything`` (installed once into ``<repo>/.cache/mcp-npm`` by
``npm.install``), the PyPI ``mcp-server-git``, and the small low-level server ``servers/lab.py``
(it pages ``tools/list``), each over stdio or Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_npm import NpmUnavailable, install
from mcp_support import LAB, free_port, serve_http


@pytest.fixture(scope="session")
def everything() -> Path:
    """The entry script of the pinned server-everything (run it with ``node``)."""
    try:
        return install()
    except NpmUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the npm MCP server tests: {exc}")
        pytest.skip(f"npm MCP server unavailable: {exc}")


@pytest.fixture(scope="session")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not on PATH")
    return found


@pytest.fixture(scope="session")
def git_server() -> str:
    found = shutil.which("mcp-server-git", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("mcp-server-git is not installed (pip install -e '.[dev]')")
    return found


@pytest.fixture
def everything_http(everything: Path, node: str) -> Iterator[str]:
    """server-everything in its Streamable HTTP mode on a free port: its ``/mcp`` URL."""
    port = free_port()
    yield from serve_http([node, str(everything), "streamableHttp"], port, {"PORT": str(port)})


@pytest.fixture
def lab_http() -> Iterator[str]:
    """``servers/lab.py`` over Streamable HTTP on a free port: its ``/mcp`` URL."""
    port = free_port()
    yield from serve_http([sys.executable, str(LAB), "http", str(port)], port)


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A git repository with one commit and one untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for argv in (["git", "init", "-q", "-b", "main"],
                 ["git", "commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    (repo / "new.txt").write_text("untracked\n", encoding="utf-8")
    return repo
