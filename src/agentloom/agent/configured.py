"""A ``Runtime`` built from a YAML configuration (``agentloom.config``).

::

    config = load_config("agentloom.yaml")
    runtime = runtime_from_config(config)            # store: AGENTLOOM_STORE or beside the file
    result = await runtime.run("list the files", agent="main")

Everything a configuration names is resolved *here*, before any run starts: each agent's model
(``config_parts.model_source``), its tools (built-in names, the ``module:attr`` SDK tools and the
``mcp.<server>.<tool>`` tools of the MCP servers, listed now: ``config_mcp``),
its skills (bound to their current stored versions: ``skills.configured.release_skills``;
listed in its instructions, narrowing its tools, adding ``skill.list`` / ``skill.read``),
its executors, retry policy, limits, instructions, context window W and output reserve O
(``config_parts.model_descriptor``: configured, documented by the preset, or read from the
provider's model listing — an agent whose window nobody knows is refused); the hooks
and the Python functions they name; the workspace root; the sandbox backend and policy; the
store. The checks that need the provider presets or the script parser run first
(``config_parts.check_config``). A bad reference is a ``ConfigError`` naming its key, never a
failure in the middle of a run.

The config file's folder is put first on ``sys.path`` (as Python does for a script's folder)
and stays there: ``module:function`` hooks and ``module:attr`` tools written beside the config
are importable, and so is anything they import later, while the runtime runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentloom.agent.config_a2a import a2a_catalog
from agentloom.agent.config_commands import BoundCommands, bind_commands, command_tools
from agentloom.agent.config_mcp import mcp_catalog
from agentloom.agent.config_parts import (
    agent_tools,
    check_config,
    hook_functions,
    hook_specs,
    max_output_tokens,
    model_descriptor,
    model_source,
    retry_policy,
    think_params,
    workflow_tools,
)
from agentloom.agent.config_routes import ConfigRoutes
from agentloom.agent.failures import RecoveryPolicy
from agentloom.agent.leases import WorkerSettings
from agentloom.agent.output import OutputSpec
from agentloom.agent.programs import RunProgram
from agentloom.agent.runtime import Runtime
from agentloom.agent.spec import AgentSpec, AgentTool, Limits, tool_key
from agentloom.catalog import CapabilitySpec
from agentloom.config import Config, Problem, config_error, key_path
from agentloom.errors import ConfigError
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.sandbox.ports import EnvironmentPolicy, SandboxBackend
from agentloom.skills.configured import release_skills
from agentloom.skills.runtime import SKILL_TOOLS, narrowed_keys, skill_listing
from agentloom.skills.versions import SkillVersion, get_version
from agentloom.store import open_store

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpTool

__all__ = ["STORE_ENV", "BuildCatalogs", "ProgramsFactory", "agent_specs", "build_catalogs",
           "environment_policy", "runtime_from_config", "store_url_for"]

STORE_ENV = "AGENTLOOM_STORE"
"""The environment variable naming the store URL when ``store`` is not given."""


def store_url_for(config: Config, store: str | None = None) -> str:
    """The store URL: ``store``, else ``$AGENTLOOM_STORE``, else ``config.default_store_url()``
    (SQLite in ``.agentloom/`` beside the config file)."""
    return store or os.environ.get(STORE_ENV) or config.default_store_url()


@dataclass(frozen=True, slots=True)
class BuildCatalogs:
    """What a configuration's tool entries resolve against, listed once at build time: the
    MCP servers' tools, the remote A2A agents, the ``command.<id>`` tools (``None``: left
    out)."""

    mcp: list[McpTool]
    remote: dict[str, A2aAgent]
    exposed: dict[str, tuple[CapabilitySpec, CapabilityHandler]] | None


def build_catalogs(config: Config, *, sandbox_backend: SandboxBackend | None = None,
                   store: str | None = None,
                   commands: BoundCommands | None = None) -> BuildCatalogs:
    """``check_config``, then list every MCP server, remote agent and command tool that some
    agent's ``tools`` or workflow's capability node names (raises as ``agent_specs``)."""
    check_config(config)
    # the MCP servers agents name are listed now: their tools are this release's catalog
    mcp = mcp_catalog(config, backend=sandbox_backend or config.sandbox.backend,
                      policy=environment_policy(config), store=store)  # store: OAuth grants
    remote = a2a_catalog(config)  # the A2A agents listed: their cards fetched and checked now
    exposed: dict[str, tuple[CapabilitySpec, CapabilityHandler]] | None = \
        dict(command_tools(config, commands)) if commands is not None else None
    return BuildCatalogs(mcp, remote, exposed)


def agent_specs(config: Config, *, sandbox_backend: SandboxBackend | None = None,
                store: str | None = None,
                commands: BoundCommands | None = None,
                catalogs: BuildCatalogs | None = None) -> list[AgentSpec]:
    """One ``AgentSpec`` per configured agent, in file order, after ``check_config``.
    ``commands``: what the ``command.<id>`` tools submit to once bound (``config_commands``;
    without it those entries are left out).

    Raises:
        ConfigError: a problem only the presets or the script parser see (``check_config``),
            a model's API key variable is unset, or a ``module:attr`` tool does not import; the
            message names the key. ``CONFIG_INVALID`` (every agent's at once) when an agent's
            window is unknown or wider than what is known: ``agents.<agent>.model.window``.
            An MCP server an agent names that cannot be listed (``mcp_servers.<server>``, its
            MCP or sandbox code), or a tool it does not list (``MCP_TOOL_NOT_LISTED``).
    """
    if catalogs is None:
        catalogs = build_catalogs(config, sandbox_backend=sandbox_backend, store=store,
                                  commands=commands)
    mcp, remote, exposed = catalogs.mcp, catalogs.remote, catalogs.exposed
    skills = _release_skills(config, store_url_for(config, store))
    specs: list[AgentSpec] = []
    problems: list[Problem] = []
    for name, agent in config.agents.items():
        versions = skills.get(name, ())
        limits = agent.limits
        model = model_source(config, name)
        try:
            descriptor = model_descriptor(config, name, model)
        except ConfigError as exc:
            key = "output_limit" if exc.code == "MODEL_OUTPUT_LIMIT_INVALID" else "window"
            problems.append(Problem(f"{key_path(('agents', name, 'model'))}.{key}", exc.error.message))
            continue
        specs.append(AgentSpec(
            name=name,
            model=model,
            instructions="\n\n".join(p for p in (agent.instructions, skill_listing(versions)) if p),
            tools=_with_skills(agent_tools(config, name, mcp, remote, exposed), versions),
            executors=tuple(agent.executors),
            retry=retry_policy(agent),
            limits=Limits(
                run_deadline_s=limits.run_deadline_s,
                first_output_timeout_s=limits.first_output_timeout_s,
                stream_idle_timeout_s=limits.stream_idle_timeout_s,
                batch_concurrency=limits.batch_concurrency,
                max_steps=limits.max_steps,
                max_total_tokens=limits.max_total_tokens,
                max_tool_errors=limits.max_tool_errors,
                approval_timeout_s=limits.approval_timeout_s,
                approval_default=limits.approval_default,
            ),
            window=descriptor.window,
            output_limit=descriptor.output_limit,
            descriptor=descriptor,
            think=think_params(agent),
            max_output_tokens=max_output_tokens(agent),
            description=agent.description,
            output=None if agent.output is None else OutputSpec(
                schema=agent.output.schema_, name=agent.output.name, strict=agent.output.strict),
            extras={"skills": {v.name: v.digest for v in versions}} if versions else {},
        ))
    if problems:
        raise config_error(config.origin, problems)
    return specs


def _release_skills(config: Config, url: str) -> dict[str, tuple[SkillVersion, ...]]:
    """Each agent's skills at their current stored versions (none: the store is not opened)."""
    if not any(agent.skills for agent in config.agents.values()):
        return {}
    store = open_store(url)
    try:
        return release_skills(config, store)
    finally:
        store.close()


def _with_skills(tools: list[AgentTool], versions: tuple[SkillVersion, ...],
                 ) -> tuple[AgentTool, ...]:
    """The agent's tools narrowed by its skills' ``allowed-tools`` / ``disallowed-tools``, plus
    ``skill.list`` and ``skill.read`` when it has skills."""
    if not versions:
        return tuple(tools)
    keys = [tool_key(t) for t in tools]
    kept = narrowed_keys(keys, versions)
    narrowed = [t for t, k in zip(tools, keys, strict=True) if k in kept]
    return (*narrowed, *(k for k in SKILL_TOOLS if k not in keys))


def bind_skills(runtime: Runtime, specs: list[AgentSpec]) -> None:
    """Give the runtime each agent's bound skill versions (``AgentSpec.extras["skills"]``,
    name -> digest): what ``skill.list`` / ``skill.read`` serve and ``exec`` mounts."""
    for spec in specs:
        digests = spec.extras.get("skills") or {}
        versions = [get_version(runtime.store, d) for d in digests.values()]
        runtime.kernel.skills.bind(spec.name, [v for v in versions if v is not None])


def environment_policy(config: Config) -> EnvironmentPolicy:
    """The sandbox policy of ``sandbox:`` (env allow-list, egress, shell, timeout, rlimits);
    what the key leaves out keeps ``EnvironmentPolicy``'s default."""
    sandbox = config.sandbox
    return EnvironmentPolicy(
        env=sandbox.env, egress=sandbox.egress, allow_shell=sandbox.allow_shell,
        default_timeout_s=sandbox.timeout_s, max_processes=sandbox.max_processes,
        max_file_bytes=sandbox.max_file_bytes, max_cpu_s=sandbox.max_cpu_s,
        max_work_bytes=sandbox.max_work_bytes)


ProgramsFactory = Callable[[Config, Callable[[str], dict[str, AgentTool]]], Sequence[RunProgram]]
"""Builds the programs (workflows) of a configuration, given what each workflow's capability
nodes resolve to by workflow name, by entry (``config_parts.workflow_tools``):
``squad.configured``."""


def runtime_from_config(
    config: Config, *, store: str | None = None, sandbox_backend: SandboxBackend | None = None,
    programs: ProgramsFactory | None = None,
) -> Runtime:
    """The runtime a configuration describes.

    ``store`` overrides the store URL (see ``store_url_for``); the default SQLite file's
    ``.agentloom/`` folder is created. ``sandbox_backend`` overrides ``sandbox.backend``.
    ``programs`` builds its workflows (``agentloom.squad.configured.runtime_from_config``
    passes it); without it ``workflows:`` is left out.

    Raises:
        ConfigError: anything the configuration names cannot be resolved (the message names
            the key), or the store URL is not supported.
    """
    _importable(config.base_dir)
    url = store_url_for(config, store)  # the SQLite store makes its own folders (0711)
    bound = BoundCommands()
    catalogs = build_catalogs(config, sandbox_backend=sandbox_backend, store=url, commands=bound)
    specs = agent_specs(config, sandbox_backend=sandbox_backend, store=url, commands=bound,
                        catalogs=catalogs)
    built = programs(config, lambda name: workflow_tools(
        config, name, catalogs.mcp, catalogs.remote, catalogs.exposed)) if programs else ()
    hooks = hook_specs(config, {s.name: s.extras.get("skills") or {} for s in specs}, store=url)
    functions = hook_functions(config)
    runtime = Runtime(specs, store=url, hooks=hooks, hook_functions=functions,
                   workspace_root=config.workspace_root(),
                   sandbox_backend=sandbox_backend or config.sandbox.backend,
                   sandbox_policy=environment_policy(config),
                   config_source=config.source(),
                   workdir=config.resolve_path(config.workspace.bind)
                   if config.workspace.bind else None,
                   keep_workspaces=config.workspace.keep,
                   recovery=RecoveryPolicy(max_failures=config.recovery.max_failures,
                                           backoff_s=config.recovery.backoff_s,
                                           max_backoff_s=config.recovery.max_backoff_s),
                   telemetry=config.telemetry.enabled,
                   model_routes=ConfigRoutes(config) if config.projects else None,
                   workers=WorkerSettings(
                       lease_ttl_s=config.workers.lease_ttl_s,
                       takeover_grace_s=config.workers.takeover_grace_s,
                       poll_s=config.workers.poll_s,
                       max_concurrent_runs=dict(config.workers.max_concurrent_runs)),
                   programs=built)
    bind_skills(runtime, specs)
    if config.commands and (catalogs.exposed or any(
            tool_key(t).startswith("command.") for s in specs for t in s.tools)):
        bind_commands(runtime, config, bound)
    return runtime


def _importable(folder: Path) -> None:
    entry = str(folder)
    if entry not in sys.path:
        sys.path.insert(0, entry)
