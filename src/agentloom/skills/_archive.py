"""Staging an uploaded archive (zip, tar, tar.gz / .tgz / .tar.bz2 / .tar.xz).

Members are read as streams and written through ``Staging``, so sizes are the bytes that
really came out, and the expansion ratio (bytes out / size of the archive file) is checked
after every read: a bomb is refused long before it is written in full. Links are recorded,
never created (a zip symlink is a member whose Unix mode says ``S_IFLNK``; its bytes are the
target); a tar hardlink names a path from the archive root. Devices, FIFOs and other special
members are refused.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import IO, Any, cast

from agentloom.skills._staging import (
    Staging,
    link_target,
    member_path,
    mode_executable,
    read_chunks,
)
from agentloom.skills.errors import (
    MEMBER_LINK,
    MEMBER_TYPE,
    RATIO_LIMIT,
    SIZE_LIMIT,
    SOURCE_INVALID,
    SkillImportError,
)

__all__ = ["ARCHIVE_SUFFIXES", "is_archive", "stage_archive"]

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
MAX_LINK_TARGET = 4096


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def archive_stem(path: Path) -> str:
    """The archive's name without its suffix (the folder name of a skill at its root)."""
    name = path.name
    for suffix in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def stage_archive(path: Path, staged: Staging) -> None:
    """Stage every member of the archive at ``path``.

    Raises:
        SkillImportError: not a readable zip or tar, or a member is refused.
    """
    staged.ratio_base = path.stat().st_size
    if zipfile.is_zipfile(path):
        _zip(path, staged)
        return
    try:
        with _decompressed(path) as raw, tarfile.open(
                fileobj=_Bounded(raw, staged, path.name), mode="r|") as archive:
            _tar(archive, staged)
    except (tarfile.TarError, EOFError, OSError, lzma.LZMAError) as exc:
        raise SkillImportError(SOURCE_INVALID, f"{path.name!r} is not a readable zip or tar "
                               f"archive: {exc}") from None


def _decompressed(path: Path) -> IO[bytes]:
    """The archive's bytes, decompressed as they are read (gzip, bzip2, xz, or none)."""
    with path.open("rb") as probe:
        magic = probe.read(6)
    if magic.startswith(b"\x1f\x8b"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    if magic.startswith(b"BZh"):
        return cast(IO[bytes], bz2.open(path, "rb"))
    if magic.startswith(b"\xfd7zXZ\x00"):
        return cast(IO[bytes], lzma.open(path, "rb"))
    return path.open("rb")


class _Bounded(io.RawIOBase):
    """A reader over the decompressed tar stream that counts every byte tarfile reads —
    headers and PAX records too, which tarfile reads whole into memory on a declared size —
    and refuses past the ratio (or the total plus room for headers)."""

    def __init__(self, raw: IO[bytes], staged: Staging, name: str) -> None:
        self._raw = raw
        self._staged = staged
        self._name = name
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        limits = self._staged.limits
        room = limits.max_total_bytes + 1024 * (limits.max_files + 16)
        want = min(len(buffer), room + 1 - self.count)
        data = self._raw.read(max(want, 0))
        self.count += len(data)
        base = self._staged.ratio_base or 1
        if self.count > limits.ratio_floor and self.count > limits.max_ratio * base + (1 << 20):
            raise SkillImportError(RATIO_LIMIT, f"the archive {self._name!r} ({base} bytes) "
                                   f"expands more than {limits.max_ratio:g} times (refused at "
                                   f"{self.count} bytes out)")
        if self.count > room:
            raise SkillImportError(SIZE_LIMIT, f"the archive {self._name!r} holds more than "
                                   f"{limits.max_total_bytes} bytes; refused while reading it")
        buffer[: len(data)] = data
        return len(data)


def _zip(path: Path, staged: Staging) -> None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SkillImportError(SOURCE_INVALID, f"{path.name!r} is a damaged zip: {exc}") from None
    with archive:
        for info in archive.infolist():
            name = member_path(info.filename, staged.limits)
            mode = info.external_attr >> 16
            try:
                if info.is_dir():
                    staged.add_folder(name)
                elif stat.S_ISLNK(mode):
                    with archive.open(info) as src:
                        raw = src.read(MAX_LINK_TARGET + 1)
                    _link(staged, name, raw, relative_to_link=True)
                elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # 0: no Unix type given
                    raise SkillImportError(MEMBER_TYPE, f"member {name!r} is a device, FIFO or "
                                           "socket; refused")
                else:
                    with archive.open(info) as src:
                        staged.add_file(name, read_chunks(src),
                                        executable=mode_executable(mode))
            except (zipfile.BadZipFile, NotImplementedError, EOFError) as exc:
                raise SkillImportError(SOURCE_INVALID, f"member {name!r} cannot be read: "
                                       f"{exc}") from None


def _tar(archive: tarfile.TarFile, staged: Staging) -> None:
    for info in archive:  # streamed: one header at a time
        name = member_path(info.name, staged.limits)
        if info.isdir():
            staged.add_folder(name)
        elif info.issym():
            _link(staged, name, info.linkname.encode(), relative_to_link=True)
        elif info.islnk():
            _link(staged, name, info.linkname.encode(), relative_to_link=False)
        elif info.isreg():
            src = archive.extractfile(info)
            if src is None:
                raise SkillImportError(MEMBER_TYPE, f"member {name!r} cannot be read")
            with src:
                staged.add_file(name, read_chunks(src), executable=mode_executable(info.mode))
        else:
            raise SkillImportError(MEMBER_TYPE, f"member {name!r} is a device, FIFO or other "
                                   "special file; only files, folders and links are allowed")


def _link(staged: Staging, name: str, raw: bytes, *, relative_to_link: bool) -> None:
    kind = "symlink" if relative_to_link else "hardlink"
    if len(raw) > MAX_LINK_TARGET:
        raise SkillImportError(MEMBER_LINK, f"{kind} {name!r} has a target longer than "
                               f"{MAX_LINK_TARGET} bytes; refused")
    target = link_target(name, raw.decode("utf-8", "replace"), relative_to_link=relative_to_link)
    if target is None:
        raise SkillImportError(MEMBER_LINK, f"{kind} {name!r} points outside the archive "
                               f"({raw.decode('utf-8', 'replace')[:200]!r}); refused")
    staged.add_link(name, target)
