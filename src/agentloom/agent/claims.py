"""Taking runs that already exist: resuming one (here, or through the queue), claiming the next
queued one, taking over the ones whose holder died, and giving one back at a step boundary.

::

    resume(run_id, force, queue) ─► checks (release, lease, waiting, suspended, takeover)
                                 ─► claim (compare-and-set on the judged epoch)
                                 ─► drive here | park pending (queue) | take (queued, unbegun)
    claim_next ─► kernel.claim_next (priority, age, caps) ─► take ─► drive
    resume_interrupted ─► spools, cleanups, then every running / takeable suspended run

A lease is judged in the store's clock (``agent.leases``); a claim only succeeds while the run's
epoch is still the one judged, so two workers that judged the same holder gone never both take
it.

Owns: those claims and their refusals (``LEASE_HELD``, ``RELEASE_CHANGED``, ``RUN_WAITING``,
``RUN_SUSPENDED``, ``TAKEOVER_WAITING``). Does not own: the lease rules (``agent.leases``),
the queue's order (``kernel`` / the store), driving (``agent.driver``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentloom.agent.driver import RunDriver
from agentloom.agent.failures import retry_at
from agentloom.agent.handles import LiveRun, RunError, ended_run
from agentloom.agent.leases import (
    WorkerSettings,
    holder_gone,
    is_interrupted,
    lease_left_s,
    rebased,
    takeover_verdict,
)
from agentloom.agent.options import RuntimeOptions
from agentloom.agent.release import release_changed
from agentloom.agent.roster import Roster
from agentloom.agent.sessions import open_session
from agentloom.errors import FencedOut, StoreError
from agentloom.kernel import Kernel, RunLease
from agentloom.refs import OwnerRef
from agentloom.store.records import RunRecord, get_run, runs

__all__ = ["RunClaims", "suspended_refusal", "waiting_refusal"]


class RunClaims:
    """The claims of one runtime on the runs of its store, of release ``release_id`` /
    ``catalog_version``."""

    def __init__(self, kernel: Kernel, roster: Roster, driver: RunDriver,
                 options: RuntimeOptions, *, release_id: str, catalog_version: str) -> None:
        self.kernel = kernel
        self.roster = roster
        self.driver = driver
        self.options = options
        self.release_id = release_id
        self.catalog_version = catalog_version

    @property
    def workers(self) -> WorkerSettings:
        return self.options.workers

    async def resume(self, run_id: str, *, force: bool, queue: bool) -> LiveRun | None:
        """``Runtime.resume`` (``queue``: ``Runtime.requeue``, which returns None)."""
        store = self.kernel.store
        run = get_run(store, run_id)
        if run is None:
            raise RunError(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        live = self.driver.live.get(run_id)
        if live is not None:
            return live
        if run.ended is not None:
            return ended_run(run, run.ended)
        if (run.release_id, run.catalog_version) != (self.release_id, self.catalog_version):
            raise RunError(release_changed(run, self.release_id,
                                           (self.options.config_source or {}).get("snapshot")),
                           code="RELEASE_CHANGED")
        gone = holder_gone(run.lease_owner)
        left = lease_left_s(run, store.now())
        if not force and left > 0 and not gone:
            raise RunError(
                f"run {run_id} is driven by a live process ({run.lease_owner}; its lease "
                f"expires in {left:.0f}s and is renewed while it runs), so it was not taken. "
                f"Wait for it to end, stop it (agentloom runs stop {run_id}), or take it over "
                "with --force (a call it has in flight may then run twice)", code="LEASE_HELD")
        if run.agent is None:
            raise RunError(f"run {run_id} records no agent, so no agent can resume it",
                           code="RUN_NOT_RESUMABLE")
        if run.status == "waiting":
            raise RunError(waiting_refusal(run), code="RUN_WAITING")
        if run.status == "pending":  # queued: take it now, as a worker would
            return None if queue else await self.take(self.claim(run, only_if_expired=not force))
        grace = self.workers.takeover_grace_s
        if run.status == "suspended" and not force and \
                takeover_verdict(store, run, grace)[0] != "take":
            raise RunError(suspended_refusal(run), code="RUN_SUSPENDED")
        if run.status == "running" and not force:
            verdict, why = takeover_verdict(store, run, grace)
            if verdict == "wait":
                raise RunError(f"run {run_id} was not taken over yet: {why}. Try again then, or "
                               "take it over with --force (a call it has in flight may then run "
                               "twice)", code="TAKEOVER_WAITING")
            if verdict == "suspend":
                await self._suspend(run, why)
                raise RunError(suspended_refusal(get_run(store, run_id) or run),
                               code="RUN_SUSPENDED")
        owner = self.roster.owner_of(run.agent)
        view = None
        if run.session_id:
            view = open_session(store, run.session_id, owner, seen=run.session_seen)
        lease = self.claim(run, only_if_expired=not (force or gone))
        if queue:  # the new epoch fences out any old holder; the workers take it from here
            await self.kernel.park_run(lease, "pending", data=dict(run.data))
            return None
        if "deadline" not in run.data:  # claimed from the queue, its holder died before it began
            return await self.take(lease)
        if run.status == "suspended":  # this process goes on with it
            try:
                await self.kernel.update_run(lease, {"status": "running"})
            except FencedOut as exc:  # claimed again meanwhile: it is theirs
                raise RunError(f"run {run_id} was taken by another process meanwhile: {exc}",
                               code="LEASE_HELD") from exc
        return self.driver.drive(lease, rebased(run.data, store.clock_offset_s()),
                                 view.history if view else ())

    def claim(self, run: RunRecord, *, only_if_expired: bool) -> RunLease:
        """Take ``run``'s lease — only while its epoch is still the one just judged (a
        compare-and-set: two workers that judged the same holder gone never both take it).

        Raises:
            RunError: ``LEASE_HELD``: another process took it meanwhile.
        """
        try:
            return self.kernel.claim(run.run_id, lease_ttl_s=self.workers.lease_ttl_s,
                                     only_if_expired=only_if_expired,
                                     expect_epoch=run.lease_epoch)
        except StoreError as exc:
            if exc.code != "LEASE_HELD":
                raise
            raise RunError(f"run {run.run_id} was taken by another process meanwhile (its "
                           f"lease epoch is no longer {run.lease_epoch}), so it was not taken",
                           code="LEASE_HELD") from exc

    async def _suspend(self, run: RunRecord, why: str) -> None:
        """Report an interrupted run ``suspended``: its takeover could not confirm the old
        holder's processes gone. Fenced by the holder's epoch (a claim meanwhile wins); the
        holder, if it lives on, marks it ``running`` again with its next lease renewal."""
        facts = {"reason": why, "at": time.time(), "holder": run.lease_owner,
                 "lease_epoch": run.lease_epoch}
        try:
            await self.kernel.suspend_run(RunLease(run.run_id, run.lease_epoch),
                                          data={**run.data, "suspended": facts})
        except FencedOut:
            pass  # claimed meanwhile: it is someone's run again

    async def resume_interrupted(self) -> tuple[list[LiveRun], list[tuple[str, str]]]:
        """``Runtime.resume_interrupted``: see there."""
        taken: list[LiveRun] = []
        left: list[tuple[str, str]] = []
        environment, store = self.kernel.environment, self.kernel.store
        environment.reclaim_spools()  # output left by runtimes that died
        await environment.cleanup.retry_pending()  # cleanups that failed earlier
        await environment.cleanup.sweep_ended(  # runs that ended, never cleaned
            grace_s=self.workers.lease_ttl_s)
        now = store.now()  # leases are judged in the store's time, whatever ours says
        # a suspended run whose old holder is confirmed gone by now (it died, or recorded its
        # receipt) is taken over like an interrupted one; the others wait for --force
        suspended = [r for r in runs(store, status="suspended")
                     if takeover_verdict(store, r, self.workers.takeover_grace_s,
                                         now)[0] == "take"]
        for run in [*runs(store, status="running"), *suspended]:
            run_id = run.run_id
            if run_id in self.driver.live or (run.running and not is_interrupted(run, now)):
                continue
            if retry_at(run) > now:  # it failed lately: its back-off is not over
                left.append((run_id, "BACKING_OFF"))
                continue
            try:
                live = await self.resume(run_id, force=False, queue=False)
                assert live is not None
                taken.append(live)
            except FencedOut:  # another worker took it between our claim and our first commit
                left.append((run_id, "LEASE_HELD"))
            except (RunError, StoreError) as exc:
                if exc.code not in ("RELEASE_CHANGED", "LEASE_HELD", "TAKEOVER_WAITING",
                                    "RUN_SUSPENDED"):
                    raise
                left.append((run_id, exc.code))
        return taken, left

    def claim_next(self, *, worker_cap: int) -> RunLease | None:
        """``Runtime.claim_next``: see there."""
        return self.kernel.claim_next(
            agents=self.roster.names(), release_id=self.release_id, worker_cap=worker_cap,
            agent_caps=self.workers.max_concurrent_runs, lease_ttl_s=self.workers.lease_ttl_s)

    async def take(self, lease: RunLease) -> LiveRun:
        """``Runtime.take``: see there."""
        store = self.kernel.store
        run = get_run(store, lease.run_id)
        if run is None:
            raise RunError(f"no run {lease.run_id!r} in this store", code="RUN_NOT_FOUND")
        data = rebased(run.data, store.clock_offset_s())  # its times in our clock
        now = time.time()
        owner = OwnerRef(**data["owner"]) if "owner" in data else \
            self.roster.owner_of(str(data.get("agent")))
        if "deadline" not in data:  # its first claim (or one whose holder died before it began)
            limits = self.roster.limits(str(data.get("agent")))
            folder = self.options.workdir
            if lease.workspace_scope_id is None:
                lease = await self.kernel.open_run_workspace(
                    lease, owner=owner, keep=self.options.keep_workspaces,
                    workdir=Path(folder) if folder is not None else None)
            data.update(deadline=now + limits.run_deadline_s, started_at=now)
        waited = data.pop("waiting", None)
        if isinstance(waited, dict) and isinstance(waited.get("since"), int | float):
            data["deadline"] = float(data["deadline"]) + max(0.0, now - waited["since"])
        await self.kernel.update_run(lease, {"data": data, "status": "running"})
        return self.driver.drive(lease, data, ())

    def release_at_next_step(self, run_id: str) -> bool:
        """``Runtime.release_at_next_step``: see there."""
        live = self.driver.live.get(run_id)
        if live is None:
            return False
        live.draining = True
        return True


def suspended_refusal(run: RunRecord) -> str:
    """Why a ``suspended`` run is not resumed, and the one way on."""
    found = run.data.get("suspended")
    reason = found.get("reason") if isinstance(found, dict) else None
    return (f"run {run.run_id} is suspended: {reason or 'its old holder was not confirmed gone'}."
            f" Only `agentloom runs resume {run.run_id} --force` goes on; a call its old holder "
            "had in flight may then run twice (`runs show` lists them under "
            "diagnosis.unknown_calls)")


def waiting_refusal(run: RunRecord) -> str:
    """Why a ``waiting`` run is not resumed, and how to answer it."""
    found = run.data.get("waiting")
    waiting: Mapping[str, Any] = found if isinstance(found, dict) else {}
    question = waiting.get("question") or "a call waits for approval"
    ops = waiting.get("operation_ids") or []
    op = ops[0] if ops else "OPERATION"
    return (f"run {run.run_id} waits for a person's answer ({question}); answer it with "
            f"`agentloom runs approve {run.run_id} {op}` or `agentloom runs reject "
            f"{run.run_id} {op}`, then a worker resumes it")
