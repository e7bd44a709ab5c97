"""A configuration's hooks as runtime values, at build time: every agent's ``HookSpec`` (a
``{skill: …}`` entry expanded to the hooks its bound skill declares, ``kind: mcp`` handlers
checked against their server) and the Python functions its ``kind: function`` handlers name,
imported now so a bad ref fails before any run.

Owns: ``agents.<agent>.hooks`` and ``workflows.<workflow>.hooks`` to ``HookSpec``s and hook
functions. Does not own: the hooks' configured shape (``config.model``), a skill's hooks
(``assembly.skill_hooks``), an MCP handler's server (``assembly.mcp``), running hooks (``agentloom.hooks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentloom.assembly.imports import import_ref
from agentloom.assembly.mcp import with_servers
from agentloom.assembly.skill_hooks import skill_hook_sources, skill_hooks
from agentloom.config import Config
from agentloom.config.hooks import configured_hooks
from agentloom.config.model import HandlerConfig, HookConfig
from agentloom.config.skills import SkillHooksConfig
from agentloom.errors import ConfigError
from agentloom.hooks.handlers import handler_spec
from agentloom.hooks.spec import HookMatch, HookSpec

__all__ = ["hook_functions", "hook_specs"]


def hook_specs(config: Config, skills: Mapping[str, Mapping[str, str]] | None = None, *,
               store: str | None = None) -> tuple[HookSpec, ...]:
    """Every agent's hooks, then every workflow's, in file order. ``match.role`` defaults to
    the agent's name (the hook applies to that agent's calls only) or, for a workflow's hook,
    to ``workflow:<name>`` (its own calls: delegations to agent nodes, capability nodes,
    waits); ``role: "*"`` matches every role. A ``{skill: …}`` entry stands for the hooks the
    skill declares in the version the release binds (``skills``: agent -> skill -> digest,
    read from the ``store`` URL), converted from Claude Code's shape, their commands run in
    the skill's materialised folder.

    Raises:
        ConfigError: a ``{skill: …}`` entry whose skill is not bound to the agent, declares no
            hooks, whose hooks do not convert, or whose ``hook`` id it does not declare
            (naming the key).
    """
    sources = skill_hook_sources(config, skills or {}, store)
    specs: list[HookSpec] = []
    for item in configured_hooks(config):
        hook = item.entry
        if isinstance(hook, SkillHooksConfig):
            specs.extend(_hook_spec(item.role, h, h.hook_id or item.where, folder)
                         for h, folder in skill_hooks(item.owner, hook, sources, item.where))
            continue
        specs.append(_hook_spec(item.role, hook, hook.hook_id or item.default_id,
                                config.base_dir))
    return with_servers(config, tuple(specs))


def _hook_spec(default_role: str, hook: HookConfig, hook_id: str, base_dir: Path) -> HookSpec:
    role = hook.match.role
    return HookSpec(
        hook_id=hook_id, timing=hook.timing, event=hook.event,
        match=HookMatch(role=default_role if role is None else (None if role == "*" else role),
                        capability=hook.match.capability, purpose=hook.match.purpose,
                        status=hook.match.status, node=hook.match.node),
        handler=handler_spec(hook.handler, base_dir), timeout_s=hook.hook_timeout_s,
        on_failure=hook.on_failure)


def hook_functions(config: Config) -> dict[str, Callable[..., Any]]:
    """Every hook handler imported now, by ref (for ``Kernel(hook_functions=…)``), so a bad ref
    fails before any run and a module beside the config file is found.

    Raises:
        ConfigError: a module does not import, lacks the attribute, or it is not callable; the
            message names ``agents.<agent>.hooks[<i>].handler.ref`` (``workflows.…``).
    """
    functions: dict[str, Callable[..., Any]] = {}
    for item in configured_hooks(config):
        hook = item.entry
        if isinstance(hook, SkillHooksConfig) or not isinstance(hook.handler, HandlerConfig):
            continue  # command / http, a skill's (command) hooks: nothing to import
        ref = hook.handler.ref
        if ref in functions:
            continue
        where = f"{item.where}.handler.ref"
        target = import_ref(ref, where, config.base_dir)
        if not callable(target):
            raise ConfigError(f"{where}: {ref!r} is a {type(target).__name__}, not a function",
                              code="CONFIG_IMPORT")
        functions[ref] = target
    return functions
