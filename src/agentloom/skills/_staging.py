"""The private staging folder an import writes into, and the checks on every member.

Every source (folder, archive, git tree) is read member by member into a ``Staging``: a
regular file is written below the staging root (``O_CREAT | O_EXCL | O_NOFOLLOW``, parents
made by us, so nothing can redirect a write), a link is only *recorded* — no symlink or
hardlink is ever created on disk — and resolved at the end to a copy of the file it names,
provided that file is a regular member inside the same skill folder. A member that is
absolute, holds ``..``, a backslash or a NUL, repeats an earlier name or sits below a file
or a link is refused; so is a device, a FIFO or a socket. Sizes and the member count are
counted from the bytes actually written.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from agentloom.skills.errors import (
    MEMBER_LINK,
    MEMBER_PATH,
    RATIO_LIMIT,
    SIZE_LIMIT,
    SkillImportError,
)
from agentloom.skills.limits import ImportLimits

__all__ = ["Staging", "link_target", "member_path", "mode_executable", "read_chunks", "staging"]

READ_SIZE = 64 << 10
MAX_LINK_HOPS = 8


def member_path(name: str, limits: ImportLimits) -> str:
    """``name`` as a clean relative POSIX path (a leading ``./`` and a trailing ``/`` dropped).

    Raises:
        SkillImportError: ``SKILL_MEMBER_PATH`` — absolute, a drive letter, ``..``, a
            backslash, a NUL, empty, or deeper than ``limits.max_depth``.
    """
    shown = repr(name[:200])
    if "\0" in name or "\\" in name:
        raise SkillImportError(MEMBER_PATH, f"member {shown} holds a NUL or a backslash; refused")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise SkillImportError(MEMBER_PATH, f"member {shown} is an absolute path; refused")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise SkillImportError(MEMBER_PATH, f"member {shown} climbs out with '..'; refused")
    if not parts:
        raise SkillImportError(MEMBER_PATH, f"member {shown} has an empty path; refused")
    if len(parts) > limits.max_depth:
        raise SkillImportError(MEMBER_PATH, f"member {shown} is deeper than "
                               f"{limits.max_depth} folders; refused")
    return "/".join(parts)


@dataclass(slots=True)
class Staging:
    """What has been staged so far below ``root`` (a private folder, mode 0700)."""

    root: Path
    limits: ImportLimits
    files: dict[str, bool] = field(default_factory=dict)  # path -> executable
    links: dict[str, str] = field(default_factory=dict)  # path -> target, relative to root
    folders: set[str] = field(default_factory=set)
    total_bytes: int = 0
    ratio_base: int | None = None  # the archive's size on disk, when extracting one
    skipped: list[str] = field(default_factory=list)  # reported, not staged (submodules)

    # -- members ---------------------------------------------------------------------------

    def _claim(self, path: str) -> None:
        if path in self.files or path in self.links or path in self.folders:
            raise SkillImportError(MEMBER_PATH, f"member {path!r} appears twice; refused")
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in self.files or parent in self.links:
                raise SkillImportError(MEMBER_LINK if parent in self.links else MEMBER_PATH,
                                       f"member {path!r} lies below {parent!r}, which is not a "
                                       "folder; refused")
        if len(self.files) + len(self.links) >= self.limits.max_files:
            raise SkillImportError(SIZE_LIMIT, f"more than {self.limits.max_files} members; "
                                   "refused")

    def add_folder(self, path: str) -> None:
        if path in self.files or path in self.links:
            raise SkillImportError(MEMBER_PATH, f"member {path!r} appears twice; refused")
        self.folders.add(path)

    def add_link(self, path: str, target: str) -> None:
        """Record link ``path`` naming ``target`` (relative to the staging root); checked now
        that it stays below the root, and in ``resolve_links`` that it names a file."""
        self._claim(path)
        self.links[path] = target

    def add_file(self, path: str, chunks: Iterable[bytes], *, executable: bool = False) -> int:
        """Write a regular member from ``chunks``; returns its size.

        Raises:
            SkillImportError: ``SKILL_SIZE_LIMIT`` / ``SKILL_RATIO_LIMIT`` as soon as the bytes
                written so far pass a limit (the partial file stays in staging, deleted with it).
        """
        self._claim(path)
        self.files[path] = executable
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        size = 0
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                size += len(chunk)
                self.total_bytes += len(chunk)
                self._check_size(path, size)
                out.write(chunk)
        return size

    def _check_size(self, path: str, size: int) -> None:
        limits = self.limits
        if size > limits.max_file_bytes:
            raise SkillImportError(SIZE_LIMIT, f"member {path!r} is larger than "
                                   f"{limits.max_file_bytes} bytes; refused while reading it")
        if self.total_bytes > limits.max_total_bytes:
            raise SkillImportError(SIZE_LIMIT, f"the files are larger than "
                                   f"{limits.max_total_bytes} bytes together; refused at "
                                   f"{path!r}")
        base = self.ratio_base
        if (base is not None and self.total_bytes > limits.ratio_floor
                and self.total_bytes > limits.max_ratio * max(base, 1)):
            raise SkillImportError(RATIO_LIMIT, f"the archive ({base} bytes) expands more than "
                                   f"{limits.max_ratio:g} times (refused at {self.total_bytes} "
                                   f"bytes out, member {path!r}): a zip bomb?")

    # -- links -----------------------------------------------------------------------------

    def resolve_links(self, skill_dirs: Iterable[str]) -> None:
        """Replace every link by a copy of the regular file it names, which must sit in the
        same skill folder as the link (a link outside every skill folder is dropped).

        Raises:
            SkillImportError: ``SKILL_MEMBER_LINK`` — a link leaving its skill folder, naming
                a folder, nothing, or a chain longer than 8.
        """
        dirs = sorted(skill_dirs, key=len, reverse=True)
        for path in sorted(self.links):
            home = _owner(path, dirs)
            if home is None:
                continue
            target = self.links[path]
            for _ in range(MAX_LINK_HOPS):
                if not _inside(target, home):
                    raise SkillImportError(MEMBER_LINK, f"link {path!r} points outside its skill "
                                           f"folder ({self.links[path]!r}); refused")
                if target not in self.links:
                    break
                target = self.links[target]
            else:
                raise SkillImportError(MEMBER_LINK, f"link {path!r} is a chain of more than "
                                       f"{MAX_LINK_HOPS} links; refused")
            if target not in self.files:
                raise SkillImportError(MEMBER_LINK, f"link {path!r} names {target!r}, which is "
                                       "not a file of the skill; refused")
            del self.links[path]
            with (self.root / target).open("rb") as src:
                self.add_file(path, read_chunks(src), executable=self.files[target])

    def discard(self, prefix: str) -> None:
        """Forget what lies below ``prefix`` (a ``subdir`` not asked for)."""
        for table in (self.files, self.links):
            for key in [k for k in table if not _inside(k, prefix)]:
                del table[key]


def link_target(link: str, target: str, *, relative_to_link: bool) -> str | None:
    """The staging-relative path a link names, or None when it leaves the staging root.
    A symlink's target is read from the link's folder; a tar hardlink's from the root."""
    if target.startswith("/") or "\0" in target:
        return None
    base = posixpath.dirname(link) if relative_to_link else ""
    joined = posixpath.normpath(posixpath.join(base, target))
    if joined == ".." or joined.startswith("../") or joined == ".":
        return None
    return joined


def _inside(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


def _owner(path: str, dirs: list[str]) -> str | None:
    for d in dirs:
        if path != d and _inside(path, d):
            return d
    return None


def read_chunks(src: IO[bytes]) -> Iterator[bytes]:
    """``src`` a read at a time, up to its real end (whatever a header declared)."""
    while chunk := src.read(READ_SIZE):
        yield chunk


def mode_executable(mode: int) -> bool:
    return bool(mode & stat.S_IXUSR)


@contextmanager
def staging(limits: ImportLimits, *, parent: Path | None = None) -> Iterator[Staging]:
    """A private staging folder (0700), deleted on the way out whatever happened."""
    root = Path(tempfile.mkdtemp(prefix="agentloom-skill-", dir=parent))
    try:
        yield Staging(root, limits)
    finally:
        shutil.rmtree(root, ignore_errors=True)
