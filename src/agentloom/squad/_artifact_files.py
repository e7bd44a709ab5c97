"""The files side of artifacts (issue 37): which files of a node's work folder a glob names,
reading them safely, and writing a node's granted artifacts read only into its inputs folder.

- **Globs** are ``/``-separated and relative to the work folder: ``*`` and ``?`` and ``[…]``
  match within one path component, ``**`` matches zero or more whole components (``src/**``
  is every file below ``src``; ``**/*.py`` every ``.py`` file). A glob matches files only.
- **Reading** walks the folder without following a symbolic link (a linked folder is not
  entered, a linked file is not a file), skips the runtime's ``.locks`` folder, opens each
  file ``O_NOFOLLOW`` and keeps it only if it is a regular file. Limits: ``MAX_FILES`` files
  and ``MAX_BYTES`` bytes in all per recording; over either, ``ARTIFACTS_TOO_LARGE``.
- **Writing** the inputs folder builds it complete in ``.inputs.partial`` beside it (files
  ``0444``, folders ``0555``: readable by the sandbox uid, writable by nobody but root), then
  renames it into place: a folder named ``inputs`` is always whole. One that is there already
  (a resumed node) is kept.

Owns: globs, the limits, reading and writing those files. Does not own: which node's files are
recorded or granted, or the store (``squad.artifacts``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from agentloom.errors import AgentLoomError

__all__ = ["MAX_BYTES", "MAX_FILES", "ArtifactError", "FileBytes", "matches", "read_matching",
           "read_named", "write_inputs"]

MAX_FILES = 1000
"""At most this many files are recorded by one node's outputs or one publish."""
MAX_BYTES = 64 << 20
"""At most this many bytes in all (64 MiB) are recorded by one node's outputs or one publish."""
LOCKS = ".locks"  # the file tools' lock folder inside a work folder: the runtime's, not content
FILE_MODE = 0o444
DIR_MODE = 0o555


class ArtifactError(AgentLoomError):
    """An artifact that cannot be recorded or read: ``ARTIFACTS_TOO_LARGE`` (over the limits),
    ``ARTIFACT_NOT_FOUND`` (a published path that is not a regular file of the node's folder),
    ``ARTIFACT_PATH_INVALID`` (an absolute or ``..`` path), ``NOT_IN_WORKFLOW`` (publish
    outside a workflow node)."""

    default_code = "ARTIFACT_INVALID"


@dataclass(frozen=True, slots=True)
class FileBytes:
    """One file to record: its ``/``-separated path below the folder, bytes and sha256."""

    path: str
    content: bytes
    digest: str


def matches(globs: Sequence[str], path: str) -> bool:
    """Whether ``path`` (``/``-separated, relative) matches one of ``globs``."""
    parts = path.split("/")
    return any(_match(tuple(g.strip("/").split("/")), tuple(parts)) for g in globs)


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head = pattern[0]
    if head == "**":
        return any(_match(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and _match(pattern[1:], parts[1:])


def _walk(folder: Path) -> Iterator[str]:
    """The relative paths of the entries below ``folder`` that are not folders, sorted; no
    symbolic link is followed."""
    for top, dirs, files in os.walk(folder, followlinks=False):
        rel = Path(top).relative_to(folder).as_posix()
        if rel == ".":
            dirs[:] = [d for d in dirs if d != LOCKS]
        dirs.sort()
        for name in sorted(files):
            yield name if rel == "." else f"{rel}/{name}"


def _read(folder: Path, path: str) -> bytes | None:
    """The bytes of ``folder/path`` if it is a regular file (the last name not followed)."""
    try:
        fd = os.open(folder / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def _limited(found: list[FileBytes], path: str, content: bytes, total: int) -> int:
    if len(found) >= MAX_FILES:
        raise ArtifactError(f"more than {MAX_FILES} files to record as artifacts; narrow the "
                            "globs (or publish fewer paths)", code="ARTIFACTS_TOO_LARGE")
    total += len(content)
    if total > MAX_BYTES:
        raise ArtifactError(f"the artifacts to record exceed {MAX_BYTES >> 20} MiB in all (at "
                            f"{path!r}); narrow the globs", code="ARTIFACTS_TOO_LARGE")
    found.append(FileBytes(path, content, hashlib.sha256(content).hexdigest()))
    return total


def read_matching(folder: Path, globs: Sequence[str]) -> list[FileBytes]:
    """Every regular file below ``folder`` matching one of ``globs``, by path (none when the
    folder does not exist: a node that wrote nothing).

    Raises:
        ArtifactError: ``ARTIFACTS_TOO_LARGE``.
    """
    found: list[FileBytes] = []
    total = 0
    if not folder.is_dir():
        return found
    for path in _walk(folder):
        if matches(globs, path):
            content = _read(folder, path)
            if content is not None:
                total = _limited(found, path, content, total)
    return found


def read_named(folder: Path, paths: Sequence[str]) -> list[FileBytes]:
    """The files ``paths`` of ``folder`` (each once, by path).

    Raises:
        ArtifactError: ``ARTIFACT_PATH_INVALID``, ``ARTIFACT_NOT_FOUND``,
            ``ARTIFACTS_TOO_LARGE``.
    """
    found: list[FileBytes] = []
    total = 0
    for raw in sorted(set(paths)):
        path = raw[2:] if raw.startswith("./") else raw
        parts = path.split("/")
        if not path or path.startswith("/") or "\\" in path or ".." in parts or "" in parts \
                or parts[0] == LOCKS:
            raise ArtifactError(f"{raw!r} is not a path below the node's folder; give it "
                                "relative, without '..'", code="ARTIFACT_PATH_INVALID")
        content = _read_below(folder, parts)
        if content is None:
            raise ArtifactError(f"{raw!r} is not a regular file of the node's folder",
                                code="ARTIFACT_NOT_FOUND")
        total = _limited(found, path, content, total)
    return found


def _read_below(folder: Path, parts: list[str]) -> bytes | None:
    """``_read`` with no symbolic link followed on the way down either."""
    here = folder
    for name in parts[:-1]:
        here = here / name
        if here.is_symlink() or not here.is_dir():
            return None
    return _read(here, parts[-1])


def write_inputs(inputs: Path, files: Sequence[tuple[str, bytes]]) -> None:
    """Make ``inputs`` hold exactly ``files`` (``<from>/<path>``, bytes), read only, in one
    rename; an ``inputs`` folder already there is kept (it was whole when it was renamed)."""
    if inputs.is_dir():
        return
    partial = inputs.with_name(".inputs.partial")
    _remove(partial)
    partial.mkdir(mode=0o700, parents=False)
    folders = {partial}
    for rel, content in files:
        target = partial / rel
        for parent in reversed(target.relative_to(partial).parents[:-1]):
            here = partial / parent
            if here not in folders:
                here.mkdir(mode=0o700)
                folders.add(here)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, FILE_MODE)
        finally:
            os.close(fd)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        os.chmod(folder, DIR_MODE)  # deepest first: a read-only folder takes no new entry
    os.rename(partial, inputs)


def _remove(path: Path) -> None:
    """Remove a folder this module made, read-only folders included."""
    if not path.exists():
        return
    for top, dirs, _ in os.walk(path):
        for d in (top, *(os.path.join(top, d) for d in dirs)):
            if not os.path.islink(d):
                os.chmod(d, 0o700)
    shutil.rmtree(path)
