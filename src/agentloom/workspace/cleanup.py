"""Run-end cleanup and owner deletion of workspace folders (000 §7.4).

At the end of a run: every scope of the run loses its write right, the writers are
revoked (the sandbox must *confirm* that no process of the run is left), ``run.ending``
is announced, every registered non-persistent folder of the run is deleted, and the
result is recorded. Anything that fails — an unconfirmed revocation, an entry that cannot
be deleted — leaves a retryable cleanup job and is never raised: the run has already
ended. Folders are deleted iteratively through descriptors (``_rmtree``), whatever their
depth. Nothing here runs hooks, so no hook can skip it. Persistent folders stay; a scope's
inputs folder (a workflow node's granted files, ``inputs``) goes with a non-persistent folder
(it is in the run's folder) and, beside a persistent one, at the run's end too: a grant is the
run's, never the next run's.

A pending job is tried again by ``retry_pending`` (``agentloom worker`` on each sweep,
``agentloom cleanup`` once). Its back-off is exponential with a cap and recorded on the job
(``data.next_try``), so every process that sweeps the store waits for the same moment. The
job also records the absolute workspace root its folders are under (``data.root``), so any
process of the machine retries it, whatever root its own configuration names.

Owns: ending a run's folders, the cleanup jobs and their back-off, deleting an owner's
folders. Does not own: when a run ends (the kernel) nor how a tree is removed (``_rmtree``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from agentloom.ids import new_id
from agentloom.refs import OwnerRef
from agentloom.results import TERMINAL_RUN_STATUSES
from agentloom.store import cleanup as job_rows
from agentloom.store import scopes as scope_rows
from agentloom.store.cleanup import CleanupJobRecord
from agentloom.store.ports import Fence, Insert, Put, WriteSet
from agentloom.store.runs import get_run
from agentloom.workspace._rmtree import remove_tree
from agentloom.workspace.inputs import inputs_folder
from agentloom.workspace.scope import WorkspaceScope, WorkspaceStore


class Receipt(Protocol):
    """What a sandbox revocation returns; ``confirmed`` only when no process is left."""

    @property
    def confirmed(self) -> bool: ...


Revoker = Callable[[str, int], Awaitable[Receipt]]
Notifier = Callable[[str, dict[str, Any]], None]

BACKOFF_FIRST_S = 10.0
"""Seconds before the first retry of a failed cleanup; doubled after each failed attempt."""
BACKOFF_CAP_S = 3600.0
"""The longest wait between two attempts of one cleanup job."""


def backoff_s(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt: 10 s, 20 s, 40 s, … at most
    an hour."""
    return min(BACKOFF_CAP_S, BACKOFF_FIRST_S * 2.0 ** min(max(attempts - 1, 0), 32))


@dataclass(frozen=True, slots=True)
class CleanupResult:
    """What ending a run did to its folders: ``done``, or ``pending`` with a retryable cleanup
    job, and the folders deleted, kept (persistent) and the errors met."""

    run_id: str
    job_id: str
    state: str  # "done" | "pending"
    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    errors: tuple[str, ...] = field(default=())
    attempts: int = 1
    next_try: float | None = None  # when a pending job is due again (epoch seconds)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``agentloom cleanup --json`` and ``agentloom worker --json`` print it."""
        return {"run_id": self.run_id, "job_id": self.job_id, "state": self.state,
                "attempts": self.attempts, "deleted": list(self.deleted),
                "kept": list(self.kept), "errors": list(self.errors),
                "next_try": self.next_try}


