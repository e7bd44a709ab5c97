"""Ports the pipeline consumes: the raw capability handler and what it is handed.

A handler is the *raw* implementation of one capability. It is called once per
physical Attempt with the frozen, effective request; it never re-enters the
pipeline for its own request and never retries by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentloom.pipeline.cancel import CancelToken
from agentloom.results import ToolResult


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityRequest:
    """The frozen request a handler executes: exactly what the model will be told ran."""

    operation_id: str
    resource_version_id: str
    capability_key: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptContext:
    """Trusted facts for one physical Attempt. Handlers get this, never the store.

    ``deadline`` is a wall-clock epoch in seconds (``time.time()`` scale): the run
    deadline, which bounds the Attempt and any retry wait.
    """

    operation_id: str
    attempt_no: int
    run_id: str
    role: str | None
    deadline: float
    cancel: CancelToken = field(default_factory=CancelToken)
    workspace_scope_ref: str | None = None
    lease_epoch: int | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set

    def remaining(self) -> float:
        """Seconds left before the run deadline (never negative)."""
        return max(0.0, self.deadline - time.time())


class CapabilityHandler(Protocol):
    """The raw implementation of one capability: one call = one physical Attempt."""

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        ...


Observer = Callable[[str, dict[str, Any]], None]
"""Told of what the pipeline does (``operation.started``, ``operation.completed``,
``hook.warning``) with a JSON-able payload; it can change nothing."""
