"""The event bus: request/response with exactly one owner, batches, observations (000 §1, §3.2)."""

from agentloom.bus.bus import BatchError, EventBus, RequestItem, RequestOwner

__all__ = ["BatchError", "EventBus", "RequestItem", "RequestOwner"]
