"""Who sandboxed commands run as on the host.

A runtime running as root never runs a command as root: commands (and, under bubblewrap,
the ``bwrap`` launcher itself) switch to the dedicated unprivileged ``SANDBOX_UID`` /
``SANDBOX_GID`` (65534, ``nobody`` on Debian), and the folders a command may write are
owned by that uid. A runtime running as an ordinary user runs commands as that user:
it has no other uid to give them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SANDBOX_UID = 65534
SANDBOX_GID = 65534


def sandbox_identity() -> tuple[int, int] | None:
    """``(uid, gid)`` commands switch to, or ``None`` when they keep the runtime's own
    (the runtime is not root)."""
    return (SANDBOX_UID, SANDBOX_GID) if os.geteuid() == 0 else None


def scratch_folder(prefix: str, parent: Path | None = None) -> Path:
    """A new, empty ``0700`` folder for one command or server (in ``parent``, default the
    system's temporary folder), given to the uid commands run as: made by AgentLoom, so the
    sandbox may own it. The caller deletes it."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    identity = sandbox_identity()
    if identity is not None:
        os.chown(folder, *identity)
    return folder
