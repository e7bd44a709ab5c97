"""``WorkspaceService``: the scoped file tools of 000 §7.3 as async calls over a handle.

Owns the handle (scope id, host root, writable), the read-only rule and the hop to a worker
thread. Each call opens the root afresh, resolves beneath it (``paths.Beneath``) and closes
it again; the blocking work runs in ``asyncio.to_thread``. A cancelled caller does not stop a
call that has started: it completes (atomically) or fails on its own. Paths in results are
relative to the root (POSIX); the host root never leaves this module except into the kernel.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from agentloom.workspace._grep import GrepMatch, GrepResult, grep_files
from agentloom.workspace._locks import DEFAULT_LOCK_TIMEOUT_S
from agentloom.workspace._modes import check_owner
from agentloom.workspace._search import GlobResult, ListEntry, Listing, glob_paths, list_dir
from agentloom.workspace.files import (
    Deleted,
    FileSlice,
    FileVersion,
    WriteMode,
    delete_entry,
    edit_file,
    make_dir,
    move_entry,
    patch_file,
    read_file,
    write_file,
)
from agentloom.workspace.paths import Beneath, Resolution, WorkspaceError, WorkspaceErrorCode

__all__ = [
    "Deleted",
    "FileSlice",
    "FileVersion",
    "GlobResult",
    "GrepMatch",
    "GrepResult",
    "ListEntry",
    "Listing",
    "WorkspaceError",
    "WorkspaceErrorCode",
    "WorkspaceHandle",
    "WorkspaceService",
    "WriteMode",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceHandle:
    """One scope's view of its workspace root. ``root`` is a host path: internal only."""

    scope_id: str
    root: Path = field(repr=False)
    writable: bool = True
    lock_dir: Path | None = field(default=None, repr=False)
    """Where the entry locks live when not in ``.locks`` at the root (a bound folder)."""
    content_owner: tuple[int, int] | None = field(default=None, repr=False)
    """Who new entries belong to when not the service's content owner (a bound folder's
    own owner)."""


