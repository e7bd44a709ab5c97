"""Immutable, content-addressed skill versions in the store.

::

    skills(name PK, digest, updated_at, data)        the current version of each name
    skill_versions(digest PK, name, created_at, data) every version ever imported (kept)
    blobs / blob_chunks                              each file's bytes, keyed by its sha256

A version's ``digest`` is the sha256 over its files in sorted path order — for each, the
path, a NUL, ``x`` or ``-`` (executable), the size as 8 bytes and the bytes — so the same
content is the same version wherever it came from: a re-import writes no new row (the first
import's source is kept) and only points ``skills`` at it again; changed content is a new
version and the previous one stays. File bytes are stored as blobs in the format
``context.blobs`` reads (inline up to 1 MiB, else 1 MiB chunks).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentloom.errors import StoreError
from agentloom.skills.errors import NOT_FOUND, SkillImportError
from agentloom.store import blobs as blob_rows
from agentloom.store import skills as skill_rows
from agentloom.store.ports import Op, Store, WriteSet

__all__ = ["SkillFile", "SkillSource", "SkillVersion", "file_bytes", "get_version",
           "list_skills", "skill_history", "store_version", "version_digest"]

CHUNK_SIZE = 1 << 20  # as context.blobs.CHUNK_SIZE: one format for every blob
SourceKind = Literal["folder", "archive", "git"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillFile:
    """One file of a version: its path in the skill folder, size, sha256 (its blob key)."""

    path: str
    size: int
    sha256: str
    executable: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillSource:
    """Where a version was first imported from: a folder or archive path, or a git URL (never
    with a password) with its pinned ``commit`` and ``subdir``; ``folder`` is the skill's
    folder inside it (``""``: the source itself)."""

    kind: SourceKind
    location: str
    commit: str | None = None
    subdir: str | None = None
    folder: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillVersion:
    """One immutable skill version: what the runtime will list (``name``, ``description``,
    ``entry``), read (``files``) and obey (``metadata``), and what the import reported."""

    digest: str
    name: str
    description: str
    source: SkillSource
    files: tuple[SkillFile, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    hooks: Any = None
    """Inert hook resources from the front matter: never bound unless a config binds them."""
    unsupported: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    entry: str = "SKILL.md"
    created_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["files"] = [asdict(f) for f in self.files]
        data["unsupported"] = list(self.unsupported)
        data["warnings"] = list(self.warnings)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkillVersion:
        return cls(digest=data["digest"], name=data["name"], description=data["description"],
                   source=SkillSource(**data["source"]),
                   files=tuple(SkillFile(**f) for f in data["files"]),
                   metadata=dict(data.get("metadata") or {}), hooks=data.get("hooks"),
                   unsupported=tuple(data.get("unsupported") or ()),
                   warnings=tuple(data.get("warnings") or ()),
                   entry=data.get("entry", "SKILL.md"), created_at=float(data["created_at"]))


def version_digest(root: Path, files: dict[str, bool]) -> tuple[str, tuple[SkillFile, ...]]:
    """The version digest of ``files`` (path below ``root`` -> executable) and each file's
    entry, reading every file once, a piece at a time."""
    whole = hashlib.sha256()
    entries = []
    for path in sorted(files):
        executable = files[path]
        one = hashlib.sha256()
        size = 0
        with (root / path).open("rb") as src:
            while chunk := src.read(CHUNK_SIZE):
                one.update(chunk)
                size += len(chunk)
        whole.update(path.encode() + b"\0" + (b"x" if executable else b"-")
                     + size.to_bytes(8, "big"))
        with (root / path).open("rb") as src:
            while chunk := src.read(CHUNK_SIZE):
                whole.update(chunk)
        entries.append(SkillFile(path=path, size=size, sha256=one.hexdigest(),
                                 executable=executable))
    return whole.hexdigest(), tuple(entries)


def _blob_ops(root: Path, file: SkillFile, now: float) -> Iterator[list[Op]]:
    """The blob rows of one file: chunk groups first, the ``blobs`` row last."""
    chunked = file.size > CHUNK_SIZE
    if chunked:
        with (root / file.path).open("rb") as src:
            seq = 0
            while piece := src.read(CHUNK_SIZE):
                yield [blob_rows.chunk_insert(digest=file.sha256, seq=seq, content=piece)]
                seq += 1
    content = b"" if chunked else (root / file.path).read_bytes()
    yield [blob_rows.blob_insert(digest=file.sha256, size=file.size, created_at=now,
                                 content=content, chunk_size=CHUNK_SIZE if chunked else None)]


def store_version(store: Store, version: SkillVersion, root: Path) -> bool:
    """Store ``version`` (its files read below ``root``) and make it the current version of
    its name. Returns whether it is new (False: that content was already a version).

    Raises:
        StoreError: a commit failed.
    """
    existing = skill_rows.has_version(store, version.digest)
    current_row = skill_rows.get_skill(store, version.name) if existing else None
    if current_row is not None and current_row.digest == version.digest \
            and current_row.data.get("source") == asdict(version.source):
        return False  # already the current version, from this source: nothing to write
    now = time.time()
    if not existing:
        for file in version.files:
            for ops in _blob_ops(root, file, now):
                _commit(store, [WriteSet(tuple(ops), label=f"skill blob {file.path}")])
    current: list[Op] = [
        skill_rows.version_insert(digest=version.digest, name=version.name,
                                  created_at=version.created_at, data=version.to_dict()),
        skill_rows.skill_put(name=version.name, digest=version.digest, updated_at=now,
                             data={"source": asdict(version.source)})]
    _commit(store, [WriteSet(tuple(current), label=f"skill {version.name}")])
    return not existing


def _commit(store: Store, batch: list[WriteSet]) -> None:
    for outcome in store.commit_many(batch):
        if outcome is not None:
            raise outcome if isinstance(outcome, StoreError) else StoreError(str(outcome))


def list_skills(store: Store) -> list[SkillVersion]:
    """The current version of every imported skill, by name."""
    found = []
    for row in skill_rows.skills(store):
        version = get_version(store, row.digest)
        if version is not None:
            found.append(version)
    return found


def get_version(store: Store, digest: str) -> SkillVersion | None:
    data = skill_rows.version_data(store, digest)
    return None if data is None else SkillVersion.from_dict(data)


def skill_history(store: Store, name: str) -> tuple[SkillVersion, list[SkillVersion]]:
    """The current version of skill ``name`` and all its versions, oldest first.

    Raises:
        SkillImportError: ``SKILL_NOT_FOUND`` — no skill of that name was imported.
    """
    row = skill_rows.get_skill(store, name)
    current = None if row is None else get_version(store, row.digest)
    if current is None:
        known = [r.name for r in skill_rows.skills(store)]
        raise SkillImportError(NOT_FOUND, f"no skill named {name!r} in the store; imported: "
                               f"{', '.join(known) or 'none'}")
    return current, [SkillVersion.from_dict(d) for d in skill_rows.versions_of(store, name)]


def file_bytes(store: Store, version: SkillVersion, path: str) -> bytes:
    """The bytes of file ``path`` of ``version`` (for ``skills show`` and the later
    ``skill.read``).

    Raises:
        SkillImportError: ``SKILL_NOT_FOUND`` — no such file, or its blob is missing.
    """
    for file in version.files:
        if file.path == path:
            blob = blob_rows.get_blob(store, file.sha256)
            if blob is not None and not blob.chunk_size:
                return blob.content
            if blob is not None and blob.chunk_size:
                parts = [blob_rows.chunk(store, file.sha256, i)
                         for i in range(-(-file.size // blob.chunk_size))]
                if all(p is not None for p in parts):
                    return b"".join(p for p in parts if p is not None)
            break
    raise SkillImportError(NOT_FOUND, f"skill {version.name!r} ({version.digest[:12]}) has no "
                           f"stored file {path!r}")
