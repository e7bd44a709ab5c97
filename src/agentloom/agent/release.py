"""A runtime's release: its id (a digest of what decides how a run behaves) and the catalog it
publishes — every tool of its agents and programs, plus one delegation tool per Executor.

A run records both (``release_id``, ``catalog_version``) and is only resumed by a runtime
whose release is the same (``RELEASE_CHANGED`` otherwise, naming what changed).

Owns: the digest and the publication. Does not own: the catalog itself (``catalog``), the
kernel that registers the handlers, or running a delegation (``agent.driver``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from agentloom.agent.delegation import DelegationHandler, RunExecutor, delegate_spec
from agentloom.agent.roster import Roster
from agentloom.agent.spec import AgentSpec, AgentTool, tool_key
from agentloom.canonical import sorted_json
from agentloom.config.diff import changed_keys
from agentloom.hooks.spec import HookSpec
from agentloom.kernel import Kernel
from agentloom.models.ports import Connection
from agentloom.store.records import RunRecord

__all__ = ["model_identity", "publish", "release_changed", "release_digest"]

SKILLS_EXTRA = "skills"
"""The key of an agent's bound skill versions in ``AgentSpec.extras`` (``assembly.agents``)."""


def model_identity(model: object) -> str:
    """What the release id knows of a model: its endpoint and name, or its class."""
    if isinstance(model, Connection):
        return f"connection:{model.base_url}:{model.model}"
    return f"{type(model).__module__}.{type(model).__qualname__}:{getattr(model, 'model', '')}"


def _model_settings(agent: AgentSpec) -> dict[str, Any]:
    """The agent's think / output-limit settings for the release id (absent when unset, so
    a release without them keeps its id)."""
    settings: dict[str, Any] = {}
    if agent.think is not None:
        settings["think"] = {"enabled": agent.think.enabled, "effort": agent.think.effort}
    if agent.max_output_tokens is not None:
        settings["max_output_tokens"] = agent.max_output_tokens
    return settings


def release_digest(agents: Sequence[AgentSpec], hooks: Sequence[HookSpec],
                   programs: Sequence[Any] = ()) -> str:
    """The release id: a digest of the agents (their retry policy and limits included, so a
    resumed run keeps the ones it started with) and the compiled hook specs (a callable
    hook by its ``module:qualname`` ref), so the same code always gives the same id."""
    described = [{
        "name": a.name, "model": model_identity(a.model), "instructions": a.instructions,
        "description": a.description,
        "tools": a.tool_keys(), "executors": list(a.executors),
        **({"output": a.output.to_dict()} if a.output else {}),
        # skill name -> bound version digest (assembly): a new version, a new id
        **({"skills": dict(a.extras[SKILLS_EXTRA])} if a.extras.get(SKILLS_EXTRA) else {}),
        **_model_settings(a), **a.policy_settings(),
    } for a in agents]
    raw = sorted_json({"agents": described, "hooks": [h.to_dict() for h in hooks],
                       **({"programs": {p.name: p.digest for p in programs}}
                          if programs else {})})
    return "rel-" + hashlib.sha256(raw.encode()).hexdigest()[:16]


def publish(kernel: Kernel, roster: Roster, release_id: str, run_executor: RunExecutor) -> str:
    """Publish the release's catalog (the tools of every agent and program, each once, and a
    delegation tool per Executor run by ``run_executor``) and return its version: the
    compiled catalog (tool schemas, descriptions) is part of what a run started with."""
    agents, programs = list(roster.agents.values()), list(roster.programs.values())
    tools: list[Any] = []
    names: set[str] = set()
    owned: list[Sequence[AgentTool]] = [*(a.tools for a in agents), *(p.tools() for p in programs)]
    for own in owned:
        for tool in own:
            key = tool_key(tool)
            if key not in names:
                names.add(key)
                tools.append(tool)
    for agent in agents:
        for executor in agent.executors:
            spec = delegate_spec(executor, roster.agents[executor].description, release_id)
            if spec.capability_key not in names:
                names.add(spec.capability_key)
                tools.append((spec, DelegationHandler(executor, run_executor)))
    return kernel.publish(release_id, tools, roles={
        **{a.name: a.tool_keys() for a in agents},
        **{p.name: [tool_key(t) for t in p.tools()] for p in programs}})


def release_changed(run: RunRecord, release_id: str, now: Any) -> str:
    """Why ``run`` (of another release) is not resumed by release ``release_id``, and what
    changed in the config file since it started (``now``: this runtime's config snapshot)."""
    started = run.config_snapshot
    changed = ""
    if started is not None and now is not None:
        keys = changed_keys(started, now)
        shown = ", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "")
        changed = (f"; changed since it started: {shown}" if keys else
                   "; the config file's values are the same, so code it imports changed "
                   "(a tool or a hook)")
    return (f"run {run.run_id} was started with release {run.release_id} and this "
            f"configuration is release {release_id}{changed}; resume it with the "
            "configuration it started with")
