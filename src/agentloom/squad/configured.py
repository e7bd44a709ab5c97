"""A ``Runtime`` built from a YAML configuration, with its workflows (issue 20).

``agentloom.agent.configured.runtime_from_config`` builds the agents, hooks, store and
sandbox; this one passes it the workflows of ``workflows:`` as programs (``WorkflowProgram``),
their capability nodes resolved exactly as an agent's ``tools`` are (built-ins, ``module:attr``
tools, ``mcp.<server>.<tool>``, ``a2a.<name>``, ``command.<id>``). Every entry point (the
CLI, ``agentloom serve``, ``agentloom worker``) builds its runtime here, so any process can
drive a workflow run.

Owns: turning ``workflows:`` into programs. Does not own: the rest of the build
(``agent.configured``), running a workflow (``squad.driver``).
"""

from __future__ import annotations

from collections.abc import Callable

from agentloom.agent.configured import runtime_from_config as _agents_runtime
from agentloom.agent.runtime import Runtime
from agentloom.agent.spec import AgentTool, Limits, tool_key
from agentloom.config import Config
from agentloom.sandbox.ports import SandboxBackend
from agentloom.squad.builder import from_config
from agentloom.squad.driver import WorkflowProgram

__all__ = ["runtime_from_config", "workflow_programs"]


def workflow_programs(config: Config, tools_of: Callable[[str], dict[str, AgentTool]]
                      ) -> list[WorkflowProgram]:
    """One program per workflow of ``config``, in file order; ``tools_of(name)``: what the
    capability nodes of workflow ``name`` call, by their ``capability`` entry."""
    programs = []
    for name, spec in from_config(config).items():
        tools = tools_of(name)
        limits = config.workflows[name].limits
        programs.append(WorkflowProgram(
            spec, tools=list(tools.values()),
            keys={entry: tool_key(tool) for entry, tool in tools.items()},
            limits=Limits(run_deadline_s=limits.run_deadline_s,
                          max_total_tokens=limits.max_total_tokens,
                          approval_timeout_s=limits.approval_timeout_s,
                          approval_default=limits.approval_default)))
    return programs


def runtime_from_config(config: Config, *, store: str | None = None,
                        sandbox_backend: SandboxBackend | None = None) -> Runtime:
    """The runtime ``config`` describes, its workflows included (see
    ``agentloom.agent.configured.runtime_from_config`` for the rest and what it raises)."""
    return _agents_runtime(config, store=store, sandbox_backend=sandbox_backend,
                           programs=workflow_programs if config.workflows else None)
