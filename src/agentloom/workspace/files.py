"""The content tools — read, write, edit, apply_patch — as synchronous calls on a ``Beneath`` root.

Owns their contract (000 §7.3) and result values; mkdir / move / delete live in
``_entries.py``, list / glob in ``_search.py``, grep in ``_grep.py`` (all re-exported here
or from ``service.py``). Every call validates its arguments and *all* of its targets before
its first side effect (F01): a mutating call runs its checks once before taking the entry
lock and again under it, so a refused call leaves the workspace untouched — not even a lock
file is created. Content changes replace the entry in its folder (temp file + rename), so
they never write through a link; a symbolic link as the last name is refused. A new file's
missing parent folders are made first, as ``mkdir(parents=True)`` makes them
(``_entries.open_dir_creating``), unless the call says ``parents=False``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agentloom.workspace._atomic import decode_text, encode_text, etag_of, read_all, write_atomic
from agentloom.workspace._entries import (
    Current,
    Deleted,
    check_etag,
    delete_entry,
    entry_stat,
    load_file,
    make_dir,
    move_entry,
    not_a_folder,
    open_dir_creating,
    optional_etag,
    require_file,
)
from agentloom.workspace._locks import entry_locks
from agentloom.workspace._patch import apply_hunks, parse_unified_diff
from agentloom.workspace._search import check_int
from agentloom.workspace.paths import Beneath, RelPath, WorkspaceError, parse_path, refuse_reserved, shown

__all__ = [
    "Deleted",
    "FileSlice",
    "FileVersion",
    "WriteMode",
    "delete_entry",
    "edit_file",
    "make_dir",
    "move_entry",
    "patch_file",
    "read_file",
    "write_file",
]

MAX_READ_CHARS = 262_144
WriteMode = Literal["create_only", "replace"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileSlice:
    """A slice of a text file as ``fs.read`` returns it: the content, where it starts, where
    the next slice starts, the file's size (and its etag, for a later replace)."""

    path: str
    content: str
    offset: int
    """Character (code point) offset of ``content`` in the file's text."""
    next_offset: int | None
    """Where the next slice starts, or ``None`` when ``content`` reaches the end."""
    size: int
    """The whole file's size in bytes."""
    etag: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FileVersion:
    """A file's version after a write: its relative path, new etag and size."""

    path: str
    etag: str
    size: int


def _file_target(raw: object) -> RelPath:
    rel = parse_path(raw)
    refuse_reserved(rel)
    if rel.is_root:
        raise WorkspaceError("IS_A_DIRECTORY", "'.' is the workspace root folder; name a file")
    if rel.trailing_slash:
        raise WorkspaceError("INVALID_PATH", f"{shown(rel.display + '/')} ends with '/'; name a file")
    return rel


def _update(
    b: Beneath, rel: RelPath, compute: Callable[[Current | None], bytes], *, lock_timeout_s: float
) -> FileVersion:
    """Read → check → write one file under its entry lock; checks run before the lock too (F01)."""
    dir_fd, name = b.open_parent(rel)
    try:
        compute(load_file(b, dir_fd, name, rel))
        with entry_locks(b, [(dir_fd, name, rel)], timeout_s=lock_timeout_s):
            cur = load_file(b, dir_fd, name, rel)
            data = compute(cur)
            mode = cur.mode if cur is not None else 0o644
            write_atomic(dir_fd, name, data, rel, replace=cur is not None, mode=mode, owner=b.content_owner)
    finally:
        os.close(dir_fd)
    return FileVersion(path=rel.display, etag=etag_of(data), size=len(data))


def _open_parent(b: Beneath, rel: RelPath, *, create: bool) -> tuple[int, str]:
    """``Beneath.open_parent``, creating the missing parent folders when ``create`` is set."""
    try:
        return b.open_parent(rel)
    except WorkspaceError as exc:
        if exc.code == "NOT_A_DIRECTORY":
            raise not_a_folder(b, rel.parent, rel) from None
        if exc.code != "NOT_FOUND" or not create:
            raise
    return open_dir_creating(b, rel.parent, target=rel), rel.name


def _refuse_existing(dir_fd: int, name: str, rel: RelPath) -> None:
    if entry_stat(dir_fd, name, rel) is not None:
        raise WorkspaceError(
            "EXISTS",
            f"{shown(rel.display)} already exists; read it and write with mode='replace' and its etag",
        )


def _existing(cur: Current | None, rel: RelPath, expected: str | None) -> str:
    if cur is None:
        raise WorkspaceError("NOT_FOUND", f"{shown(rel.display)} does not exist; create it with write")
    check_etag(cur, expected, rel)
    return decode_text(cur.data, rel)


# --- read / write / edit / patch --------------------------------------------------------


