"""Installs the npm reference MCP server the tests run, once, into ``<repo>/.cache/mcp-npm``.

``python tests/mcp/mcp_npm.py`` installs it (``.ci/run`` does, before the tests); the session
fixture ``everything`` in ``conftest.py`` calls ``install()`` and skips the npm-based tests
with a one-line reason when npm or the registry is not available — except under ``CI=true``,
where a failed install fails them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".cache" / "mcp-npm"
INSTALL_TIMEOUT_S = 300


class NpmUnavailable(Exception):
    """npm is missing, or the package could not be installed (the reason is the message)."""


def everything_script() -> Path:
    """The installed server's entry script (run with ``node``)."""
    return PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _installed_version() -> str | None:
    import json

    manifest = everything_script().parents[1] / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def install() -> Path:
    """The entry script of the pinned server-everything, installed if it is not there yet.

    Raises:
        NpmUnavailable: no ``npm`` / ``node`` on PATH, or ``npm install`` failed.
    """
    if _installed_version() == EVERYTHING_VERSION:
        return everything_script()
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NpmUnavailable("npm or node is not on PATH")
    PREFIX.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
             f"{EVERYTHING}@{EVERYTHING_VERSION}"],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NpmUnavailable(f"npm install failed: {exc}") from None
    if done.returncode != 0 or _installed_version() != EVERYTHING_VERSION:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NpmUnavailable(f"npm install {EVERYTHING}@{EVERYTHING_VERSION} failed: {last}")
    return everything_script()


if __name__ == "__main__":
    try:
        print(install())
    except NpmUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
