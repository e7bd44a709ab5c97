"""A ``Runtime`` built from a YAML configuration (``agentloom.config``), its agents and its
workflows.

::

    config = load_config("agentloom.yaml")
    runtime = runtime_from_config(config)            # store: AGENTLOOM_STORE or beside the file
    result = await runtime.run("list the files", agent="main")

Everything a configuration names is resolved *here*, before any run starts. The checks that
need the provider presets or the script parser run first (``assembly.checks``); then the MCP
servers, remote agents and command tools the entries name are listed once
(``assembly.agents.build_catalogs``), and from them each agent (``assembly.agents``: model,
window W and output reserve O, tools, skills, executors, retry, limits, instructions) and each
workflow (``assembly.workflows``: its capability nodes resolved as an agent's tools are); the
hooks and the Python functions they name (``assembly.hooks``); the workspace root; the sandbox
backend and policy and the store (``assembly.environment``); the projects' model routes
(``assembly.routes``). A bad reference is a ``ConfigError`` naming its key, never a failure in
the middle of a run. Every entry point (the CLI, ``agentloom serve``, ``agentloom worker``)
builds its runtime here, so any process can drive any run.

The config file's folder is put first on ``sys.path`` (as Python does for a script's folder)
and stays there: ``module:function`` hooks and ``module:attr`` tools written beside the config
are importable, and so is anything they import later, while the runtime runs.

Owns: putting the parts together into a ``Runtime``. Does not own: building each part (the
other ``assembly`` modules), the runtime itself (``agent.runtime``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentloom.agent.failures import RecoveryPolicy
from agentloom.agent.leases import WorkerSettings
from agentloom.agent.runtime import Runtime
from agentloom.agent.spec import tool_key
from agentloom.assembly.agents import agent_specs, bind_skills, bound_skills, build_catalogs
from agentloom.assembly.commands import BoundCommands, bind_commands
from agentloom.assembly.environment import environment_policy, store_url_for
from agentloom.assembly.hooks import hook_functions, hook_specs
from agentloom.assembly.routes import ConfigRoutes
from agentloom.assembly.tools import workflow_tools
from agentloom.assembly.workflows import workflow_programs
from agentloom.config import Config
from agentloom.sandbox.ports import SandboxBackend

__all__ = ["runtime_from_config"]


def runtime_from_config(
    config: Config, *, store: str | None = None, sandbox_backend: SandboxBackend | None = None,
) -> Runtime:
    """The runtime a configuration describes.

    ``store`` overrides the store URL (see ``store_url_for``); the default SQLite file's
    ``.agentloom/`` folder is created. ``sandbox_backend`` overrides ``sandbox.backend``.
    It runs the agents of ``agents:`` and the workflows of ``workflows:``.

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
    built = workflow_programs(config, lambda name: workflow_tools(
        config, name, catalogs.mcp, catalogs.remote, catalogs.exposed)) if config.workflows else ()
    hooks = hook_specs(config, {s.name: bound_skills(s) for s in specs}, store=url)
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
