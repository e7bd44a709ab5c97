"""What is wrong with one tool entry that names another section of the configuration — an MCP
server (``mcp.<server>.<tool>``), a remote A2A agent (``a2a.<name>``), a command
(``command.<id>``: ``config.commands.command_problem``) — as one message, or None. An agent's
``tools`` and a workflow's capability nodes are checked by the same words.

Owns: those messages. Does not own: where an entry sits (the caller's key path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentloom.config._problems import did_you_mean
from agentloom.config.a2a import a2a_entry_agent
from agentloom.config.commands import command_problem
from agentloom.config.mcp import mcp_entry_parts

__all__ = ["a2a_agent_problem", "command_problem", "mcp_server_problem"]


def mcp_server_problem(servers: Mapping[str, Any], entry: str) -> str | None:
    """``entry`` names an MCP server ``servers`` lacks."""
    parts = mcp_entry_parts(entry)
    if parts is None or parts[0] in servers:
        return None
    known = list(servers)
    return (f"no MCP server named {parts[0]!r}; {did_you_mean(parts[0], known)}defined: "
            f"{', '.join(known) or 'none (add one under mcp_servers)'}")


def a2a_agent_problem(agents: Mapping[str, Any], entry: str) -> str | None:
    """``entry`` names a remote A2A agent ``agents`` lacks."""
    name = a2a_entry_agent(entry)
    if name is None or name in agents:
        return None
    known = list(agents)
    return (f"no A2A agent named {name!r}; {did_you_mean(name, known)}defined: "
            f"{', '.join(known) or 'none (add one under a2a_agents)'}")
