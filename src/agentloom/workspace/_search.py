"""Read-only tree tools ``list`` and ``glob`` over folder descriptors, and the shared walk.

Walks never follow a symbolic link (a link is reported as an entry, never entered), never
cross onto another file system, skip the service's ``.locks/`` folder and temp files, and
stop at a visit budget. ``grep`` lives in ``_grep.py`` on top of these helpers.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from agentloom.workspace._names import render_name
from agentloom.workspace.paths import (
    LOCK_DIR,
    SANDBOX_ROOT,
    TEMP_PREFIX,
    Beneath,
    RelPath,
    WorkspaceError,
    parse_path,
    refuse_reserved,
)

EntryKind = Literal["file", "dir", "symlink", "other"]
MAX_LIST_LIMIT = 1000
MAX_GLOB_LIMIT = 5000
MAX_VISITS = 100_000
MAX_DEPTH = 128
MAX_PATTERN_CHARS = 1024
_CURSOR_PREFIX = "c1."


@dataclass(frozen=True, slots=True, kw_only=True)
class ListEntry:
    """One entry of a folder listing: name, relative path, kind, and size for regular files."""

    name: str
    path: str
    kind: EntryKind
    size: int | None
    """Bytes for regular files; ``None`` for folders, links and others."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """One page of a folder listing; ``next_cursor`` fetches the next page (``None``: the
    last one)."""

    entries: tuple[ListEntry, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobResult:
    """The relative paths a glob matched, and whether the walk stopped at its budget."""

    paths: tuple[str, ...]
    truncated: bool


def check_int(value: object, name: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise WorkspaceError("INVALID_ARGUMENTS", f"{name} must be an integer from {low} to {high}")
    return value


def _kind(entry: os.DirEntry[str]) -> EntryKind:
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


def scan_dir(b: Beneath, dir_fd: int) -> list[os.DirEntry[str]]:
    """The folder's entries sorted by name (bytes), without the service's own entries."""
    at_root = os.fstat(dir_fd).st_ino == b.ino
    lock_ino = b.lock_dir_ino()
    kept = []
    with os.scandir(dir_fd) as it:
        for entry in it:
            if entry.name.startswith(TEMP_PREFIX) or (at_root and entry.name == LOCK_DIR):
                continue
            if lock_ino is not None and entry.inode() == lock_ino and entry.is_dir(follow_symlinks=False):
                continue
            kept.append(entry)
    kept.sort(key=lambda e: os.fsencode(e.name))
    return kept


def open_subdir(b: Beneath, dir_fd: int, name: str) -> int | None:
    """Enter a real sub-folder (never a link, never another file system), or ``None``."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    if os.fstat(fd).st_dev != b.dev:
        os.close(fd)
        return None
    return fd


# --- list -------------------------------------------------------------------------------


def _decode_cursor(cursor: object) -> bytes | None:
    if cursor is None:
        return None
    if isinstance(cursor, str) and cursor.startswith(_CURSOR_PREFIX):
        try:
            return bytes.fromhex(cursor[len(_CURSOR_PREFIX) :])
        except ValueError:
            pass
    raise WorkspaceError("INVALID_ARGUMENTS", "cursor must be a next_cursor value returned by list")


def list_dir(b: Beneath, raw: object, *, cursor: object, limit: object) -> Listing:
    size = check_int(limit, "limit", 1, MAX_LIST_LIMIT)
    after = _decode_cursor(cursor)
    rel = parse_path(raw)
    refuse_reserved(rel)
    fd = b.open_dir(rel)
    try:
        entries = [e for e in scan_dir(b, fd) if after is None or os.fsencode(e.name) > after]
        page = entries[:size]
        out = []
        for e in page:
            kind = _kind(e)
            try:
                length = e.stat(follow_symlinks=False).st_size if kind == "file" else None
            except OSError:
                length = None
            child = rel.child(e.name)
            out.append(ListEntry(name=child.display_name, path=child.display, kind=kind, size=length))
    finally:
        os.close(fd)
    more = len(entries) > size
    next_cursor = _CURSOR_PREFIX + os.fsencode(page[-1].name).hex() if more else None
    return Listing(entries=tuple(out), next_cursor=next_cursor)