class WorkspaceService:
    """The file tools over a ``WorkspaceHandle``.

    Args:
        resolution: ``"auto"`` (openat2 when available, else the O_NOFOLLOW walk),
            ``"openat2"`` or ``"walk"`` to force one (tests run both).
        lock_timeout_s: how long a writer waits for another writer's entry lock before
            ``LOCK_TIMEOUT``. Default 10 s.
        content_owner: ``(uid, gid)`` that every file and folder the tools create is given
            to, for a runtime running as root whose commands run unprivileged
            (``sandbox_identity()``). Default ``None``: the runtime keeps them.
    """

    def __init__(
        self,
        *,
        resolution: Resolution = "auto",
        lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
        content_owner: tuple[int, int] | None = None,
    ) -> None:
        if resolution not in ("auto", "openat2", "walk"):
            raise ValueError(f"resolution must be 'auto', 'openat2' or 'walk', not {resolution!r}")
        self._resolution: Resolution = resolution
        self._lock_timeout_s = lock_timeout_s
        self._content_owner = check_owner(content_owner)

    async def open_view(self, root: Path, *, scope_id: str, writable: bool = True,
                        lock_dir: Path | None = None,
                        content_owner: tuple[int, int] | None = None) -> WorkspaceHandle:
        """A handle on ``root``, which must be an existing folder. ``lock_dir`` and
        ``content_owner`` override the defaults for a folder the runtime does not own."""

        def check() -> None:
            try:
                st = os.stat(root)
            except OSError:
                st = None
            if st is None or not stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(
                    "WORKSPACE_UNAVAILABLE", f"the workspace folder of scope {scope_id!r} does not exist"
                )

        await asyncio.to_thread(check)
        return WorkspaceHandle(scope_id=scope_id, root=Path(root), writable=writable,
                               lock_dir=lock_dir, content_owner=check_owner(content_owner))

    async def _run(self, handle: WorkspaceHandle, op: Callable[[Beneath], T], *, writes: bool) -> T:
        if writes and not handle.writable:
            raise WorkspaceError(
                "READ_ONLY", "this workspace view is read-only; no file can be changed through it"
            )

        def call() -> T:
            owner = handle.content_owner or self._content_owner
            with Beneath(handle.root, resolution=self._resolution, content_owner=owner,
                         lock_dir=handle.lock_dir) as beneath:
                return op(beneath)

        return await asyncio.to_thread(call)

    async def read(
        self, handle: WorkspaceHandle, path: str, offset: int = 0, limit: int | None = None
    ) -> FileSlice:
        """Read UTF-8 text; ``offset``/``limit`` count characters (code points), not bytes.

        At most 262,144 characters per call; follow ``next_offset`` for the rest.
        """
        return await self._run(handle, lambda b: read_file(b, path, offset=offset, limit=limit), writes=False)

    async def write(
        self,
        handle: WorkspaceHandle,
        path: str,
        content: str,
        *,
        mode: WriteMode = "create_only",
        if_match: str | None = None,
        parents: bool = True,
    ) -> FileVersion:
        """Create (default) or replace a file atomically; ``replace`` needs the current etag.

        A new file's missing parent folders are created first (as ``mkdir(parents=True)``
        makes them), unless ``parents=False``; then a missing parent is ``NOT_FOUND``.
        """
        timeout = self._lock_timeout_s
        return await self._run(
            handle,
            lambda b: write_file(
                b, path, content, mode=mode, if_match=if_match, lock_timeout_s=timeout, parents=parents
            ),
            writes=True,
        )

    async def edit(
        self,
        handle: WorkspaceHandle,
        path: str,
        old_text: str,
        new_text: str,
        *,
        expected_matches: int = 1,
        if_match: str | None = None,
    ) -> FileVersion:
        """Replace exactly ``expected_matches`` occurrences of ``old_text``, or change nothing."""
        timeout = self._lock_timeout_s
        return await self._run(
            handle,
            lambda b: edit_file(
                b,
                path,
                old_text,
                new_text,
                expected_matches=expected_matches,
                if_match=if_match,
                lock_timeout_s=timeout,
            ),
            writes=True,
        )

    async def apply_patch(
        self, handle: WorkspaceHandle, path: str, unified_diff: str, *, if_match: str | None = None
    ) -> FileVersion:
        """Apply a one-file unified diff whose hunks match the current content exactly."""
        timeout = self._lock_timeout_s
        return await self._run(
            handle,
            lambda b: patch_file(b, path, unified_diff, if_match=if_match, lock_timeout_s=timeout),
            writes=True,
        )

    async def list(
        self, handle: WorkspaceHandle, path: str = ".", *, cursor: str | None = None, limit: int = 200
    ) -> Listing:
        """One page of a folder's entries sorted by name; pass ``next_cursor`` for the next."""
        return await self._run(handle, lambda b: list_dir(b, path, cursor=cursor, limit=limit), writes=False)

    async def glob(
        self, handle: WorkspaceHandle, pattern: str, *, root: str = ".", limit: int = 500
    ) -> GlobResult:
        """Sorted paths matching ``pattern`` (``*``, ``?``, ``[...]``, ``**``) under ``root``."""
        return await self._run(handle, lambda b: glob_paths(b, pattern, root=root, limit=limit), writes=False)

    async def grep(
        self,
        handle: WorkspaceHandle,
        pattern: str,
        *,
        paths: Sequence[str] | None = None,
        literal: bool = False,
        limit: int = 200,
        timeout_s: float = 2.0,
    ) -> GrepResult:
        """Lines matching ``pattern`` sorted by (path, line); bounded by ``limit`` and ``timeout_s``."""
        return await self._run(
            handle,
            lambda b: grep_files(b, pattern, paths=paths, literal=literal, limit=limit, timeout_s=timeout_s),
            writes=False,
        )

    async def mkdir(self, handle: WorkspaceHandle, path: str, *, parents: bool = False) -> ListEntry:
        """Create a folder; with ``parents`` also its missing parents (an existing folder is fine)."""
        return await self._run(handle, lambda b: make_dir(b, path, parents=parents), writes=True)

    async def move(
        self, handle: WorkspaceHandle, src: str, dst: str, *, if_match: str | None = None
    ) -> ListEntry:
        """Rename ``src`` to ``dst``; never overwrites an existing ``dst``."""
        timeout = self._lock_timeout_s
        return await self._run(
            handle, lambda b: move_entry(b, src, dst, if_match=if_match, lock_timeout_s=timeout), writes=True
        )

    async def delete(
        self, handle: WorkspaceHandle, path: str, *, if_match: str | None = None, recursive: bool = False
    ) -> Deleted:
        """Delete a file, link or empty folder; a non-empty folder only with ``recursive``."""
        timeout = self._lock_timeout_s
        return await self._run(
            handle,
            lambda b: delete_entry(b, path, if_match=if_match, recursive=recursive, lock_timeout_s=timeout),
            writes=True,
        )
