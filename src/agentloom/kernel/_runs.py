"""Starting, queueing and claiming a ``Kernel``'s runs, and the writes of a run's row its holder
makes while it drives the run (lease renewal, facts).

Owns: ``RunsPart`` (``start_run``, ``submit_run``, ``claim_next``, ``claim``,
``open_run_workspace``, ``update_run``, ``renew_lease``) — each write's shape and its fence.
Does not own: ending or letting go of a run (``_release``), the queue's order and caps
(``store.queue``), nor when to claim or renew (``agent/``: workers, leases).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from agentloom.ids import new_id
from agentloom.kernel._parts import KernelParts, RunLease
from agentloom.refs import OwnerRef, Principal
from agentloom.results import RunStatus
from agentloom.store import Insert, Op, WriteSet
from agentloom.store import runs as run_rows
from agentloom.store.owners import check_owner
from agentloom.store.ports import Fence


class RunsPart(KernelParts):
    """``Kernel``'s runs: creating, queueing and claiming them, and their holder's writes."""

    async def start_run(
        self,
        *,
        run_id: str | None = None,
        data: dict[str, Any] | None = None,
        lease_ttl_s: float = 60.0,
        owner: OwnerRef | None = None,
        workspace: bool = True,
        session_id: str | None = None,
        workdir: Path | None = None,
        keep_workspace: bool = False,
        principal: Principal | None = None,
    ) -> RunLease:
        """Create a run, take its lease and (by default) register its workspace.

        A deleted owner is refused (``OwnerDeleted``, ``OWNER_DELETED``) before anything is
        created. ``workdir``: an existing folder is the workspace (refused with ``WORKSPACE_BUSY``
        while another running run holds it, before any run is created); ``keep_workspace``:
        the run's own folder is kept after it ends.

        With ``session_id`` the workspace is that session's persistent folder; without,
        a folder of this run's own invocation, deleted when the run ends.
        """
        run_id = run_id or new_id()
        owner = owner or OwnerRef(kind="agent", id="main")
        check_owner(self.store, owner)  # a deleted owner starts nothing (OWNER_DELETED)
        if workspace and workdir is not None:
            self.environment.scopes.check_bindable(workdir, self.run_is_running)
        # created already held by this process (epoch 1): nobody else can have claimed a run
        # that did not exist, so the insert is the claim — one commit, not two
        ops: list[Op] = [self._new_run(run_id, "running", owner, data, principal=principal,
                                       lease=(1, self.worker_id,
                                              self.store.now() + lease_ttl_s))]
        scope = None
        if workspace and workdir is None:  # its scope is registered in the same commit
            scope, scope_ops = await self.environment.plan_workspace(
                owner=owner, run_id=run_id, session_id=session_id, invocation_id=run_id,
                keep=keep_workspace, new_run=True)
            ops.extend(scope_ops)
        await self.coordinator.commit(WriteSet(tuple(ops)), inline=self._alone())
        if scope is not None:
            if scope.persistent:  # a run's own folder is made when it is first used
                self.environment.scopes.ensure_folder(scope)
            return RunLease(run_id, 1, scope.workspace_scope_id)
        lease = RunLease(run_id, 1)
        if workspace:
            lease = await self.open_run_workspace(lease, owner=owner, session_id=session_id,
                                                  workdir=workdir, keep=keep_workspace)
        return lease

    def _new_run(self, run_id: str, status: RunStatus, owner: OwnerRef,
                 data: Mapping[str, Any] | None, priority: int = 0,
                 principal: Principal | None = None,
                 lease: tuple[int, str, float] | None = None) -> Insert:
        """The insert of a new ``runs`` row (``store.runs.new_run_op``): its data names its owner
        and sandbox backend; ``lease``: created already held."""
        run_data = dict(data or {})
        run_data["owner"] = owner.to_dict()
        run_data["sandbox_backend"] = self.environment.sandbox_backend
        return run_rows.new_run_op(run_id, status=status, data=run_data, created_at=time.time(),
                                   priority=priority, principal=principal, lease=lease)

    async def submit_run(self, *, run_id: str | None = None, data: Mapping[str, Any],
                         owner: OwnerRef, priority: int = 0,
                         principal: Principal | None = None) -> str:
        """Put a run in the queue: status ``pending``, no holder, no workspace yet (a worker's
        claim gives it both). A deleted owner is refused (``OWNER_DELETED``) first."""
        run_id = run_id or new_id()
        check_owner(self.store, owner)
        await self.coordinator.commit(WriteSet((self._new_run(
            run_id, "pending", owner, data, priority, principal),)))
        return run_id

    def claim_next(self, *, agents: Collection[str], release_id: str, worker_cap: int,
                   agent_caps: Mapping[str, int] | None = None,
                   lease_ttl_s: float = 60.0) -> RunLease | None:
        """Take the next ``pending`` run of ``agents`` in ``release_id`` this worker may hold
        (``Store.claim_next``: priority, then age; the worker and agent caps checked in the
        same transaction), or None. Its lease names the run's workspace once it has one."""
        claimed = self.store.claim_next(self.worker_id, lease_ttl_s, agents=agents,
                                        release_id=release_id, worker_cap=worker_cap,
                                        agent_caps=agent_caps)
        if claimed is None:
            return None
        scopes = [s for s in self.environment.scopes.scopes_for_run(claimed.run_id)
                  if s.state == "registered"]
        return RunLease(claimed.run_id, claimed.lease_epoch,
                        scopes[0].workspace_scope_id if scopes else None)

    async def open_run_workspace(self, lease: RunLease, *, owner: OwnerRef,
                                 session_id: str | None = None, workdir: Path | None = None,
                                 keep: bool = False) -> RunLease:
        """Register the workspace of a run this process holds (fenced by its lease)."""
        scope = await self.environment.open_workspace(
            owner=owner, run_id=lease.run_id, session_id=session_id,
            invocation_id=lease.run_id, fence=Fence(lease.run_id, lease.lease_epoch),
            workdir=workdir, keep=keep, busy=self.run_is_running)
        return RunLease(lease.run_id, lease.lease_epoch, scope.workspace_scope_id)

    def run_is_running(self, run_id: str) -> bool:
        run = run_rows.get_run(self.store, run_id, lenient=True)
        return run is not None and run.stored_status == "running"

    def claim(self, run_id: str, *, lease_ttl_s: float = 60.0,
              only_if_expired: bool = False, expect_epoch: int | None = None) -> RunLease:
        """Take over a run: a new lease epoch fences every commit of the previous holder.
        ``only_if_expired``: only when no live lease holds it; ``expect_epoch``: only while
        its epoch is still that one (the one the caller judged) — else ``StoreError``
        LEASE_HELD."""
        epoch = self.store.claim_run(run_id, self.worker_id, lease_ttl_s,
                                     only_if_expired=only_if_expired, expect_epoch=expect_epoch)
        scopes = [s for s in self.environment.scopes.scopes_for_run(run_id)
                  if s.state == "registered"]
        return RunLease(run_id, epoch, scopes[0].workspace_scope_id if scopes else None)

    async def update_run(self, lease: RunLease, facts: Mapping[str, Any]) -> None:
        """Record ``facts`` (columns of the run's row: ``data``, ``status``) under the lease.

        Raises:
            FencedOut: another holder took the run over; nothing was recorded.
        """
        await self._commit_run(lease, {"run_id": lease.run_id, "updated_at": time.time(),
                                       **facts})

    async def renew_lease(self, lease: RunLease, *, lease_ttl_s: float = 60.0) -> None:
        """Extend the lease to ``lease_ttl_s`` from now (its holder does, while it drives the run).

        Raises:
            FencedOut: another holder took the run over.
        """
        # ``running`` again, too: a takeover that found the lease expired (the holder was
        # paused) may have reported the run ``suspended`` without taking it
        await self._commit_run(lease, {"run_id": lease.run_id, "status": "running",
                                       "lease_expires_at": self.store.now() + lease_ttl_s})
