"""The execution environment of runs: workspaces, the file tools, the sandbox, cleanup.

Assembled by the ``Kernel`` from the shared root (default
``folders.default_workspace_root``: outside the project), an
environment policy and a sandbox backend. The sandbox gateway is created on the first
``exec`` call (``make_gateway``), not when the tool is published: where no backend is
usable, agents still start and run, and only ``exec`` fails (``SANDBOX_UNAVAILABLE``, a
failed tool result naming both fixes). ``backend="none"`` runs commands unconfined; every
exec result then says ``sandboxed: false``.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agentloom.catalog import CapabilitySpec
from agentloom.errors import ConfigError
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.refs import OwnerRef
from agentloom.sandbox import (
    EnvironmentPolicy,
    RevocationReceipt,
    SandboxError,
    SandboxGateway,
    SandboxScope,
    make_gateway,
    reclaim_spools,
    sandbox_identity,
)
from agentloom.sandbox.ports import SandboxBackend
from agentloom.sandbox.reach import workspace_root_for
from agentloom.store import Store
from agentloom.store.ports import Fence, Insert, Put
from agentloom.tools.builtin.exec import ExecHandler, exec_spec
from agentloom.tools.builtin.fs import SCHEMAS, FsHandler, fs_spec
from agentloom.workspace.blobs import FileBlobStore
from agentloom.workspace.cleanup import CleanupResult, Notifier, RunCleanup
from agentloom.workspace.resolver import WorkspaceResolver
from agentloom.workspace.scope import WorkspaceScope, WorkspaceStore
from agentloom.workspace.service import WorkspaceService

BUILTIN_TOOLS = (*SCHEMAS, "exec")


class RunEnvironment:
    """The execution environment the ``Kernel`` gives its runs: workspace scopes and folders,
    the file tools, ``exec`` through the sandbox gateway, the blob store and run-end cleanup.

    Owns: opening a run's workspace, publishing the built-in tools, creating the sandbox gateway
    on first ``exec``, ending a run's folders. Does not own: the pipeline, hooks or the run's
    lifecycle (the kernel and the agent layer call it)."""

    def __init__(
        self,
        store: Store,
        coordinator: CommitCoordinator,
        *,
        root: Path,
        policy: EnvironmentPolicy | None = None,
        sandbox_backend: SandboxBackend = "auto",
        notify: Notifier | None = None,
    ) -> None:
        # Where commands reach it: as root without a mount namespace, a root below a folder
        # the sandbox uid cannot search is moved (``sandbox.reach.workspace_root_for``).
        self.root = workspace_root_for(Path(root), confined=sandbox_backend != "none")
        self.policy = policy or EnvironmentPolicy()
        self.sandbox_backend: SandboxBackend = sandbox_backend
        # As root, commands run as the sandbox uid, which owns what it may write.
        owner = sandbox_identity()
        self.scopes = WorkspaceStore(store, coordinator, self.root, content_owner=owner)
        self.service = WorkspaceService(content_owner=owner)
        self.spool_dir = self.root / "system" / "spool"
        self.reclaim_spools()
        self.resolver = WorkspaceResolver(self.scopes, self.service)
        self.blobs = FileBlobStore(self.root)
        self._gateway: SandboxGateway | None = None
        self._gateway_lock = threading.Lock()
        self._unconfirmed: set[str] = set()  # runs whose revocation was not confirmed
        self.cleanup = RunCleanup(self.scopes, revoke=self._revoke, notify=notify)

    async def gateway(self) -> SandboxGateway:
        """The sandbox gateway, made on first use (its probe runs in a thread) and kept.

        Raises:
            SandboxError: ``SANDBOX_UNAVAILABLE`` when the backend asked for is not usable
                here; asked again on the next call (a backend installed meanwhile is found).
        """
        if self._gateway is not None:
            return self._gateway
        return await asyncio.to_thread(self._make_gateway)

    def _make_gateway(self) -> SandboxGateway:
        with self._gateway_lock:  # two first calls at once make one gateway, not two
            if self._gateway is None:
                self._gateway = make_gateway(self.policy, backend=self.sandbox_backend,
                                             output_dir=self.spool_dir)
            return self._gateway

    def builtin(self, name: str, resource_version_id: str) -> tuple[CapabilitySpec,
                                                                     CapabilityHandler]:
        if name in SCHEMAS:
            return fs_spec(name, resource_version_id), FsHandler(name, self.resolver)
        if name == "exec":
            return exec_spec(resource_version_id), ExecHandler(self.gateway, self.resolver,
                                                               self.blobs)
        raise ConfigError(f"unknown built-in tool {name!r}; built-ins: {list(BUILTIN_TOOLS)}")

    async def open_workspace(
        self, *, owner: OwnerRef, run_id: str, session_id: str | None, invocation_id: str,
        fence: Fence | None, workdir: Path | None = None, keep: bool = False,
        busy: Callable[[str], bool] = lambda run_id: True,
    ) -> WorkspaceScope:
        """The run's scope: a folder of the user's (``workdir``, refused while a run for
        which ``busy`` holds it), a persistent session folder, or a per-invocation one
        (a workflow's: its WorkflowSession folder of the run), kept after the run with
        ``keep``."""
        if workdir is not None:
            return await self.scopes.bind(owner=owner, run_id=run_id, folder=workdir,
                                          busy=busy, fence=fence)
        return await self.scopes.settle(*await self.plan_workspace(
            owner=owner, run_id=run_id, session_id=session_id, invocation_id=invocation_id,
            keep=keep), fence=fence)

    async def plan_workspace(
        self, *, owner: OwnerRef, run_id: str, session_id: str | None, invocation_id: str,
        keep: bool = False, new_run: bool = False,
    ) -> tuple[WorkspaceScope, list[Insert | Put]]:
        """The scope ``open_workspace`` registers without ``workdir`` — a session's persistent
        folder, or a per-invocation one (a workflow's: its WorkflowSession folder of the run),
        kept with ``keep`` — and its rows, for the caller to commit (a new run commits them
        with its own row, in one commit; ``open_workspace`` through ``scopes.settle``), then
        ``scopes.ensure_folder`` when it needs the folder."""
        if session_id is not None:
            return await self.scopes.plan(
                new_run=new_run, owner=owner, run_id=run_id, persistent=True,
                partition_kind="workflow_session" if owner.kind == "workflow"
                else "agent_session", partition_id=session_id)
        if owner.kind == "workflow":  # a workflow run's own WorkflowSession folder (000 §7.1)
            return await self.scopes.plan(
                new_run=new_run, owner=owner, run_id=run_id, persistent=keep,
                partition_kind="workflow_session", partition_id=run_id)
        return await self.scopes.plan(
            new_run=new_run, owner=owner, run_id=run_id, persistent=keep,
            partition_kind="invocation", partition_id=invocation_id,
            invocation_id=invocation_id)

    async def end_run(self, run_id: str, lease_epoch: int, *,
                      scopes: list[WorkspaceScope] | None = None) -> CleanupResult:
        return await self.cleanup.end_run(run_id, lease_epoch, scopes=scopes)

    async def check_workdir(self, folder: Path) -> None:
        """Refuse, before a run starts, a folder of the user's that its commands could not
        work in here (``FOLDER_UNREACHABLE``: a root-owned folder, or one below a folder the
        sandbox uid cannot search, where no mount namespace can be made); nothing when no
        sandbox is usable (``exec`` reports that itself) or commands run unconfined."""
        if self.sandbox_backend == "none" or sandbox_identity() is None:
            return
        try:
            gateway = await self.gateway()
        except SandboxError:
            return
        scope = SandboxScope(workspace_scope_id="workdir", run_id="workdir", work_dir=folder)

        def check() -> None:
            if folder.is_dir():  # a missing one is the workspace's to report (WORKDIR_NOT_FOUND)
                gateway.check_scope(scope)

        await asyncio.to_thread(check)

    def reclaim_spools(self) -> int:
        """Delete the output spools of runtimes that died (``kill -9``) under this root;
        done at start-up and by the worker on each sweep. Returns how many were deleted."""
        return reclaim_spools(self.spool_dir)

    def revocation_confirmed(self, run_id: str) -> bool:
        """False while the sandbox could not confirm that every command of ``run_id`` is
        gone (its last revocation); true once one did, or when nothing ever ran."""
        return run_id not in self._unconfirmed

    async def revoke(self, run_id: str, lease_epoch: int) -> RevocationReceipt:
        """Stop every command and stdio server of ``run_id`` up to ``lease_epoch`` (a holder
        letting the run go) and say whether they are confirmed gone."""
        return await self._revoke(run_id, lease_epoch)

    async def _revoke(self, run_id: str, lease_epoch: int) -> RevocationReceipt:
        receipt = await _revoke_stdio_servers(run_id, lease_epoch)
        if self._gateway is not None:  # else no exec command was ever started
            commands = await self._gateway.revoke(run_id, lease_epoch)
            receipt = RevocationReceipt(
                run_id=run_id, lease_epoch=lease_epoch, killed=receipt.killed + commands.killed,
                confirmed=receipt.confirmed and commands.confirmed, at=commands.at)
        if receipt.confirmed:
            self._unconfirmed.discard(run_id)
        else:
            self._unconfirmed.add(run_id)
        return receipt


async def _revoke_stdio_servers(run_id: str, lease_epoch: int) -> RevocationReceipt:
    """The run's MCP stdio servers that are still running (their sessions were not closed):
    stopped with the run's commands. Nothing is imported unless MCP was used."""
    if "agentloom.mcp.sandboxed" not in sys.modules:
        return RevocationReceipt(run_id=run_id, lease_epoch=lease_epoch, killed=0,
                                 confirmed=True, at=time.time())
    from agentloom.mcp.sandboxed import revoke_run

    return await revoke_run(run_id, lease_epoch)
