"""AgentLoom: a durable agent runtime.

Every model call, tool call and context change is one request on one bus that goes
through one recorded pipeline, under ordered hooks, on a fenced store.
"""

from agentloom.bus import EventBus, RequestItem
from agentloom.catalog import CapabilityRegistry, CapabilitySpec
from agentloom.errors import (
    AgentLoomError,
    CatalogError,
    ConfigError,
    FencedOut,
    OperationError,
    RegistrationError,
    RoutingError,
    StoreError,
)
from agentloom.hooks.decision import HookDecision, HookOutcome
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.kernel import Kernel, RunLease
from agentloom.pipeline.cancel import CancelToken
from agentloom.pipeline.context import InvocationContext, OwnerRef
from agentloom.pipeline.retry import RetryPolicy
from agentloom.results import ArtifactRef, OperationResult, ToolResult
from agentloom.store import open_store
from agentloom.tools import StrictInput, Tool, ToolContext

__all__ = [
    "AgentLoomError",
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
    "OperationError",
    "OperationResult",
    "OwnerRef",
    "RegistrationError",
    "RequestItem",
    "RetryPolicy",
    "RoutingError",
    "RunLease",
    "StoreError",
    "StrictInput",
    "Tool",
    "ToolContext",
    "ToolResult",
    "open_store",
]
