"""The ``skills:`` sources of a configuration imported, and its agents' skill names checked.

Owns: turning ``Config.skills`` into imports and ``AgentConfig.skills`` into the versions each
agent may use (``AgentSkillSet``) — what the run-time listing, ``skill.read`` and the
``/skills`` mounts will be built from; binding them to the current stored versions when a
release is built (``release_skills``). Does not own: the run-time use itself (``runtime``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentloom.config import Config, Problem, config_error, did_you_mean, key_path
from agentloom.skills.errors import SkillImportError
from agentloom.skills.limits import DEFAULT_LIMITS, ImportLimits
from agentloom.skills.runtime import role_versions
from agentloom.skills.service import ImportReport, SourceSpec, import_skills
from agentloom.skills.versions import SkillVersion
from agentloom.store.ports import Store

__all__ = ["AgentSkillSet", "agent_skills", "import_configured", "release_skills"]


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
                                        "skills import --config <this file>"))
        if found:
            bound[name] = tuple(found)
    if problems:
        raise config_error(config.origin, problems)
    return {name: versions for name, versions in bound.items() if versions}
