"""AgentLoom: a durable agent runtime.

Every model call, tool call and context change is one request on one bus that goes
through one recorded pipeline, under ordered hooks, on a fenced store.

The front door is ``Runtime``: agents (``AgentSpec``), their tools (built-in names, ``Tool``
subclasses, or functions decorated with ``@tool``), hooks (``HookSpec``s or functions
decorated with ``@hook``), a sandbox and a store::

    import agentloom

    @agentloom.tool
    def shout(text: str) -> str:
        '''Upper-case a text.'''
        return text.upper()

    rt = agentloom.Runtime([agentloom.AgentSpec(name="main", model=..., tools=(shout,))],
                           store="sqlite:///.agentloom/agentloom.db")
    result = await rt.run("shout hello")

``Kernel`` is the advanced layer ``Runtime`` builds on: the core's composition root, for
driving capabilities on the bus without the agent loop (docs/python.md, "Advanced").

The agent layer (``Runtime``, ``AgentSpec``, …) is imported on first use, so a program that
only drives a ``Kernel`` does not load it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentloom.bus import EventBus, RequestItem
from agentloom.cancel import CancelToken
from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.errors import (
    AgentLoomError,
    CatalogError,
    ConfigError,
    FencedOut,
    OperationError,
    RegistrationError,
    StoreError,
)
from agentloom.hooks import hook
from agentloom.hooks.decision import HookDecision, HookOutcome
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.kernel import Kernel, RunLease
from agentloom.pipeline.context import InvocationContext, OwnerRef
from agentloom.pipeline.retry import RetryPolicy
from agentloom.results import ArtifactRef, OperationResult, ToolResult
from agentloom.store import open_store
from agentloom.tools import StrictInput, Tool, ToolContext, tool

if TYPE_CHECKING:
    from agentloom.agent import (
        AgentSpec,
        Limits,
        RunError,
        RunHandle,
        RunResult,
        Runtime,
        RuntimeOptions,
    )

_LAZY = {name: "agentloom.agent" for name in
         ("AgentSpec", "Limits", "RunError", "RunHandle", "RunResult", "Runtime",
          "RuntimeOptions")}


def __getattr__(name: str) -> Any:
    """The agent layer's exports, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentloom' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AgentLoomError",
    "AgentSpec",
    "ArtifactRef",
    "CancelToken",
    "CapabilityRegistry",
    "CapabilitySpec",
    "CatalogError",
    "ConfigError",
    "EventBus",
    "FencedOut",
    "HandlerRef",
    "HookDecision",
    "HookMatch",
    "HookOutcome",
    "HookSpec",
    "InvocationContext",
    "Kernel",
    "Limits",
    "OperationError",
    "OperationResult",
    "OwnerRef",
    "RegistrationError",
    "RequestItem",
    "RetryPolicy",
    "RunError",
    "RunHandle",
    "RunLease",
    "RunResult",
    "Runtime",
    "RuntimeOptions",
    "StoreError",
    "StrictInput",
    "Tool",
    "ToolContext",
    "ToolResult",
    "hook",
    "open_store",
    "tool",
]
