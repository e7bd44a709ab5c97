"""The tools only a workflow node can use (issue 37), by the name an agent lists in ``tools``:
``collab.post``, ``collab.read``, ``collab.handoff``, ``collab.accept``, ``collab.claim``,
``collab.update`` (``squad.collab_tools``) and ``artifact.publish``
(``squad.artifacts.publish_tool``).

The names live in ``config.agents.WORKFLOW_TOOLS`` (config imports no squad; the kernel
resolves only built-ins and imports no squad either). They become ``(spec, handler)`` pairs
here, at two places: the assembly (``assembly.tools.entry_tools``: an agent of a YAML file)
and ``WorkflowProgram.bind`` (an ``AgentSpec`` of Python listing them by name). An agent
outside any workflow may list them (``resolve`` them first in Python); its calls fail
``NOT_IN_WORKFLOW``.

Owns: name → ``(spec, handler)``. Does not own: the tools (``squad.collab_tools``,
``squad.artifacts``), which names exist (``config.agents``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from agentloom.agent.spec import AgentTool
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.config.agents import WORKFLOW_TOOLS
from agentloom.results import ToolResult
from agentloom.squad.collab_tools import COLLAB_TOOLS, collab_tool

__all__ = ["RELEASE", "WORKFLOW_TOOLS", "is_workflow_tool", "resolve", "workflow_tool"]

RELEASE = "workflow-tools"
"""The ``resource_version_id`` of the pairs made before a runtime's release is known (the
catalog publishes them under the runtime's release, as command tools)."""


def is_workflow_tool(tool: object) -> bool:
    """Whether ``tool`` (an entry of an agent's ``tools``) is a workflow tool's name."""
    return isinstance(tool, str) and tool in WORKFLOW_TOOLS


def workflow_tool(name: str, release_id: str = RELEASE) -> AgentTool:
    """The ``(spec, handler)`` of workflow tool ``name``.

    Raises:
        ValueError: ``name`` is not one of ``WORKFLOW_TOOLS``.
    """
    if name in COLLAB_TOOLS:
        return collab_tool(name, release_id)
    if name == "artifact.publish":
        try:
            publish = getattr(importlib.import_module("agentloom.squad.artifacts"),
                              "publish_tool", None)
        except ImportError:
            publish = None
        if publish is not None:
            made: AgentTool = publish(release_id)
            return made
        return _unavailable(name, release_id)
    raise ValueError(f"{name!r} is not a workflow tool; they are {', '.join(WORKFLOW_TOOLS)}")


def resolve(tools: Sequence[AgentTool], release_id: str = RELEASE) -> list[AgentTool]:
    """``tools`` with each workflow tool's name replaced by its ``(spec, handler)``."""
    return [workflow_tool(t, release_id) if isinstance(t, str) and is_workflow_tool(t) else t
            for t in tools]


class _Unavailable:
    """A workflow tool this build does not provide yet: every call fails, saying so."""

    rerunnable = True
    recoverable = False

    def __init__(self, name: str) -> None:
        self.name = name

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        return ToolResult.failure(f"{self.name} is not available in this build of agentloom",
                                  category="business", code="TOOL_UNAVAILABLE")


def _unavailable(name: str, release_id: str) -> AgentTool:
    schema: dict[str, Any] = {"type": "object"}
    return (CapabilitySpec(
        resource_version_id=release_id, capability_key=name, kind="builtin",
        exposed_name=legal_exposed_name(name), description=f"{name} (not available)",
        input_schema=schema, handler_ref=f"workflow:{name}"), _Unavailable(name))
