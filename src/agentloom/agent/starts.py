"""A new run: started in this process now (``start``: its session taken, its workspace made,
its lease held, then driven), or put in the queue for a worker (``submit``: ``pending``).

::

    start(task, session, workdir, wait) ─► occupy session (SESSION_BUSY | wait)
                                        ─► kernel.start_run (WORKSPACE_BUSY | wait) ─► drive
    submit(task, priority)              ─► kernel.submit_run ─► pending, its id returned

Either records what the run was started with: the release and catalog, the config source,
the sandbox backend, the principal's model route (``agent.routes``, F13).

Owns: those two starts and the run data they record. Does not own: a session's slot rules
(``agent.sessions``), the workspace (``environment``), claiming queued runs (``agent.claims``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentloom.agent.driver import RunDriver
from agentloom.agent.handles import LiveRun, RunError, SessionBusy
from agentloom.agent.options import RuntimeOptions
from agentloom.agent.roster import Roster
from agentloom.agent.sessions import SessionView, occupy, release_op
from agentloom.ids import new_id
from agentloom.kernel import Kernel
from agentloom.refs import OwnerRef, Principal
from agentloom.store import WriteSet
from agentloom.store.owners import check_owner
from agentloom.store.runs import get_run
from agentloom.workspace.scope import WorkspaceScopeError

__all__ = ["WORKDIR_POLL_S", "RunStarts"]

log = logging.getLogger(__name__)

WORKDIR_POLL_S = 0.5


class RunStarts:
    """The starts of one runtime's runs, of release ``release_id`` / ``catalog_version``."""

    def __init__(self, kernel: Kernel, roster: Roster, driver: RunDriver,
                 options: RuntimeOptions, *, release_id: str, catalog_version: str) -> None:
        self.kernel = kernel
        self.roster = roster
        self.driver = driver
        self.options = options
        self.release_id = release_id
        self.catalog_version = catalog_version

    def _recorded(self, agent: str, task: str) -> dict[str, Any]:
        """What every new run of ``agent`` records: its release, catalog and config."""
        return {"agent": agent, "task": task, "release_id": self.release_id,
                "catalog_version": self.catalog_version}

    async def start(self, task: str, *, agent: str, session: str | None, run_id: str | None,
                    workdir: Path | str | None, wait: bool,
                    principal: Principal | None) -> LiveRun:
        """``Runtime.start``: see there."""
        limits = self.roster.limits(agent)
        owner = self.roster.owner_of(agent)
        store = self.kernel.store
        if session is not None and agent in self.roster.programs:
            raise RunError(f"{agent} runs without a session (a workflow has no AgentSession); "
                           "leave out the session", code="SESSION_NOT_ALLOWED")
        if session is not None:  # before its session is taken (start_run checks it otherwise)
            check_owner(store, owner)  # OWNER_DELETED
        run_id = run_id or new_id()
        folder = workdir if workdir is not None else self.options.workdir
        if folder is not None and any("exec" in a.tool_keys() for a in self.roster.agents.values()):
            # a folder its commands could not work in is refused before anything starts
            await self.kernel.environment.check_workdir(Path(folder))
        while True:
            view = await self._occupy(session, owner, run_id, task, wait) if session else None
            data = {**self._recorded(agent, task),
                    "deadline": time.time() + limits.run_deadline_s, "session_id": session,
                    "clock_offset_s": store.clock_offset_s(),
                    "session_seen": view.seen if view else None,
                    "sandbox_backend": self.kernel.environment.sandbox_backend}
            if view is not None:
                data["session_slot"] = view.seen
            self._describe(data, agent, principal)
            try:
                lease = await self.kernel.start_run(
                    run_id=run_id, data=data, owner=owner, session_id=session,
                    lease_ttl_s=self.options.workers.lease_ttl_s,
                    keep_workspace=self.options.keep_workspaces, principal=principal,
                    workdir=Path(folder) if folder is not None else None)
                break
            except BaseException as exc:
                if view is not None:  # the run was not created: give the session back
                    await self._release_slot(view, run_id, task)
                if not (isinstance(exc, WorkspaceScopeError) and exc.code == "WORKSPACE_BUSY"
                        and wait):
                    raise
                await asyncio.sleep(WORKDIR_POLL_S)
        data["owner"] = owner.to_dict()
        history: Sequence[Any] = view.history if view else ()
        return self.driver.drive(lease, data, history)

    async def _occupy(self, session: str, owner: OwnerRef, run_id: str, task: str,
                      wait: bool) -> SessionView:
        """Take ``session`` for the run (``agent.sessions.occupy``); while another run holds
        it, wait (``wait``, a holder that is driven) or refuse with ``SESSION_BUSY``."""
        while True:
            taken = await occupy(self.kernel.store, self.kernel.coordinator.commit, session,
                                 owner, run_id=run_id, task=task, worker=self.kernel.worker_id)
            if isinstance(taken, SessionView):
                return taken
            if not wait or taken.state == "interrupted":
                raise SessionBusy(taken.refusal())
            await asyncio.sleep(WORKDIR_POLL_S)

    async def _release_slot(self, view: SessionView, run_id: str, task: str) -> None:
        """Give the session back after a start that created no run. A run that was created
        (its workspace then failed) keeps the slot: it holds the session until it ends."""
        if get_run(self.kernel.store, run_id, lenient=True) is not None:
            return
        try:
            await self.kernel.coordinator.commit(WriteSet((release_op(
                view.session_id, view.seen, run_id=run_id, task=task),)))
        except Exception as exc:  # the slot frees itself: its run does not exist
            log.warning("run %s was not started and could not give session %s back: %s",
                        run_id, view.session_id, exc)

    async def submit(self, task: str, *, agent: str, priority: int, run_id: str | None,
                     principal: Principal | None, facts: Mapping[str, Any] | None) -> str:
        """``Runtime.submit``: see there."""
        self.roster.limits(agent)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise RunError(f"priority must be a whole number, got {priority!r}",
                           code="INVALID_PRIORITY")
        data: dict[str, Any] = {
            **(facts or {}), **self._recorded(agent, task), "session_id": None,
            "submitted_at": time.time()}
        self._describe(data, agent, principal)
        return await self.kernel.submit_run(run_id=run_id, data=data,
                                            owner=self.roster.owner_of(agent),
                                            priority=priority, principal=principal)

    def _describe(self, data: dict[str, Any], agent: str, principal: Principal | None) -> None:
        """Record in a new run's ``data`` its workflow (a program's run), the config it was
        started from, and the model route of the principal's project (none: the release's
        connections) — the one snapshot the run uses to its end (F13)."""
        if agent in self.roster.programs:
            data["workflow"] = self.roster.programs[agent].describe()
        if self.options.config_source is not None:
            data["config"] = self.options.config_source
        routes = self.options.model_routes
        if routes is None or principal is None:
            return
        route = routes.snapshot(principal.project)
        if route is not None:
            data["route"] = route
