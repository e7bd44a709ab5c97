"""The ``skills:`` sources of a configuration imported, and its agents' skill names checked.

Owns: turning ``Config.skills`` into imports and ``AgentConfig.skills`` into the versions each
agent may use (``AgentSkillSet``) — what the run-time listing, ``skill.read`` and the
``/skills`` mounts will be built from; the ``path`` sources whose content changed imported
before a run (``import_changed_paths``, what ``agentloom run`` calls); binding them to the
current stored versions when a release is built (``release_skills``). Does not own: the
run-time use itself (``runtime``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from agentloom.config import Config, Problem, config_error, did_you_mean, key_path
from agentloom.skills.errors import SkillImportError
from agentloom.skills.limits import DEFAULT_LIMITS, ImportLimits
from agentloom.skills.runtime import role_versions
from agentloom.skills.service import ImportReport, SourceSpec, import_skills
from agentloom.skills.versions import SkillVersion, list_skills
from agentloom.store.ports import Store

__all__ = ["AgentSkillSet", "ChangedSkill", "agent_skills", "import_changed_paths",
           "import_configured", "release_skills"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSkillSet:
    """The skill versions one agent may use, by name (pinned by digest)."""

    agent: str
    versions: tuple[SkillVersion, ...]


def import_configured(config: Config, store: Store, *, allow_unknown: bool = False,
                      limits: ImportLimits = DEFAULT_LIMITS) -> list[ImportReport]:
    """Import every source of ``config.skills`` (a path read from the config's folder) and
    check every agent's ``skills:`` names against what they hold.

    Raises:
        SkillImportError: a source refused (earlier sources stay imported).
        ConfigError: an agent names a skill none of the sources holds.
    """
    reports = []
    for entry in config.skills:
        if entry.git is not None:
            spec = SourceSpec(git=entry.git, commit=entry.commit, subdir=entry.subdir)
        else:
            assert entry.path is not None
            spec = SourceSpec(path=config.resolve_path(entry.path), subdir=entry.subdir)
        reports.append(import_skills(spec, store, allow_unknown=allow_unknown, limits=limits))
    agent_skills(config, {s.version.name: s.version for r in reports for s in r.skills})
    return reports


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangedSkill:
    """A skill of a ``path`` source whose current version ``import_changed_paths`` changed:
    ``new`` content (a new version), or ``earlier`` content (a version imported before, current
    again). ``source`` is the config's ``path`` with the skill's folder (``./skills/pdf``)."""

    name: str
    digest: str
    change: Literal["new", "earlier"]
    source: str


def import_changed_paths(config: Config, store: Store, *,
                         limits: ImportLimits = DEFAULT_LIMITS) -> list[ChangedSkill]:
    """Import every ``path`` source of ``config.skills`` whose content changed since it was
    last imported, as ``agentloom skills import`` does (the same checks, the same
    content-addressed versions); a skill whose content is already stored is that version (not
    checked again, nothing written when it is current). ``git`` sources are left to
    ``agentloom skills import``. Agents' names are checked when the release is built
    (``release_skills``).

    Raises:
        SkillImportError: a source refused, its message led by ``skills[i] (<path>)``
            (earlier sources stay imported).
    """
    before = {v.name: v.digest for v in list_skills(store)}
    changed: list[ChangedSkill] = []
    for i, entry in enumerate(config.skills):
        if entry.path is None:
            continue
        spec = SourceSpec(path=config.resolve_path(entry.path), subdir=entry.subdir)
        try:
            report = import_skills(spec, store, limits=limits, known_as_stored=True)
        except SkillImportError as exc:
            raise SkillImportError(exc.code, f"skills[{i}] ({entry.path}): "
                                   f"{exc.error.message}") from None
        for item in report.skills:
            v = item.version
            if item.status == "unchanged" and before.get(v.name) in (None, v.digest):
                continue
            before[v.name] = v.digest
            folder = entry.path.rstrip("/") + (f"/{v.source.folder}" if v.source.folder else "")
            changed.append(ChangedSkill(name=v.name, digest=v.digest, source=folder,
                                        change="new" if item.status == "new" else "earlier"))
    return changed


def agent_skills(config: Config, imported: dict[str, SkillVersion]) -> list[AgentSkillSet]:
    """Each agent's skills among ``imported`` (name -> version).

    Raises:
        ConfigError: naming ``agents.<name>.skills[i]`` for a skill not imported.
    """
    problems = []
    sets = []
    for name, agent in config.agents.items():
        if agent.skills == "*":
            sets.append(AgentSkillSet(agent=name, versions=tuple(imported.values())))
            continue
        for i, skill in enumerate(agent.skills):
            if skill not in imported:
                problems.append(Problem(f"{key_path(('agents', name))}.skills[{i}]",
                                        f"no imported skill named {skill!r}; "
                                        f"{did_you_mean(skill, list(imported))}imported: "
                                        f"{', '.join(imported) or 'none (add a source under skills)'}"))
        sets.append(AgentSkillSet(agent=name, versions=tuple(
            imported[s] for s in agent.skills if s in imported)))
    if problems:
        raise config_error(config.origin, problems)
    return sets


def release_skills(config: Config, store: Store) -> dict[str, tuple[SkillVersion, ...]]:
    """Each agent's skills bound to their current stored versions (``skills`` table), for a
    release being built; agents without skills are left out. Nothing is imported here:
    ``agentloom skills import --config`` does that.

    Raises:
        ConfigError: naming ``agents.<name>.skills[i]`` for a skill not imported (every such
            skill at once).
    """
    problems = []
    bound: dict[str, tuple[SkillVersion, ...]] = {}
    for name, agent in config.agents.items():
        if agent.skills == "*":
            bound[name] = role_versions(store, "*")
            continue
        found: list[SkillVersion] = []
        for i, skill in enumerate(agent.skills):
            try:
                found.extend(role_versions(store, [skill]))
            except SkillImportError as exc:
                problems.append(Problem(f"{key_path(('agents', name))}.skills[{i}]",
                                        f"{exc.error.message}; import it first: agentloom "
                                        f"skills import --config {_shown_path(config)}"))
        if found:
            bound[name] = tuple(found)
    if problems:
        raise config_error(config.origin, problems)
    return {name: versions for name, versions in bound.items() if versions}


def _shown_path(config: Config) -> str:
    """The config file as the user named it, quoted for a shell (``CONFIG`` for a config
    that was not read from a file)."""
    return shlex.quote(config.origin) if not config.origin.startswith("<") else "CONFIG"
