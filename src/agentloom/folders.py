"""Folders the runtime makes for itself, with a mode the umask cannot change, and where the
workspaces live by default.

The store lays out its folder ``.agentloom/`` beside the config (``0700``: nothing of the
sandbox's needs to pass through it); the workspaces (run folders, skill copies, the sandbox's
spool) live under ``default_workspace_root`` — **outside** the project, so that nothing
given the project folder (a command hook, an MCP server, a command working in a repository
that holds the config) can reach another run's folder (issue #34, 8). ``make_dirs`` is the
one way the runtime makes its folders.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

#: Where the workspaces lived before issue #34 (relative to the config's folder, or to the
#: working folder of a Python program): used while it exists, with a warning.
LEGACY_WORKSPACE_ROOT = ".agentloom/workspaces"

#: The runtime's own folders: others (the sandbox uid) may pass through, never list or write.
SEARCH_MODE = 0o711


def make_dirs(path: Path, mode: int = SEARCH_MODE) -> None:
    """Create ``path`` and its missing parents, each exactly ``mode`` (past the umask);
    folders that already exist are left as they are."""
    missing: list[Path] = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        os.chmod(folder, mode)


def state_home() -> Path:
    """``$XDG_STATE_HOME``, else ``~/.local/state``; without a home folder,
    ``/var/tmp/agentloom-<uid>``."""
    if configured := os.environ.get("XDG_STATE_HOME"):
        return Path(configured).expanduser().absolute()
    home = Path(os.path.expanduser("~"))
    if home.is_absolute() and home.is_dir():
        return home / ".local" / "state"
    return Path("/var/tmp") / f"agentloom-{os.geteuid()}"


def default_workspace_root(base_dir: Path) -> Path:
    """The workspace root of a project whose config is in ``base_dir`` (or a Python program
    started in it): ``<state home>/agentloom/workspaces/<folder name>-<digest>``, one per
    project folder, outside it. A project that still has workspaces at the old place
    (``<base_dir>/.agentloom/workspaces``) keeps using them, with a warning saying how to
    move on (docs/upgrading.md)."""
    base = Path(os.path.abspath(base_dir))
    legacy = base / LEGACY_WORKSPACE_ROOT
    if legacy.is_dir():
        log.warning(
            "the workspaces of %s are still inside the project (%s), where a command hook or an MCP "
            "server given the project folder can read other runs' folders; once no run of it is "
            "in flight, remove that folder and new runs use %s (docs/upgrading.md)",
            base, legacy, _new_root(base))
        return legacy
    return _new_root(base)


def _new_root(base: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:12]
    return state_home() / "agentloom" / "workspaces" / f"{base.name or 'root'}-{digest}"