def read_file(b: Beneath, raw: object, *, offset: object, limit: object) -> FileSlice:
    start = check_int(offset, "offset", 0, 1 << 62)
    size = MAX_READ_CHARS if limit is None else check_int(limit, "limit", 1, MAX_READ_CHARS)
    rel = parse_path(raw)
    refuse_reserved(rel)
    fd = b.open(rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        require_file(b, st, rel)
        data = read_all(fd, rel)
    finally:
        os.close(fd)
    try:
        text = decode_text(data, rel)
    except WorkspaceError as exc:  # still give its etag: moving or deleting it needs one
        etag = etag_of(data)
        raise WorkspaceError(
            "BINARY_FILE", f"{exc.error.message}; its etag is {etag} (if_match to move or delete it)",
            details={"etag": etag, "size": len(data)},
        ) from None
    if start > len(text):
        raise WorkspaceError(
            "INVALID_ARGUMENTS",
            f"offset {start} is past the end of {shown(rel.display)} ({len(text)} characters)",
        )
    content = text[start : start + size]
    end = start + len(content)
    return FileSlice(
        path=rel.display,
        content=content,
        offset=start,
        next_offset=end if end < len(text) else None,
        size=len(data),
        etag=etag_of(data),
    )


def write_file(
    b: Beneath,
    raw: object,
    content: object,
    *,
    mode: object,
    if_match: object,
    lock_timeout_s: float,
    parents: object = True,
) -> FileVersion:
    if not isinstance(parents, bool):
        raise WorkspaceError("INVALID_ARGUMENTS", "parents must be true (the default) or false")
    if mode not in ("create_only", "replace"):
        raise WorkspaceError("INVALID_ARGUMENTS", "mode must be 'create_only' (default) or 'replace'")
    if mode == "create_only" and if_match is not None:
        raise WorkspaceError(
            "INVALID_ARGUMENTS",
            "create_only writes a new file and takes no if_match; to overwrite use mode='replace' + the etag",
        )
    if mode == "replace" and if_match is None:
        raise WorkspaceError(
            "ETAG_REQUIRED", "mode='replace' needs if_match: read the file and pass the etag it returned"
        )
    expected = optional_etag(if_match)
    data = encode_text(content)
    rel = _file_target(raw)
    if mode == "replace":

        def replace(cur: Current | None) -> bytes:
            _existing(cur, rel, expected)
            return data

        return _update(b, rel, replace, lock_timeout_s=lock_timeout_s)
    dir_fd, name = _open_parent(b, rel, create=parents)
    try:
        _refuse_existing(dir_fd, name, rel)
        with entry_locks(b, [(dir_fd, name, rel)], timeout_s=lock_timeout_s):
            _refuse_existing(dir_fd, name, rel)
            write_atomic(dir_fd, name, data, rel, replace=False, mode=0o644, owner=b.content_owner)
    finally:
        os.close(dir_fd)
    return FileVersion(path=rel.display, etag=etag_of(data), size=len(data))


def edit_file(
    b: Beneath,
    raw: object,
    old_text: object,
    new_text: object,
    *,
    expected_matches: object,
    if_match: object,
    lock_timeout_s: float,
) -> FileVersion:
    if not isinstance(old_text, str) or not old_text:
        raise WorkspaceError("INVALID_ARGUMENTS", "old_text must be a non-empty string copied from the file")
    if not isinstance(new_text, str):
        raise WorkspaceError("INVALID_ARGUMENTS", "new_text must be a string")
    want = check_int(expected_matches, "expected_matches", 1, 100_000)
    encode_text(new_text, what="new_text")
    expected = optional_etag(if_match)
    rel = _file_target(raw)

    def edit(cur: Current | None) -> bytes:
        text = _existing(cur, rel, expected)
        found = text.count(old_text)
        if found != want:
            raise WorkspaceError(
                "MATCH_COUNT",
                f"old_text occurs {found} time(s) in {shown(rel.display)}, expected {want}; "
                "include more surrounding text to make it unique, or set expected_matches",
                details={"found": found, "expected": want},
            )
        return encode_text(text.replace(old_text, new_text, want))

    return _update(b, rel, edit, lock_timeout_s=lock_timeout_s)


def patch_file(
    b: Beneath, raw: object, unified_diff: object, *, if_match: object, lock_timeout_s: float
) -> FileVersion:
    expected = optional_etag(if_match)
    rel = _file_target(raw)
    if not isinstance(unified_diff, str):
        raise WorkspaceError("PATCH_INVALID", "unified_diff must be a string")
    encode_text(unified_diff, what="unified_diff")
    hunks = parse_unified_diff(unified_diff, rel.display)

    def patch(cur: Current | None) -> bytes:
        return encode_text(apply_hunks(_existing(cur, rel, expected), hunks, rel.display))

    return _update(b, rel, patch, lock_timeout_s=lock_timeout_s)