class RunCleanup:
    """Ends a run's workspaces (000 §7.4): removes write rights, revokes the run's processes,
    deletes its non-persistent folders and records the result.

    Never raises for a failure: the run has already ended, so it leaves a retryable job.
    Runs no hooks, so no hook can skip it. Does not delete persistent or bound folders."""

    def __init__(self, scopes: WorkspaceStore, *, revoke: Revoker | None = None,
                 notify: Notifier | None = None, backoff: bool = False) -> None:
        self.scopes = scopes
        self.revoke = revoke
        self.notify = notify
        self.backoff = backoff
        """Whether ``retry_pending`` waits out each job's back-off by default (the worker
        sets it); off, every pending job is tried on each call."""

    def revoke_ops(self, scopes: list[WorkspaceScope]) -> tuple[list[Put], list[WorkspaceScope]]:
        """The rows that take the write right from a run's registered ``scopes``, for the
        commit that ends the run, and the scopes as they are once it is committed (what
        ``end_run`` is given: it then finds nothing left to revoke)."""
        now = time.time()
        ops = [scope_rows.scope_state_put(s.workspace_scope_id, "revoked", updated_at=now)
               for s in scopes if s.state == "registered"]
        return ops, [replace(s, state="revoked") if s.state == "registered" else s
                     for s in scopes]

    async def end_run(self, run_id: str, lease_epoch: int, *, fence: Fence | None = None,
                      job_id: str | None = None,
                      scopes: list[WorkspaceScope] | None = None) -> CleanupResult:
        """Revoke, announce, delete the run's non-persistent folders, record the result.
        ``scopes``: the run's scopes as the caller just read them (else they are read)."""
        previous = job_rows.get_cleanup_job(self.scopes.store, job_id) if job_id else None
        job_id = job_id or new_id()
        recorded = previous.data.get("root") if previous else None
        root = Path(recorded) if recorded else self.scopes.root
        if scopes is None:
            scopes = self.scopes.scopes_for_run(run_id)
        run_scopes = [s for s in scopes if s.state != "deleted"]
        errors: list[str] = []
        try:
            await self.scopes.set_state([s for s in run_scopes if s.state == "registered"],
                                        "revoked", fence)
        except Exception as exc:  # writers may still hold the folders: nothing is deleted
            errors.append(f"revoking the write right failed: {_reason(exc)}")
        if self.revoke is not None:
            try:
                receipt = await self.revoke(run_id, lease_epoch)
                if not receipt.confirmed:
                    errors.append("the sandbox could not confirm that every process of the run "
                                  "is gone; folders are kept until it can")
            except Exception as exc:  # a failed revocation must not lead to deleting
                errors.append(f"revocation failed: {type(exc).__name__}: {exc}")
        if self.notify is not None:
            try:
                self.notify("run.ending", {"run_id": run_id})
            except Exception:  # observers never change the outcome
                pass
        deleted: list[str] = []
        kept: list[str] = []
        if not errors and not _same(root, self.scopes.root) and not root.is_dir():
            errors.append("the workspace root of this job is not on this machine; retry it "
                          "where the run ran")
        if not errors:
            for scope in run_scopes:
                if scope.persistent:
                    try:
                        if (inputs := inputs_folder(root, scope)) is not None:
                            remove_tree(inputs)
                    except Exception as exc:  # the run has ended: a failure is a job
                        errors.append(f"deleting the inputs of scope {scope.workspace_scope_id}: "
                                      f"{_reason(exc)}")
                    kept.append(scope.workspace_scope_id)
                    continue
                try:  # .../runs/<run>/work: the whole run folder goes
                    remove_tree(_folder(self.scopes, scope, root).parent)
                    deleted.append(scope.workspace_scope_id)
                except Exception as exc:  # the run has ended: a failure is a job, never raised
                    errors.append(f"deleting scope {scope.workspace_scope_id}: {_reason(exc)}")
        state = "pending" if errors else "done"
        now = time.time()
        ops: list[Insert | Put] = [scope_rows.scope_state_put(sid, "deleted", updated_at=now)
                                   for sid in deleted]
        attempts = previous.attempts + 1 if previous else 1
        next_try = now + backoff_s(attempts) if errors else None
        ops.append(job_rows.cleanup_job_op(
            new=previous is None, job_id=job_id, run_id=run_id, state=state, attempts=attempts,
            created_at=previous.created_at if previous else now, updated_at=now,
            data={"lease_epoch": lease_epoch, "deleted": deleted, "kept": kept,
                  "errors": errors, "root": str(root.absolute()), "next_try": next_try}))
        # done: a record of what has happened, on the disk with the next synced commit (a
        # power loss can take it and leave folders already deleted); a job left to do is synced
        await self.scopes.coordinator.commit(WriteSet(tuple(ops), sync=bool(errors)))
        return CleanupResult(run_id, job_id, state, tuple(deleted), tuple(kept), tuple(errors),
                             attempts=attempts, next_try=next_try)

    async def retry_pending(self, *, due_only: bool | None = None,
                            now: float | None = None) -> list[CleanupResult]:
        """Try the pending cleanup jobs again, oldest first, and return what each did.

        ``due_only`` (default: ``self.backoff``; the worker's sweep) skips a job whose
        back-off is not over (``data.next_try`` after ``now``); ``agentloom cleanup`` passes
        ``False`` to try every pending job at once. A job that fails again waits twice as long
        before its next due try, at most ``BACKOFF_CAP_S``.
        """
        wait = self.backoff if due_only is None else due_only
        moment = time.time() if now is None else now
        results = []
        for job in self.pending_jobs():
            if wait and float(job.data.get("next_try") or 0.0) > moment:
                continue
            results.append(await self.end_run(job.run_id, int(job.data["lease_epoch"]),
                                              job_id=job.job_id))
        return results

    async def sweep_ended(self, *, grace_s: float = 60.0,
                          now: float | None = None) -> list[CleanupResult]:
        """Clean the runs that ended without a cleanup record (the process died between the
        commit that ended the run and its cleanup): every run whose non-persistent scopes are
        not ``deleted`` although the run is over (``succeeded``, ``failed``, ``cancelled``,
        ``timed_out``) since more than ``grace_s`` — the process that ended it has long
        finished its own cleanup if it lived — and no pending job covers it. Returns what each
        cleanup did."""
        store = self.scopes.store
        moment = time.time() if now is None else now
        ended: dict[str, int | None] = {}  # run -> its lease epoch when it ended long enough ago
        for state in ("registered", "revoked"):
            for scope in scope_rows.scopes_where(store, state=state, persistent=False):
                run_id = str(scope.run_id)
                if run_id not in ended:
                    run = get_run(store, run_id, lenient=True)
                    over = (run is not None and run.stored_status in TERMINAL_RUN_STATUSES
                            and moment - float(run.updated_at) > grace_s)
                    ended[run_id] = run.lease_epoch if over and run else None
        pending = {str(job.run_id) for job in self.pending_jobs()}
        return [await self.end_run(run_id, epoch) for run_id, epoch in ended.items()
                if epoch is not None and run_id not in pending]

    def pending_jobs(self) -> list[CleanupJobRecord]:
        """The cleanup jobs still ``pending``, oldest first."""
        return job_rows.pending_cleanup_jobs(self.scopes.store)

    async def delete_owner(self, owner: OwnerRef) -> list[str]:
        """Delete an owner's folders (000 §7.4): the processes of its runs that still hold a
        registered scope are revoked — an unconfirmed revocation raises and deletes nothing —
        every scope of it is marked deleted, and its file root folder and its system folder
        (its file blobs) are removed. A bound folder (the user's) is never deleted. Returns
        the ids of its scopes. ``agent.owners.delete_owner`` calls it once the owner's runs
        have stopped, before it deletes the owner's rows."""
        scopes = [WorkspaceScope.from_record(r) for r in scope_rows.scopes_where(
            self.scopes.store, owner_kind=owner.kind, owner_id=owner.id)]
        for run_id in sorted({s.run_id for s in scopes if s.state == "registered"}):
            if self.revoke is not None:
                receipt = await self.revoke(run_id, 1 << 62)
                if not receipt.confirmed:
                    raise RuntimeError(f"run {run_id}: cannot confirm its processes are gone; "
                                       "owner deletion suspended")
        await self.scopes.set_state([s for s in scopes if s.state != "deleted"], "deleted")
        root = scope_rows.file_root_id(self.scopes.store, owner.kind, owner.id)
        if root is not None:
            owners = "workflows" if owner.kind == "workflow" else "agents"
            remove_tree(self.scopes.root / owners / root)
            remove_tree(self.scopes.root / "system" / owners / root)
        return [s.workspace_scope_id for s in scopes]


def _folder(scopes: WorkspaceStore, scope: WorkspaceScope, root: Path) -> Path:
    """The host folder of ``scope`` under the job's workspace ``root``."""
    if scope.bound_path is not None:
        return Path(scope.bound_path)
    return scopes.path(scope) if _same(root, scopes.root) else root / scope.relative_path


def _same(a: Path, b: Path) -> bool:
    return a.absolute() == b.absolute()


def _reason(exc: Exception) -> str:
    """A failure as a cleanup job records it: no traceback, no host path."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"
