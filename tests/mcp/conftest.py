"""Fixtures for the MCP tests: real servers only — the npm reference server
``@modelcontextprotocol/server-everything`` (installed once into ``<repo>/.cache/mcp-npm`` by
``npm.install``), the PyPI ``mcp-server-git``, and the small low-level server ``servers/lab.py``
(it pages ``tools/list``), each over stdio or Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_npm import NpmUnavailable, install
from mcp_support import LAB

START_DEADLINE_S = 30.0


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + START_DEADLINE_S
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{argv[:2]} did not listen on 127.0.0.1:{port}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def everything_http(everything: Path, node: str) -> Iterator[str]:
    """server-everything in its Streamable HTTP mode on a free port: its ``/mcp`` URL."""
    port = free_port()
    yield from _serve([node, str(everything), "streamableHttp"], port, {"PORT": str(port)})


@pytest.fixture
def lab_http() -> Iterator[str]:
    """``servers/lab.py`` over Streamable HTTP on a free port: its ``/mcp`` URL."""
    port = free_port()
    yield from _serve([sys.executable, str(LAB), "http", str(port)], port)


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
