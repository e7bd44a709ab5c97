"""The hooks a skill declares, bound by an agent's ``{skill: …}`` hooks entry, as hook
configurations (docs/skills.md#a-skills-hooks)::

    {skill: lint[, hook: "PreToolUse[0].hooks[0]"]}
      ─► the release's version of 'lint' and its materialised folder  (skills.hooks)
      ─► its front-matter hooks converted (hooks.claude.import_events)
      ─► HookConfig entries, ids <agent>.skill.lint.<Event>[<i>].hooks[<j>], whose commands
         run with the skill's folder as their project folder  (assembly.hooks.hook_specs)

Owns: the conversion of a bound skill's hooks. Does not own: finding the version and folder
(``skills.hooks``), the hook specs (``assembly.hooks``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from agentloom.config import Config
from agentloom.config.model import HookConfig
from agentloom.config.skills import SkillHooksConfig
from agentloom.errors import ConfigError
from agentloom.hooks.claude import ClaudeImportError, import_events
from agentloom.sandbox.reach import workspace_root_for
from agentloom.skills.hooks import SkillHookSource, skill_hook_id_prefix
from agentloom.skills.hooks import skill_hook_sources as sources_in_store
from agentloom.store import open_store

__all__ = ["skill_hook_sources", "skill_hooks"]


def skill_hook_sources(config: Config, bound: Mapping[str, Mapping[str, str]],
                       url: str | None) -> Mapping[tuple[str, str], SkillHookSource]:
    """``skills.hooks.skill_hook_sources`` read from the store at ``url`` (opened only when an
    agent has a ``{skill: …}`` hooks entry): the version and folder of each bound skill.

    Raises:
        ConfigError: as ``skills.hooks.skill_hook_sources``.
    """
    if url is None or not any(isinstance(h, SkillHooksConfig)
                              for a in config.agents.values() for h in a.hooks):
        return {}
    store = open_store(url)
    try:
        root = workspace_root_for(config.workspace_root(),
                                  confined=config.sandbox.backend != "none")
        return sources_in_store(config, bound, store, root)
    finally:
        store.close()


def skill_hooks(agent: str, entry: SkillHooksConfig,
                skills: Mapping[tuple[str, str], SkillHookSource] | None,
                where: str) -> list[tuple[HookConfig, Path]]:
    """The hooks ``entry`` (at key ``where``) binds, each with the skill's folder (its
    commands' project folder), converted as ``agentloom hooks import-claude`` converts them.

    Raises:
        ConfigError: the skill is not in ``skills``, its hooks do not convert, or it declares
            no hook ``entry.hook``.
    """
    source = (skills or {}).get((agent, entry.skill))
    if source is None:
        raise ConfigError(f"{where}.skill: skill {entry.skill!r} is not bound to this agent's "
                          "release", code="CONFIG_INVALID")
    prefix = skill_hook_id_prefix(agent, entry.skill)
    try:
        converted = import_events(source.version.hooks, project=source.folder, id_prefix=prefix)
        hooks = [HookConfig.model_validate(h) for h in converted]
    except (ClaudeImportError, ValidationError) as exc:
        why = exc.error.message if isinstance(exc, ClaudeImportError) else str(exc)
        raise ConfigError(f"{where}.skill: the hooks of skill {entry.skill!r} do not convert: "
                          f"{why}", code="CONFIG_INVALID") from None
    if entry.hook is not None:
        wanted = prefix + entry.hook
        hooks = [h for h in hooks if h.hook_id == wanted or str(h.hook_id).startswith(
            wanted + ".")]
        if not hooks:
            known = sorted({re.sub(r"(\.hooks\[\d+\]).*", r"\1",
                                   str(c["hook_id"]).removeprefix(prefix)) for c in converted})
            raise ConfigError(f"{where}.hook: skill {entry.skill!r} declares no hook "
                              f"{entry.hook!r}; its hooks: {', '.join(known)}",
                              code="CONFIG_INVALID")
    return [(h, source.folder) for h in hooks]
