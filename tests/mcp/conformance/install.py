"""Installs the official MCP conformance suite and the Node it needs, once, into
``<repo>/.cache/mcp-conformance`` — both from the npm registry, at exact versions.

``@modelcontextprotocol/conformance`` needs Node >= 22; the machine's ``npm`` (any Node) brings
Node 22 as the registry package ``node`` (its ``node_modules/.bin/node``). ``python
tests/mcp/conformance/install.py`` installs them (``.ci/run`` does, best effort); the test
calls ``install()`` and skips with a one-line reason when npm or the registry is not available
— except under ``CI=true``, where that fails it. An install holds a lock on the folder.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CONFORMANCE = "@modelcontextprotocol/conformance"
CONFORMANCE_VERSION = "0.1.16"
NODE = "node"
NODE_VERSION = "22.23.3"
REPO = Path(__file__).resolve().parents[3]
PREFIX = REPO / ".cache" / "mcp-conformance"
INSTALL_TIMEOUT_S = 600


class ConformanceUnavailable(Exception):
    """npm is missing, or a package could not be installed (the reason is the message)."""


@dataclass(frozen=True)
class Suite:
    node: Path
    """Node 22 (the registry package's binary)."""
    cli: Path
    """The suite's command-line entry (run with ``node``)."""


def _installed(package: str) -> str | None:
    try:
        manifest = PREFIX / "node_modules" / package / "package.json"
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def _suite() -> Suite:
    return Suite(node=PREFIX / "node_modules" / ".bin" / "node",
                 cli=PREFIX / "node_modules" / CONFORMANCE / "dist" / "index.js")


def _ready() -> bool:
    return (_installed(CONFORMANCE) == CONFORMANCE_VERSION and _installed(NODE) == NODE_VERSION
            and _suite().node.exists())


def install() -> Suite:
    """The pinned suite and Node 22, installed if they are not there yet.

    Raises:
        ConformanceUnavailable: no ``npm`` on PATH, or ``npm install`` failed.
    """
    if _ready():
        return _suite()
    npm = shutil.which("npm")
    if npm is None:
        raise ConformanceUnavailable("npm is not on PATH")
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _ready():  # another process installed it meanwhile
            return _suite()
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
                 "--save-exact", f"{CONFORMANCE}@{CONFORMANCE_VERSION}",
                 f"{NODE}@{NODE_VERSION}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConformanceUnavailable(f"npm install failed: {exc}") from None
    if done.returncode != 0 or not _ready():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConformanceUnavailable(
            f"npm install {CONFORMANCE}@{CONFORMANCE_VERSION} {NODE}@{NODE_VERSION} failed: {last}")
    try:
        version = subprocess.run([str(_suite().node), "--version"], capture_output=True,
                                 text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConformanceUnavailable(f"the installed node does not start: {exc}") from None
    if version != f"v{NODE_VERSION}":
        raise ConformanceUnavailable(f"the installed node says {version!r}, not v{NODE_VERSION}")
    return _suite()


if __name__ == "__main__":
    try:
        print(install().cli)
    except ConformanceUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
