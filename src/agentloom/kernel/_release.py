"""Ending a ``Kernel``'s run or letting it go: its terminal row, parking and suspending it, the
revocation of its commands and servers, and its workspace's cleanup (000 §7.4).

Owns: ``ReleasePart`` (``end_run``, ``release_run``, ``park_run``, ``suspend_run``,
``record_revocation``). Does not own: starting or claiming runs (``_runs``), the cleanup and
revocation themselves (``environment``, ``workspace.cleanup``), nor deciding to end a run
(``agent/``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from agentloom.kernel._parts import KernelParts, RunLease
from agentloom.results import TerminalRunStatus
from agentloom.store import Op, WriteSet
from agentloom.store.revocations import revocation_put
from agentloom.workspace.cleanup import CleanupResult
from agentloom.workspace.scope import WorkspaceScope

log = logging.getLogger("agentloom.kernel")  # the name its warnings always had


class ReleasePart(KernelParts):
    """``Kernel``'s run endings: terminal status, parking, suspension, revocation receipts."""

    async def end_run(
        self,
        lease: RunLease,
        status: TerminalRunStatus = "succeeded",
        *,
        data: Mapping[str, Any] | None = None,
        with_ops: Sequence[Op] = (),
        scopes: list[WorkspaceScope] | None = None,
    ) -> CleanupResult:
        """Finish a run: record its terminal ``status`` — with ``data`` (the run's facts:
        output, error, steps, …) when given, and ``with_ops`` in the same commit (a session
        turn) — fenced by ``lease``; then revoke and clean its workspace (000 §7.4).
        ``scopes``: the run's workspace scopes as the caller just read them (else read here).

        Raises:
            FencedOut: another holder took the run over; nothing was recorded or cleaned.
            RevisionConflict: an op of ``with_ops`` conflicts; nothing was recorded or
                cleaned, so the caller may try again with other ops.
        """
        facts = {} if data is None else {"data": dict(data)}
        # its scopes lose their write right in the same commit (000 §7.4's first step)
        if scopes is None:
            scopes = self.environment.scopes.scopes_for_run(lease.run_id)
        revoked, scopes = self.environment.cleanup.revoke_ops(scopes)
        try:
            await self._commit_run(lease, {"run_id": lease.run_id, "status": status,
                                           "updated_at": time.time(), **facts}, *with_ops,
                                   *revoked)
        finally:  # its MCP servers stop before its folders are cleaned (or when it was taken over)
            await self._close_mcp(lease.run_id)
        return await self.environment.end_run(lease.run_id, lease.lease_epoch, scopes=scopes)

    async def release_run(self, lease: RunLease, *, data: Mapping[str, Any] | None = None) -> None:
        """Let the run's lease go without ending the run: it stays ``running``, its lease expires
        now, so a worker may resume it (``agent.failures`` records in ``data`` when).

        Raises:
            FencedOut: another holder took the run over; nothing was recorded.
        """
        facts = {} if data is None else {"data": dict(data)}
        try:
            await self._commit_run(lease, {"run_id": lease.run_id, "updated_at": time.time(),
                                           **facts, "lease_expires_at": 0.0})
        finally:  # an MCP session is bound to its lease: the next holder opens its own
            await self._close_mcp(lease.run_id)
        await self.record_revocation(lease)

    async def park_run(self, lease: RunLease, status: str, *,
                       data: Mapping[str, Any]) -> None:
        """Let a run go without ending it: ``waiting`` (for a person's answer) or ``pending``
        (back in the queue). Its lease ends now; its workspace stays for the next holder.

        Raises:
            FencedOut: another holder took the run over; nothing was recorded.
        """
        try:
            await self._commit_run(lease, {"run_id": lease.run_id, "status": status,
                                           "data": dict(data), "updated_at": time.time(),
                                           "lease_expires_at": 0.0})
        finally:  # an MCP session is bound to its lease: the next holder opens its own
            await self._close_mcp(lease.run_id)
        await self.record_revocation(lease)

    async def suspend_run(self, lease: RunLease, *, data: Mapping[str, Any]) -> None:
        """Report a run ``suspended`` (``data.suspended`` says why) under the epoch of its last
        holder, whose lease expired — without taking it: nothing of it runs until
        ``runs resume --force``.

        Raises:
            FencedOut: the run was claimed meanwhile; nothing was recorded.
        """
        await self._commit_run(lease, {"run_id": lease.run_id, "status": "suspended",
                                       "data": dict(data), "updated_at": time.time()})

    async def record_revocation(self, lease: RunLease) -> bool:
        """Stop the run's commands and stdio servers of this lease and record the holder's
        revocation receipt (``revocations``): a takeover of the run waits for it when the
        holder may still be alive (``agent.leases.takeover_verdict``). Whether they are
        confirmed gone; a receipt that cannot be written is logged, never raised (the run was
        let go already)."""
        receipt = await self.environment.revoke(lease.run_id, lease.lease_epoch)
        row = revocation_put(run_id=lease.run_id, lease_epoch=lease.lease_epoch,
                             worker_id=self.worker_id, confirmed=receipt.confirmed,
                             created_at=self.store.now(), killed=receipt.killed)
        try:
            await self.coordinator.commit(WriteSet((row,)))
        except Exception as exc:
            log.warning("run %s: the revocation receipt of epoch %d was not recorded: %s",
                        lease.run_id, lease.lease_epoch, exc)
        return receipt.confirmed
