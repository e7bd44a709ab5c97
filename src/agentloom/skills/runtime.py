"""Skills at run time (000 §6.1): what a role may use, bound to stored versions when a release
is built, listed in its system prompt, read on demand and mounted read-only for ``exec``.

::

    release build ─► role_versions(store, names)      current version digest of each name
                  ─► skill_listing(versions)          name + description + entry, no body
                  ─► narrowed_keys(keys, versions)    allowed-tools ∩ / disallowed-tools −
    Kernel.skills (SkillBindings) ─► skill.list / skill.read (skills.tools)
                                  ─► mounts_for(role): <root>/system/skills/<digest>/ at
                                     /skills/<name> (written once per version, read-only)

Owns: the binding of roles to versions, the listing text, the tool narrowing rule and the
materialised folders. Does not own: the tools' catalog entries and handlers
(``skills.tools``), the sandbox's mounts (``sandbox``), the import (``skills.service``).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from agentloom.skills.errors import NOT_FOUND, SkillImportError
from agentloom.skills.manifest import ENTRY
from agentloom.skills.versions import SkillVersion, file_bytes, get_version
from agentloom.store import skills as skill_rows
from agentloom.store.ports import Store

__all__ = ["CACHE_FOLDER", "MOUNT_ROOT", "SKILL_TOOLS", "SkillBindings", "model_visible",
           "narrowed_keys", "role_versions", "skill_listing"]

SKILL_TOOLS = ("skill.list", "skill.read")
"""The capability keys of the two skill tools (model names ``skill_list``, ``skill_read``)."""
MOUNT_ROOT = "/skills"
CACHE_FOLDER = ("system", "skills")
"""Below the workspace root: one read-only folder per materialised version digest."""

# Claude Code's tool names in allowed-tools / disallowed-tools, as AgentLoom capability keys.
_CLAUDE_TOOLS = {"Read": ("fs.read",), "Write": ("fs.write",), "Edit": ("fs.edit",),
                 "MultiEdit": ("fs.edit",), "Bash": ("exec",), "Glob": ("fs.glob",),
                 "Grep": ("fs.grep",)}


def model_visible(version: SkillVersion) -> bool:
    """Whether the model may see and use ``version`` (``disable-model-invocation`` not set)."""
    return version.metadata.get("disable-model-invocation") is not True


def role_versions(store: Store, names: Sequence[str] | str) -> tuple[SkillVersion, ...]:
    """The current stored version of each skill in ``names`` (``"*"``: every imported skill),
    in the order given — the versions a release binds.

    Raises:
        SkillImportError: ``SKILL_NOT_FOUND`` naming the first skill not imported.
    """
    if names == "*":
        rows = skill_rows.skills(store)
    else:
        rows = []
        for name in names:
            row = skill_rows.get_skill(store, name)
            if row is None:
                raise SkillImportError(NOT_FOUND, f"no imported skill named {name!r}")
            rows.append(row)
    found = []
    for row in rows:
        version = get_version(store, row.digest)
        if version is None:
            raise SkillImportError(NOT_FOUND, f"skill {row.name!r}: version "
                                   f"{row.digest[:12]} is missing from the store")
        found.append(version)
    return tuple(found)


def skill_listing(versions: Iterable[SkillVersion]) -> str:
    """The system-prompt section listing the skills the model may use: a header saying where
    each entry is (``/skills/<name>/SKILL.md``), then one line of name and description each
    — never the body; ``""`` when there is none."""
    lines = [f"- {v.name}: {' '.join(v.description.split())}"
             + ("" if v.entry == ENTRY else f" (entry {v.entry})")
             for v in versions if model_visible(v)]
    if not lines:
        return ""
    return (f"Skills you may use. Each one's entry is {MOUNT_ROOT}/<name>/{ENTRY}: read it with "
            f"skill_read(name) before following it; run its scripts with exec from "
            f"{MOUNT_ROOT}/<name>/.\n" + "\n".join(lines))


def _keys(entries: object) -> set[str]:
    names = entries if isinstance(entries, list) else []
    keys: set[str] = set()
    for entry in names:
        base = str(entry).split("(", 1)[0].strip()
        keys.update(_CLAUDE_TOOLS.get(base, (base,)))
    return keys


def narrowed_keys(keys: Sequence[str], versions: Iterable[SkillVersion]) -> set[str]:
    """The tool keys of ``keys`` the role keeps: when any of its skills declares
    ``allowed-tools``, only the keys some skill allows; then none a skill disallows. The
    skill tools are always kept; nothing outside ``keys`` is ever added. Claude Code names
    (``Read``, ``Bash(git:*)`` …) count as their AgentLoom tools."""
    versions = list(versions)
    allowed = [_keys(v.metadata["allowed-tools"]) for v in versions
               if "allowed-tools" in v.metadata]
    denied = set().union(*(_keys(v.metadata.get("disallowed-tools")) for v in versions))
    kept = set(keys)
    if allowed:
        kept &= set().union(*allowed)
    kept -= denied
    return kept | (set(keys) & set(SKILL_TOOLS))


class SkillBindings:
    """Each role's skill versions in one runtime (bound once, when the release is built) and
    their files: read from the store's blobs, materialised read-only for the sandbox."""

    def __init__(self, store: Store, root: Path) -> None:
        self.store = store
        self.cache = Path(root).absolute().joinpath(*CACHE_FOLDER)
        self._roles: dict[str, dict[str, SkillVersion]] = {}
        self._lock = threading.Lock()

    def bind(self, role: str, versions: Iterable[SkillVersion]) -> None:
        self._roles[role] = {v.name: v for v in versions}

    def bound(self) -> Mapping[str, Mapping[str, str]]:
        """Role -> skill name -> version digest, for every bound role."""
        return {r: {n: v.digest for n, v in vs.items()} for r, vs in self._roles.items()}

    def visible(self, role: str | None) -> list[SkillVersion]:
        """The versions of ``role`` its model may use, in the order bound."""
        return [v for v in self._roles.get(role or "", {}).values() if model_visible(v)]

    def version(self, role: str | None, name: str) -> SkillVersion:
        """The version of skill ``name`` bound to ``role``.

        Raises:
            SkillImportError: ``SKILL_NOT_FOUND`` — not one of the role's model-visible skills.
        """
        for version in self.visible(role):
            if version.name == name:
                return version
        known = ", ".join(v.name for v in self.visible(role)) or "none"
        raise SkillImportError(NOT_FOUND, f"no skill named {name!r} for this agent; its "
                               f"skills: {known}")

    def read(self, version: SkillVersion, path: str) -> bytes:
        return file_bytes(self.store, version, path)

    def mounts_for(self, role: str | None) -> tuple[tuple[Path, str], ...]:
        """The ``(host folder, /skills/<name>)`` read-only mounts of ``role``'s model-visible
        skills, each version materialised first (once)."""
        return tuple((self.materialise(v), f"{MOUNT_ROOT}/{v.name}") for v in self.visible(role))

    def materialise(self, version: SkillVersion) -> Path:
        """The folder holding ``version``'s files (``<root>/system/skills/<digest>``), written
        once: into a temporary sibling, then renamed; files 0444 (0555 executable), folders
        0555 — readable by the sandbox uid, writable by nobody but root."""
        target = self.cache / version.digest
        if target.is_dir():
            return target
        with self._lock:
            if target.is_dir():
                return target
            self.cache.mkdir(parents=True, exist_ok=True)
            for folder in (self.cache, self.cache.parent):
                folder.chmod(folder.stat().st_mode | 0o711)
            temp = self.cache / f".{version.digest}.{os.getpid()}.tmp"
            shutil.rmtree(temp, ignore_errors=True)
            temp.mkdir(mode=0o755)
            for file in version.files:
                dest = temp / file.path
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(self.read(version, file.path))
                dest.chmod(0o555 if file.executable else 0o444)
            for walked, _, _ in os.walk(temp, topdown=False):
                Path(walked).chmod(0o555)
            temp.rename(target)
            return target
