"""What the parts of ``Kernel`` share: the wired attributes they read, ``RunLease``, and the one
commit of a run's row fenced by its lease.

Owns: ``RunLease``; ``KernelParts`` (the attributes ``Kernel.__init__`` sets, declared once for
the parts; a run's fenced row commit; closing a run's MCP sessions). Does not own: wiring the
attributes (``_root``) nor any run transition (``_runs``, ``_release``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom.bus import EventBus
from agentloom.catalog import CapabilityRegistry
from agentloom.context import ContextManager
from agentloom.environment import RunEnvironment
from agentloom.hooks.manager import HookManager
from agentloom.models.gateway import ModelGateway
from agentloom.models.manager import ModelManager
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.invocation import InvocationPipeline
from agentloom.skills.runtime import SkillBindings
from agentloom.store import Op, Store, WriteSet
from agentloom.store import runs as run_rows
from agentloom.store.ports import Fence
from agentloom.tools.manager import ToolManager

if TYPE_CHECKING:
    from agentloom.mcp import McpSessions


@dataclass(frozen=True, slots=True)
class RunLease:
    """A claim on one run: the run id, the lease epoch every commit of the holder is fenced by,
    and the run's workspace scope. A holder whose epoch moved on gets ``FencedOut``."""

    run_id: str
    lease_epoch: int
    workspace_scope_id: str | None = None


class KernelParts:
    """The attributes ``Kernel.__init__`` wires (see ``Kernel``), and what its parts all use."""

    store: Store
    coordinator: CommitCoordinator
    registry: CapabilityRegistry
    hooks: HookManager
    context: ContextManager
    pipeline: InvocationPipeline
    bus: EventBus
    tools: ToolManager
    delegations: ToolManager
    environment: RunEnvironment
    skills: SkillBindings
    model_manager: ModelManager
    models: ModelGateway
    worker_id: str
    _mcp: McpSessions | None

    async def _commit_run(self, lease: RunLease, row: Mapping[str, Any], *also: Op) -> None:
        """One commit of the run's row (and ``also``), fenced by the lease's epoch."""
        changes = {column: value for column, value in row.items() if column != "run_id"}
        await self.coordinator.commit(WriteSet((run_rows.update_run_op(row["run_id"], changes),
                                                *also),
                                               Fence(lease.run_id, lease.lease_epoch)),
                                      inline=self._alone())

    def _alone(self) -> bool:
        """No call is in flight in this process: a run's own commit may run on the event
        loop's thread (``CommitCoordinator.commit``'s ``inline``)."""
        return self.pipeline.commits.active == 0

    async def _close_mcp(self, run_id: str) -> None:
        if self._mcp is not None:
            await self._mcp.close_run(run_id)
