"""The import pipeline: one source in, one immutable version per skill found.

::

    source ─► private staging folder (every member checked: _folder / _archive / _git)
           ─► skill folders: each folder holding a SKILL.md (the nearest one going down)
           ─► links resolved inside their skill folder ─► SKILL.md front matter (manifest)
           ─► content digest ─► store (versions) ─► ImportReport

Every skill of the source is checked before the first is stored: a refusal stores nothing.
The staging folder is deleted whatever happens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from agentloom.skills._archive import archive_stem, is_archive, stage_archive
from agentloom.skills._folder import stage_folder
from agentloom.skills._git import _SCP, is_git_url, stage_git
from agentloom.skills._staging import Staging, member_path, staging
from agentloom.skills.errors import (
    COMMIT_INVALID,
    MANIFEST_INVALID,
    NOT_FOUND,
    SOURCE_INVALID,
    SkillImportError,
)
from agentloom.skills.limits import DEFAULT_LIMITS, ImportLimits
from agentloom.skills.manifest import ENTRY, Manifest, parse_manifest
from agentloom.skills.versions import (
    SkillSource,
    SkillVersion,
    get_version,
    store_version,
    version_digest,
)
from agentloom.store.ports import Store

__all__ = ["ImportReport", "ImportedSkill", "SourceSpec", "import_skills"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSpec:
    """What to import: a local ``path`` (a folder or an archive) or a ``git`` URL with its
    pinned ``commit``; ``subdir`` narrows either to a folder inside it."""

    path: Path | None = None
    git: str | None = None
    commit: str | None = None
    subdir: str | None = None

    @classmethod
    def parse(cls, source: str, *, commit: str | None = None, subdir: str | None = None,
              base_dir: Path | None = None) -> SourceSpec:
        """``SOURCE`` of ``agentloom skills import``: a git URL (``--commit`` required) or a
        path (read from ``base_dir``, default the current folder)."""
        if is_git_url(source):
            if commit is None:
                raise SkillImportError(COMMIT_INVALID, "a git source needs --commit: the full "
                                       "40-hex commit to import")
            return cls(git=source, commit=commit, subdir=subdir)
        if commit is not None:
            raise SkillImportError(SOURCE_INVALID, f"--commit is for a git URL; {source!r} is a "
                                   "local path")
        path = Path(source).expanduser()
        return cls(path=path if path.is_absolute() or base_dir is None else base_dir / path,
                   subdir=subdir)


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedSkill:
    """One skill of an import: its version and whether that version is ``new`` or was
    already stored (``unchanged``)."""

    version: SkillVersion
    status: Literal["new", "unchanged"]

    def to_dict(self) -> dict[str, Any]:
        v = self.version
        return {"name": v.name, "digest": v.digest, "status": self.status,
                "description": v.description, "folder": v.source.folder,
                "files": len(v.files), "warnings": list(v.warnings),
                "unsupported": list(v.unsupported), "hooks": v.hooks is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportReport:
    """What one import did: each skill found, and what was skipped (submodules)."""

    source: SkillSource
    skills: tuple[ImportedSkill, ...]
    skipped: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        source = {k: v for k, v in {"kind": self.source.kind, "location": self.source.location,
                                    "commit": self.source.commit,
                                    "subdir": self.source.subdir}.items() if v is not None}
        return {"source": source, "skills": [s.to_dict() for s in self.skills],
                "skipped": list(self.skipped)}


def import_skills(spec: SourceSpec, store: Store, *, allow_unknown: bool = False,
                  limits: ImportLimits = DEFAULT_LIMITS,
                  staging_parent: Path | None = None,
                  known_as_stored: bool = False) -> ImportReport:
    """Import every skill of ``spec`` into ``store`` (see the module docstring).

    ``staging_parent`` is where the private staging folder is made (default: the system's
    temporary folder). ``known_as_stored``: a skill folder whose content is already a stored
    version of its name is that version, its front matter not read again (it passed when it
    was imported, maybe with ``allow_unknown``) — what ``agentloom run`` imports with; every
    member is still checked.

    Raises:
        SkillImportError: the source or one of its members or skills is refused; nothing
            is stored then.
        StoreError: a commit failed.
    """
    with staging(limits, parent=staging_parent) as staged:
        source, root_name = _stage(spec, staged)
        if spec.subdir and spec.git is None:
            prefix = member_path(spec.subdir, limits)
            if prefix not in staged.folders:
                raise SkillImportError(SOURCE_INVALID, f"subdir {spec.subdir!r} is not a folder "
                                       "of the source")
            staged.discard(prefix)
        else:
            prefix = ""
        dirs = _skill_dirs(staged, prefix)
        if not dirs:
            raise SkillImportError(NOT_FOUND, f"no {ENTRY} found in {source.location}"
                                   f"{' subdir ' + repr(spec.subdir) if spec.subdir else ''}")
        staged.resolve_links(dirs)
        found = [_version(staged, d, prefix, root_name, source, allow_unknown,
                          store if known_as_stored else None) for d in dirs]
        _unique(found)
        imported = []
        for version, folder in found:
            new = store_version(store, version, staged.root / folder if folder else staged.root)
            imported.append(ImportedSkill(version=version, status="new" if new else "unchanged"))
        return ImportReport(source=source, skills=tuple(imported), skipped=tuple(staged.skipped))


def _stage(spec: SourceSpec, staged: Staging) -> tuple[SkillSource, str]:
    if spec.git is not None:
        if spec.path is not None or spec.commit is None:
            raise SkillImportError(SOURCE_INVALID, "a git source needs a commit and no path")
        stage_git(spec.git, spec.commit, spec.subdir, staged)
        name = (spec.subdir or urlsplit(spec.git).path or spec.git).rstrip("/").rsplit("/", 1)[-1]
        return (SkillSource(kind="git", location=_without_password(spec.git), commit=spec.commit,
                            subdir=spec.subdir), name.removesuffix(".git"))
    if spec.path is None:
        raise SkillImportError(SOURCE_INVALID, "a source needs a path or a git URL")
    path = spec.path.resolve()
    if is_archive(path):
        stage_archive(path, staged)
        return SkillSource(kind="archive", location=str(path), subdir=spec.subdir), \
            archive_stem(path)
    if not path.exists():
        raise SkillImportError(SOURCE_INVALID, f"no folder or archive at {str(path)!r}")
    if path.is_file():
        raise SkillImportError(SOURCE_INVALID, f"{str(path)!r} is a file but not an archive "
                               "(.zip, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz)")
    stage_folder(path, staged)
    return SkillSource(kind="folder", location=str(path), subdir=spec.subdir), path.name


def _without_password(url: str) -> str:
    if _SCP.match(url):
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}" if user else netloc))


def _skill_dirs(staged: Staging, prefix: str) -> list[str]:
    """Folders holding a ``SKILL.md`` file, outermost first; one inside a skill folder is a
    file of that skill, not a skill of its own."""
    candidates = sorted(p[: -len(ENTRY)].rstrip("/") for p in staged.files
                        if p == ENTRY or p.endswith("/" + ENTRY))
    dirs: list[str] = []
    for d in candidates:
        if prefix and not (d == prefix or d.startswith(prefix + "/")):
            continue
        if not any(d == o or o == "" or d.startswith(o + "/") for o in dirs):
            dirs.append(d)
    return dirs


def _version(staged: Staging, folder: str, prefix: str, root_name: str, source: SkillSource,
             allow_unknown: bool, known: Store | None) -> tuple[SkillVersion, str]:
    inside = {p[len(folder) + 1:] if folder else p: x for p, x in staged.files.items()
              if not folder or p.startswith(folder + "/")}
    root = staged.root / folder if folder else staged.root
    shown = folder or root_name
    own = SkillSource(kind=source.kind, location=source.location, commit=source.commit,
                      subdir=source.subdir, folder=folder)
    name = folder.rsplit("/", 1)[-1] if folder else root_name
    digest, files = version_digest(root, inside)
    if known is not None:
        stored = get_version(known, digest)
        if stored is not None and stored.name == name:
            return replace(stored, source=own), folder
    try:
        text = (root / ENTRY).read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SkillImportError(MANIFEST_INVALID, f"{shown}/{ENTRY} is not UTF-8 text") from None
    manifest: Manifest = parse_manifest(text, folder=shown, folder_name=name,
                                        allow_unknown=allow_unknown)
    version = SkillVersion(digest=digest, name=manifest.name, description=manifest.description,
                           source=own, files=files, metadata=manifest.metadata,
                           hooks=manifest.hooks, unsupported=manifest.unsupported,
                           warnings=manifest.warnings, created_at=time.time())
    return version, folder


def _unique(found: list[tuple[SkillVersion, str]]) -> None:
    seen: dict[str, str] = {}
    for version, folder in found:
        if version.name in seen:
            raise SkillImportError(MANIFEST_INVALID, f"two skills named {version.name!r} in one "
                                   f"source ({seen[version.name]!r} and {folder!r}); rename one")
        seen[version.name] = folder
