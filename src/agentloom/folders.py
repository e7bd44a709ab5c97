"""Folders the runtime makes for itself, with a mode the umask cannot change.

The store, the workspaces and the sandbox's spool all lay out folders under
``.agentloom/``; ``make_dirs`` is the one way they do it.
"""

from __future__ import annotations

import os
from pathlib import Path

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
