"""Every configured agent as an ``AgentSpec``, at build time, and what its tool entries resolve
against: the MCP servers' tools and the remote A2A agents, listed once (the release's catalog,
frozen for its runs), and the ``command.<id>`` tools. Each agent's model (``assembly.models``:
source, window W and output limit O — configured, documented by the preset, or read from the
provider's model listing; an agent whose window nobody knows is refused), its tools
(``assembly.tools``), its skills (bound to their current stored versions:
``skills.configured.release_skills``; listed in its instructions, narrowing its tools, adding
``skill.list`` / ``skill.read``), executors, retry policy, limits and instructions.

Owns: ``agents:`` to ``AgentSpec``s and the build-time catalogs. Does not own: the runtime
around them (``assembly.runtime``), the workflows (``assembly.workflows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentloom.agent.output import OutputSpec
from agentloom.agent.runtime import Runtime
from agentloom.agent.spec import AgentSpec, AgentTool, Limits, tool_key
from agentloom.assembly.a2a import a2a_catalog
from agentloom.assembly.checks import check_config
from agentloom.assembly.commands import BoundCommands, command_tools
from agentloom.assembly.environment import environment_policy, store_url_for
from agentloom.assembly.mcp import mcp_catalog
from agentloom.assembly.models import (
    max_output_tokens,
    model_descriptor,
    model_source,
    retry_policy,
    think_params,
)
from agentloom.assembly.tools import agent_tools
from agentloom.catalog import CapabilitySpec
from agentloom.config import AUTO_TOOLS, Config, Problem, config_error, key_path
from agentloom.errors import ConfigError
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.sandbox.ports import SandboxBackend
from agentloom.skills.configured import release_skills
from agentloom.skills.runtime import SKILL_TOOLS, narrowed_keys, skill_listing
from agentloom.skills.versions import SkillVersion, get_version
from agentloom.store import open_store

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpTool

__all__ = ["SKILLS_EXTRA", "BuildCatalogs", "agent_specs", "bind_skills", "bound_skills",
           "build_catalogs"]

SKILLS_EXTRA = "skills"
"""The key of ``AgentSpec.extras`` naming an agent's bound skill versions (name -> digest)."""


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
    ``commands``: what the ``command.<id>`` tools submit to once bound (``assembly.commands``;
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
            extras={SKILLS_EXTRA: {v.name: v.digest for v in versions}} if versions else {},
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
    ``skill.list`` and ``skill.read`` when it has skills. The capabilities it gets without
    listing them (``AUTO_TOOLS``) are added here or by the kernel, once, listed or not."""
    tools = [t for t in tools if not (isinstance(t, str) and t in AUTO_TOOLS)]
    if not versions:
        return tuple(tools)
    keys = [tool_key(t) for t in tools]
    kept = narrowed_keys(keys, versions)
    narrowed = [t for t, k in zip(tools, keys, strict=True) if k in kept]
    return (*narrowed, *SKILL_TOOLS)


def bind_skills(runtime: Runtime, specs: list[AgentSpec]) -> None:
    """Give the runtime each agent's bound skill versions (``bound_skills``): what
    ``skill.list`` / ``skill.read`` serve and ``exec`` mounts."""
    for spec in specs:
        digests = bound_skills(spec)
        versions = [get_version(runtime.store, d) for d in digests.values()]
        runtime.kernel.skills.bind(spec.name, [v for v in versions if v is not None])


def bound_skills(spec: AgentSpec) -> Mapping[str, str]:
    """The agent's bound skill versions, name -> digest (``AgentSpec.extras[SKILLS_EXTRA]``;
    empty for an agent without skills)."""
    bound: Mapping[str, str] = spec.extras.get(SKILLS_EXTRA) or {}
    return bound
