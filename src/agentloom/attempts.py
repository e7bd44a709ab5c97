"""What a capability handler is handed for one physical Attempt (spec 000 §3.1, step 6).

Owns: ``CapabilityRequest`` (the frozen, effective request a handler executes) and
``AttemptContext`` (the trusted facts of one Attempt: ids, run deadline, cancel token, and the
two ways a handler speaks back during it: ``checkpoint`` and ``observe``).
Does not own: the ``CapabilityHandler`` port that receives them (``pipeline/ports.py``,
beside its consumer) nor running an Attempt (``pipeline/attempt.py``). They sit in the core
so a handler — a tool, a model manager, ``result.read``, the workspace resolver — reads them
without importing the pipeline that calls it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentloom.cancel import CancelToken
from agentloom.refs import NodeRef

__all__ = ["AttemptContext", "CapabilityRequest"]


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

    ``checkpoint_to`` and ``observer`` are set by the pipeline; a handler calls
    ``checkpoint`` and ``observe`` instead of using them.
    """

    operation_id: str
    attempt_no: int
    run_id: str
    role: str | None
    deadline: float
    cancel: CancelToken = field(default_factory=CancelToken)
    workspace_scope_id: str | None = None
    lease_epoch: int | None = None
    node: NodeRef | None = None
    """The workflow node the call serves (``InvocationContext.node``), if any."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    checkpoint_to: Callable[[Mapping[str, Any]], Awaitable[None]] | None = None
    observer: Callable[[str, dict[str, Any]], None] | None = None

    async def checkpoint(self, handle: Mapping[str, Any]) -> None:
        """Commit ``handle`` (JSON-able: e.g. a remote task id) onto this Attempt's operation
        before returning: after a crash, a *resumable* handler is given it back
        (``resume_once``) instead of the Attempt being reported ``unknown``
        (``pipeline.ports.ResumableHandler``). A later call replaces it. Outside a pipeline
        (no ``checkpoint_to``) there is nowhere to commit it and it returns at once.

        Raises:
            StoreError: the commit did not happen (the handle is not durable).
        """
        if self.checkpoint_to is not None:
            await self.checkpoint_to(handle)

    def observe(self, kind: str, payload: Mapping[str, Any]) -> None:
        """Tell the bus's observers of something the Attempt saw (a remote task's state on a
        poll): an observation, never a result, never a new Attempt. ``run_id`` and
        ``operation_id`` are added to ``payload``."""
        if self.observer is not None:
            self.observer(kind, {"run_id": self.run_id, "operation_id": self.operation_id,
                                 **payload})

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set

    def remaining(self) -> float:
        """Seconds left before the run deadline (never negative)."""
        return max(0.0, self.deadline - time.time())
