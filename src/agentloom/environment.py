"""The execution environment of runs: workspaces, the file tools, the sandbox, cleanup.

Assembled by the ``Kernel`` from the shared root (default ``.agentloom/workspaces``) and
an environment policy. The sandbox gateway is created on first use of ``exec``: with
bubblewrap when present; without it, only when ``allow_unsandboxed`` was given — and then
it is reported loudly here and in every exec result.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from agentloom.catalog import CapabilitySpec
from agentloom.errors import ConfigError
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.refs import OwnerRef
from agentloom.sandbox import EnvironmentPolicy, RevocationReceipt, SandboxGateway, make_gateway
from agentloom.store import Store
from agentloom.store.ports import Fence
from agentloom.tools.builtin.exec import ExecHandler, exec_spec
from agentloom.tools.builtin.fs import SCHEMAS, FsHandler, fs_spec
from agentloom.workspace.blobs import FileBlobStore
from agentloom.workspace.cleanup import CleanupResult, Notifier, RunCleanup
from agentloom.workspace.resolver import WorkspaceResolver
from agentloom.workspace.scope import WorkspaceScope, WorkspaceStore
from agentloom.workspace.service import WorkspaceService

log = logging.getLogger("agentloom.environment")

BUILTIN_TOOLS = (*SCHEMAS, "exec")


class RunEnvironment:
    def __init__(
        self,
        store: Store,
        coordinator: CommitCoordinator,
        *,
        root: Path,
        policy: EnvironmentPolicy | None = None,
        allow_unsandboxed: bool = False,
        notify: Notifier | None = None,
    ) -> None:
        self.root = Path(root).absolute()
        self.policy = policy or EnvironmentPolicy()
        self.allow_unsandboxed = allow_unsandboxed
        self.scopes = WorkspaceStore(store, coordinator, self.root)
        self.service = WorkspaceService()
        self.resolver = WorkspaceResolver(self.scopes, self.service)
        self.blobs = FileBlobStore(self.root)
        self._gateway: SandboxGateway | None = None
        self.cleanup = RunCleanup(self.scopes, revoke=self._revoke, notify=notify)

    @property
    def gateway(self) -> SandboxGateway:
        if self._gateway is None:
            gateway = make_gateway(self.policy, allow_unsandboxed=self.allow_unsandboxed,
                                   output_dir=self.root / "system" / "spool")
            if gateway.sandbox_mode != "bubblewrap":
                log.warning("exec runs UNSANDBOXED (allow_unsandboxed=True): commands can "
                            "reach the whole machine; install bubblewrap to isolate them")
            self._gateway = gateway
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
        fence: Fence | None,
    ) -> WorkspaceScope:
        """The run's scope: a persistent session folder, or a per-invocation one."""
        if session_id is not None:
            return await self.scopes.register(
                owner=owner, run_id=run_id, fence=fence, persistent=True,
                partition_kind="workflow_session" if owner.kind == "workflow"
                else "agent_session", partition_id=session_id)
        return await self.scopes.register(
            owner=owner, run_id=run_id, fence=fence, persistent=False,
            partition_kind="invocation", partition_id=invocation_id,
            invocation_id=invocation_id)

    async def end_run(self, run_id: str, lease_epoch: int) -> CleanupResult:
        return await self.cleanup.end_run(run_id, lease_epoch)

    async def _revoke(self, run_id: str, lease_epoch: int) -> RevocationReceipt:
        if self._gateway is None:  # nothing was ever started
            return RevocationReceipt(run_id=run_id, lease_epoch=lease_epoch, killed=0,
                                     confirmed=True, at=time.time())
        return await self._gateway.revoke(run_id, lease_epoch)
