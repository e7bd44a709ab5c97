"""Size caps on the folders a command writes: its work folder (one AgentLoom made) and,
without a mount namespace, its private ``TMPDIR`` (in a namespace view ``/tmp`` is a tmpfs
of ``tmp_size_bytes`` and needs no watching).

No quota is available to an unprivileged runtime, so the supervisor watches: on each tick it
reads the free space of each folder's file system (one ``statvfs``), and only when that file
system has grown by more than a folder's headroom since the folder was last measured — the
folder cannot have grown by more than its file system did — it walks the folder and sums the
blocks it uses. A folder over its cap kills the command (``disk_limit``), so a folder never
grows past its cap by more than one tick of writing. A command that writes little costs one
``statvfs`` a tick; a walk happens at most once every ``MIN_WALK_GAP_S`` and never takes more
than a tenth of the time.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

#: How often the supervisor looks at the file systems while a command runs.
TICK_S = 0.1
#: The least time between two walks of one folder (and ten times the last walk's length).
MIN_WALK_GAP_S = 0.25


@dataclass(frozen=True, slots=True)
class Capped:
    """A folder and the most it may hold (bytes of blocks in use)."""

    path: Path
    limit: int
    label: str  # how the error names it: "the work folder", "TMPDIR"


def folder_bytes(path: Path) -> int:
    """The bytes of the blocks the files and folders below ``path`` use (hard links once);
    entries that vanish while it walks are skipped."""
    total = 0
    seen: set[tuple[int, int]] = set()
    stack = [str(path)]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_nlink > 1:
                        key = (st.st_dev, st.st_ino)
                        if key in seen:
                            continue
                        seen.add(key)
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
    return total


def _used(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize


@dataclass
class _State:
    capped: Capped
    fs_used: int | None  # the file system's use when the folder was last measured
    size: int | None  # the folder's size then (None: not measured yet)
    next_walk: float = 0.0
    walk_s: float = 0.0


class DiskWatch:
    """Watches ``capped`` folders for one execution; ``over()`` is called on each tick."""

    def __init__(self, capped: tuple[Capped, ...]) -> None:
        self._states = [_State(c, _used(c.path), None) for c in capped]

    def over(self) -> Capped | None:
        """The first folder found over its cap, else ``None``."""
        now = time.monotonic()
        for state in self._states:
            used = _used(state.capped.path)
            if used is None or state.fs_used is None:
                continue
            # Before the first walk the folder's size is unknown: its whole cap is headroom
            # (a folder already near its cap is caught at the first walk).
            headroom = state.capped.limit - (state.size or 0)
            if used - state.fs_used <= headroom or now < state.next_walk:
                continue
            started = time.monotonic()
            size = folder_bytes(state.capped.path)
            state.walk_s = time.monotonic() - started
            state.next_walk = started + max(MIN_WALK_GAP_S, 10 * state.walk_s)
            state.size, state.fs_used = size, used
            if size > state.capped.limit:
                return state.capped
        return None