# --- glob -------------------------------------------------------------------------------


def _parse_pattern(pattern: object) -> tuple[str, ...]:
    if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
        raise WorkspaceError("INVALID_PATTERN", "pattern must be a non-empty string without NUL bytes")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError("INVALID_PATTERN", f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    text = pattern
    if text == SANDBOX_ROOT or text.startswith(SANDBOX_ROOT + "/"):
        text = text[len(SANDBOX_ROOT) :].lstrip("/")
    elif text.startswith("/"):
        raise WorkspaceError("INVALID_PATTERN", "glob patterns are relative to root, e.g. 'src/**/*.py'")
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise WorkspaceError("INVALID_PATTERN", "glob patterns may not contain '..'; set root instead")
        if part == "**" and parts and parts[-1] == "**":
            continue
        parts.append(part)
    if not parts:
        raise WorkspaceError("INVALID_PATTERN", "pattern matches nothing; use e.g. '*' or '**/*.py'")
    return tuple(parts)


def _name_matches(name: str, part: str) -> bool:
    # Shell convention: wildcards do not match a leading dot unless the pattern has one.
    if name.startswith(".") and not part.startswith("."):
        return False
    return fnmatchcase(name, part)


class Budget:
    """How many entries a walk may still visit before its deadline; a walk stops, marked
    truncated or timed out, when either runs out."""

    def __init__(self, deadline: float | None = None) -> None:
        self.left = MAX_VISITS
        self.deadline = deadline
        self.exhausted = False
        self.timed_out = False

    def spend(self) -> bool:
        """Count one visited entry; ``False`` once the budget or the deadline is gone."""
        self.left -= 1
        if self.left < 0:
            self.exhausted = True
        elif self.deadline is not None and self.left % 256 == 0 and time.monotonic() > self.deadline:
            self.timed_out = True
        return not (self.exhausted or self.timed_out)


def _closure(pat: tuple[str, ...], active: set[int]) -> set[int]:
    out = set(active)
    for i in sorted(active):
        j = i
        while j < len(pat) - 1 and pat[j] == "**":
            j += 1
            out.add(j)
    return out


def _glob_visit(
    b: Beneath,
    fd: int,
    rel: RelPath,
    pat: tuple[str, ...],
    active: set[int],
    found: set[str],
    budget: Budget,
    depth: int,
) -> None:
    last = len(pat) - 1
    for entry in scan_dir(b, fd):
        if not budget.spend():
            return
        name = entry.name
        printed = render_name(name)  # patterns match names as the tools print them
        is_dir = entry.is_dir(follow_symlinks=False)
        child: set[int] = set()
        matched = False
        for i in active:
            part = pat[i]
            if part == "**":
                if name.startswith("."):
                    continue
                matched = matched or i == last
                if is_dir:
                    child.add(i)
            elif _name_matches(printed, part):
                matched = matched or i == last
                if i < last and is_dir:
                    child.add(i + 1)
        if matched:
            found.add(rel.child(name).display)
        if child and is_dir and depth < MAX_DEPTH:
            sub = open_subdir(b, fd, name)
            if sub is not None:
                try:
                    _glob_visit(b, sub, rel.child(name), pat, _closure(pat, child), found, budget, depth + 1)
                finally:
                    os.close(sub)


def glob_paths(b: Beneath, pattern: object, *, root: object, limit: object) -> GlobResult:
    size = check_int(limit, "limit", 1, MAX_GLOB_LIMIT)
    pat = _parse_pattern(pattern)
    rel = parse_path(root, what="root")
    refuse_reserved(rel)
    fd = b.open_dir(rel)
    found: set[str] = set()
    budget = Budget()
    try:
        _glob_visit(b, fd, rel, pat, _closure(pat, {0}), found, budget, 0)
    finally:
        os.close(fd)
    ordered = sorted(found)
    return GlobResult(paths=tuple(ordered[:size]), truncated=budget.exhausted or len(ordered) > size)
