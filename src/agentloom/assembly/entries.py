"""Every tool entry a configuration names, wherever it names it (issue 20): an agent's
``tools`` and a workflow's capability nodes. What the MCP servers, remote A2A agents and
``command.<id>`` tools to set up at build time are read from.

Owns: that enumeration. Does not own: resolving an entry (``assembly.tools.entry_tools``).
"""

from __future__ import annotations

from agentloom.config import Config
from agentloom.config.workflows import CapabilityNodeConfig

__all__ = ["tool_entries"]


def tool_entries(config: Config) -> list[str]:
    """Each agent's ``tools`` and each workflow's capability nodes
    (``workflows.<w>.nodes.<n>.capability``), in file order."""
    entries = [entry for agent in config.agents.values() for entry in agent.tools]
    entries += [node.capability for workflow in config.workflows.values()
                for node in workflow.nodes.values() if isinstance(node, CapabilityNodeConfig)]
    return entries
