"""The hooks a skill declares, bound only where a configuration says so (000 §6.1: "imported as
hook resources waiting to be bound, checked against the same hook schema, saved explicitly
into the agent's configuration")::

    agents:
      main:
        skills: [lint]
        hooks:
          - {skill: lint}                                # every hook 'lint' declares
          - {skill: lint, hook: "PreToolUse[0].hooks[0]"} # or one, by its id in the skill

    release build ─► skill_hook_sources(config, bound, store, root)
                       (agent, skill) -> the release's version + its materialised folder
                  ─► assembly.hooks.hook_specs: the front matter's Claude Code hooks
                     converted (hooks.claude.import_events), each command run with the
                     skill's folder as its project folder ($CLAUDE_PROJECT_DIR, the cwd)

A skill's hooks never run unless an entry binds them. Owns: finding the version and folder of
each bound skill and refusing what cannot be bound. Does not own: the conversion
(``hooks.claude``), the hook specs (``assembly.hooks``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentloom.config import Config, Problem, config_error, key_path
from agentloom.config.skills import SkillHooksConfig
from agentloom.skills.runtime import SkillBindings
from agentloom.skills.versions import SkillVersion, get_version
from agentloom.store.ports import Store

__all__ = ["SUPPORTED_EVENTS", "SkillHookSource", "skill_hook_id_prefix", "skill_hook_sources"]

SUPPORTED_EVENTS = ("PreToolUse", "PostToolUse")


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillHookSource:
    """One bound skill's hooks: its release version and the folder holding its files."""

    version: SkillVersion
    folder: Path


def skill_hook_id_prefix(agent: str, skill: str) -> str:
    """The ``hook_id`` prefix of ``agent``'s hooks bound from ``skill``:
    ``<agent>.skill.<skill>.`` (then ``<Event>[<i>].hooks[<j>]``)."""
    return f"{agent}.skill.{skill}."


def skill_hook_sources(config: Config, bound: Mapping[str, Mapping[str, str]], store: Store,
                       root: Path) -> dict[tuple[str, str], SkillHookSource]:
    """``(agent, skill) -> SkillHookSource`` for every ``{skill: …}`` entry of an agent's
    ``hooks:``, from the versions the release binds (``bound``: agent -> skill -> digest),
    each materialised below ``root`` (the workspace root, as the sandbox mounts it).

    Raises:
        ConfigError: ``CONFIG_INVALID`` naming ``agents.<a>.hooks[<i>].skill`` (every problem at
            once): the skill is not bound to the agent, declares no hooks, or declares events
            other than PreToolUse / PostToolUse.
    """
    bindings = SkillBindings(store, root)
    problems: list[Problem] = []
    found: dict[tuple[str, str], SkillHookSource] = {}
    for name, agent in config.agents.items():
        for i, entry in enumerate(agent.hooks):
            if not isinstance(entry, SkillHooksConfig):
                continue
            where = f"{key_path(('agents', name))}.hooks[{i}].skill"
            digest = bound.get(name, {}).get(entry.skill)
            version = None if digest is None else get_version(store, digest)
            if version is None:
                problems.append(Problem(where, f"skill {entry.skill!r} is not one of this "
                                        f"agent's skills; add it to {key_path(('agents', name))}"
                                        ".skills and import it"))
                continue
            if not isinstance(version.hooks, Mapping) or not version.hooks:
                problems.append(Problem(where, f"skill {entry.skill!r} (version "
                                        f"{version.digest[:12]}) declares no hooks; remove "
                                        "this entry"))
                continue
            other = [str(e) for e in version.hooks if e not in SUPPORTED_EVENTS]
            if other:
                problems.append(Problem(where, f"skill {entry.skill!r} declares hook events "
                                        f"with no AgentLoom equivalent yet: {', '.join(other)} "
                                        "(only PreToolUse and PostToolUse bind)"))
                continue
            if (name, entry.skill) not in found:
                found[(name, entry.skill)] = SkillHookSource(
                    version=version, folder=bindings.materialise(version))
    if problems:
        raise config_error(config.origin, problems)
    return found
