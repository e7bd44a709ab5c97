"""The workflows of a configuration's ``workflows:`` as programs (``WorkflowProgram``, issue
20), their capability nodes resolved exactly as an agent's ``tools`` are (built-ins,
``module:attr`` tools, ``mcp.<server>.<tool>``, ``a2a.<name>``, ``command.<id>``:
``assembly.tools.workflow_tools``).

Owns: turning ``workflows:`` into programs. Does not own: the rest of the build
(``assembly.runtime``), a workflow's definition and checks (``squad.builder``), running it
(``squad.driver``).
"""

from __future__ import annotations

from collections.abc import Callable

from agentloom.agent.spec import AgentTool, Limits, tool_key
from agentloom.config import Config
from agentloom.squad.builder import from_config
from agentloom.squad.driver import WorkflowProgram

__all__ = ["workflow_programs"]


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
