"""``WorkspaceService``: the scoped file tools of 000 §7.3 as async calls over a handle.

Owns the handle (scope id, host root, writable), the read-only rule and the hop to a worker
thread. Each call opens the root afresh, resolves beneath it (``paths.Beneath``) and closes
it again; the blocking work runs in ``asyncio.to_thread``. A cancelled caller does not stop a
call that has started: it completes (atomically) or fails on its own. Paths in results are
relative to the root (POSIX); the host root never leaves this module except into the kernel.

A path under ``/inputs`` (``inputs.INPUTS_ROOT``) names the handle's *inputs folder* instead
(a workflow node's granted artifacts, issue 37): read, list, glob and grep read it beneath its
own descriptor and answer ``/inputs/...`` paths; every write there is ``READ_ONLY``; a handle
without one (no grant) answers ``NOT_FOUND``.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NoReturn, TypeVar, cast

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
from agentloom.workspace.inputs import INPUTS_ROOT, existing_inputs, inputs_relative
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
    inputs: Path | None = field(default=None, repr=False)
    """The scope's inputs folder (``inputs.inputs_folder``), read at ``/inputs``; ``None``
    or a folder that does not exist: nothing was granted."""


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
                        content_owner: tuple[int, int] | None = None,
                        inputs: Path | None = None) -> WorkspaceHandle:
        """A handle on ``root``, which must be an existing folder. ``lock_dir`` and
        ``content_owner`` override the defaults for a folder the runtime does not own;
        ``inputs`` is the scope's inputs folder (it need not exist)."""

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
                               lock_dir=lock_dir, content_owner=check_owner(content_owner),
                               inputs=inputs)

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

    async def _read_inputs(self, handle: WorkspaceHandle, op: Callable[[Beneath], T]) -> T:
        """``op`` beneath the handle's inputs folder (``NOT_FOUND`` without one); a refusal
        says it is about ``/inputs``."""

        def call() -> T:
            folder = existing_inputs(handle.inputs)
            if folder is None:
                raise _no_inputs()
            with Beneath(folder, resolution=self._resolution) as beneath:
                try:
                    return op(beneath)
                except WorkspaceError as exc:
                    raise _about_inputs(exc) from None

        return await asyncio.to_thread(call)

    async def _refuse_input_write(self, handle: WorkspaceHandle, inner: str) -> NoReturn:
        """A write under ``/inputs``: ``NOT_FOUND`` where nothing of that name was granted,
        else ``READ_ONLY``."""

        def granted() -> bool:
            folder = existing_inputs(handle.inputs)
            first = inner.split("/", 1)[0]
            return folder is not None and (first == "." or existing_inputs(folder / first)
                                           is not None)

        if not await asyncio.to_thread(granted):
            raise _no_inputs()
        raise WorkspaceError("READ_ONLY", f"{INPUTS_ROOT} holds the files granted to this node "
                             "and is read only; write a changed copy into the work folder")

    async def _no_input_writes(self, handle: WorkspaceHandle, *paths: object) -> None:
        for path in paths:
            if (inner := inputs_relative(path)) is not None:
                await self._refuse_input_write(handle, inner)

    async def read(
        self, handle: WorkspaceHandle, path: str, offset: int = 0, limit: int | None = None
    ) -> FileSlice:
        """Read UTF-8 text; ``offset``/``limit`` count characters (code points), not bytes.

        At most 262,144 characters per call; follow ``next_offset`` for the rest.
        """
        if (inner := inputs_relative(path)) is not None:
            found = await self._read_inputs(
                handle, lambda b: read_file(b, inner, offset=offset, limit=limit))
            return replace(found, path=_shown(found.path))
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
        await self._no_input_writes(handle, path)
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
        await self._no_input_writes(handle, path)
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
        await self._no_input_writes(handle, path)
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
        if (inner := inputs_relative(path)) is not None:
            page = await self._read_inputs(
                handle, lambda b: list_dir(b, inner, cursor=cursor, limit=limit))
            return replace(page, entries=tuple(replace(e, path=_shown(e.path))
                                               for e in page.entries))
        return await self._run(handle, lambda b: list_dir(b, path, cursor=cursor, limit=limit), writes=False)

    async def glob(
        self, handle: WorkspaceHandle, pattern: str, *, root: str = ".", limit: int = 500
    ) -> GlobResult:
        """Sorted paths matching ``pattern`` (``*``, ``?``, ``[...]``, ``**``) under ``root``;
        ``/inputs/...`` in ``pattern`` (then ``root`` is ``.``) or in ``root`` searches the
        inputs folder."""
        inner_root = inputs_relative(root)
        if (inner_pattern := inputs_relative(pattern)) is not None:
            if root != ".":
                raise WorkspaceError("INVALID_ARGUMENTS", f"give the {INPUTS_ROOT} path in "
                                     "pattern or in root, not both")
            inner_root, pattern = ".", inner_pattern
        if inner_root is not None:
            at = inner_root
            found = await self._read_inputs(
                handle, lambda b: glob_paths(b, pattern, root=at, limit=limit))
            return replace(found, paths=tuple(_shown(p) for p in found.paths))
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
        """Lines matching ``pattern`` sorted by (path, line); bounded by ``limit`` and ``timeout_s``.
        ``paths`` under ``/inputs`` are searched in the inputs folder, after the others."""
        raw: list[object] = ["."] if paths is None else [paths] if isinstance(paths, str) else list(paths)
        inner = [i for i in map(inputs_relative, raw) if i is not None]
        if not inner:
            return await self._run(
                handle,
                lambda b: grep_files(b, pattern, paths=paths, literal=literal, limit=limit,
                                     timeout_s=timeout_s),
                writes=False,
            )
        started = time.monotonic()
        work = [p for p in raw if inputs_relative(p) is None]
        found = GrepResult(matches=(), truncated=False, timed_out=False)
        if work:
            found = await self._run(
                handle, lambda b: grep_files(b, pattern, paths=work, literal=literal,  # type: ignore[arg-type]
                                             limit=limit, timeout_s=timeout_s),
                writes=False)
            if found.truncated or found.timed_out:
                return found
            left = timeout_s - (time.monotonic() - started)
            if left <= 0:
                return replace(found, timed_out=True)
        else:
            left = timeout_s
        more = await self._read_inputs(
            handle, lambda b: grep_files(b, pattern, paths=inner, literal=literal, limit=limit,
                                         timeout_s=left))
        matches = (*found.matches, *(replace(m, path=_shown(m.path)) for m in more.matches))
        return GrepResult(matches=matches[:limit], timed_out=more.timed_out,
                          truncated=more.truncated or len(matches) > limit)

    async def mkdir(self, handle: WorkspaceHandle, path: str, *, parents: bool = False) -> ListEntry:
        """Create a folder; with ``parents`` also its missing parents (an existing folder is fine)."""
        await self._no_input_writes(handle, path)
        return await self._run(handle, lambda b: make_dir(b, path, parents=parents), writes=True)

    async def move(
        self, handle: WorkspaceHandle, src: str, dst: str, *, if_match: str | None = None
    ) -> ListEntry:
        """Rename ``src`` to ``dst``; never overwrites an existing ``dst``."""
        await self._no_input_writes(handle, src, dst)
        timeout = self._lock_timeout_s
        return await self._run(
            handle, lambda b: move_entry(b, src, dst, if_match=if_match, lock_timeout_s=timeout), writes=True
        )

    async def delete(
        self, handle: WorkspaceHandle, path: str, *, if_match: str | None = None, recursive: bool = False
    ) -> Deleted:
        """Delete a file, link or empty folder; a non-empty folder only with ``recursive``."""
        await self._no_input_writes(handle, path)
        timeout = self._lock_timeout_s
        return await self._run(
            handle,
            lambda b: delete_entry(b, path, if_match=if_match, recursive=recursive, lock_timeout_s=timeout),
            writes=True,
        )


def _no_inputs() -> WorkspaceError:
    return WorkspaceError("NOT_FOUND", f"nothing was granted to this node at {INPUTS_ROOT}; only "
                          "a workflow node whose inputs name another node's files has it")


def _about_inputs(exc: WorkspaceError) -> WorkspaceError:
    """``exc`` (a refusal beneath the inputs folder) saying it is about ``/inputs``."""
    return WorkspaceError(cast(WorkspaceErrorCode, exc.error.code),
                          f"in {INPUTS_ROOT}: {exc.error.message}",
                          external_outcome=exc.error.external_outcome,
                          details=dict(exc.error.details) if exc.error.details else None)


def _shown(inner: str) -> str:
    """A path below the inputs folder as the tools name it: ``/inputs/...``."""
    return INPUTS_ROOT if inner == "." else f"{INPUTS_ROOT}/{inner}"
