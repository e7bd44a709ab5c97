"""Installs the npm reference MCP servers the tests run, once, into ``<repo>/.cache/mcp-npm``.

``python tests/mcp/mcp_npm.py`` installs them (``.ci/run`` does, before the tests); the session
fixtures call ``install()`` / ``install_filesystem()`` and skip the npm-based tests with a
one-line reason when npm or the registry is not available — except under ``CI=true``, where a
failed install fails them. An install holds a lock on the folder: test processes running in
parallel never run ``npm install`` into it at the same time.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_VERSION = "2026.8.31"
REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".cache" / "mcp-npm"
INSTALL_TIMEOUT_S = 300


class NpmUnavailable(Exception):
    """npm is missing, or the package could not be installed (the reason is the message)."""


def everything_script() -> Path:
    """The installed server-everything's entry script (run with ``node``)."""
    return PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def filesystem_script() -> Path:
    """The installed server-filesystem's executable."""
    return PREFIX / "node_modules" / ".bin" / "mcp-server-filesystem"


def _installed_version(package: str) -> str | None:
    manifest = PREFIX / "node_modules" / package / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def _install(package: str, version: str) -> None:
    if _installed_version(package) == version:
        return
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NpmUnavailable("npm or node is not on PATH")
    PREFIX.mkdir(parents=True, exist_ok=True)
    with open(PREFIX / ".install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _installed_version(package) == version:  # another process installed it meanwhile
            return
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
                 f"{package}@{version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise NpmUnavailable(f"npm install failed: {exc}") from None
    if done.returncode != 0 or _installed_version(package) != version:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NpmUnavailable(f"npm install {package}@{version} failed: {last}")


def install() -> Path:
    """The entry script of the pinned server-everything, installed if it is not there yet.

    Raises:
        NpmUnavailable: no ``npm`` / ``node`` on PATH, or ``npm install`` failed.
    """
    _install(EVERYTHING, EVERYTHING_VERSION)
    return everything_script()


def install_filesystem() -> Path:
    """The executable of the pinned server-filesystem, installed if it is not there yet.

    Raises:
        NpmUnavailable: as ``install``.
    """
    _install(FILESYSTEM, FILESYSTEM_VERSION)
    return filesystem_script()


def install_global(prefix: Path) -> Path:
    """The pinned server-everything installed as ``npm install -g`` does, under ``prefix``
    (``<prefix>/lib/node_modules``, the command at ``<prefix>/bin``), as a user's global
    install under their home lies; from npm's cache once ``install`` has fetched it.

    Raises:
        NpmUnavailable: as ``install``.
    """
    install()  # the registry once, into npm's cache
    npm = shutil.which("npm")
    if npm is None:
        raise NpmUnavailable("npm is not on PATH")
    try:
        done = subprocess.run(
            [npm, "install", "--global", "--prefix", str(prefix), "--no-audit", "--no-fund",
             "--prefer-offline", f"{EVERYTHING}@{EVERYTHING_VERSION}"],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NpmUnavailable(f"npm install --global failed: {exc}") from None
    command = prefix / "bin" / "mcp-server-everything"
    if done.returncode != 0 or not command.exists():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NpmUnavailable(f"npm install --global {EVERYTHING}@{EVERYTHING_VERSION} failed: {last}")
    return command


if __name__ == "__main__":
    try:
        print(install())
        print(install_filesystem())
    except NpmUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
