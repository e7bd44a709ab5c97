"""What both gateways share: scopes, lease epochs, the execution table, revocation.

A subclass says only how one command is launched (``_launch``) and which mode it
reports. Fencing follows 000 §7.2: the gateway holds each run's current lease epoch;
``ensure`` with a newer epoch first revokes the older ones and refuses to hand the
workspace over when that revocation cannot be confirmed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path

from agentloom.ids import new_id
from agentloom.sandbox._disk import Capped
from agentloom.sandbox._execution import Execution, ExecutionHandleImpl
from agentloom.sandbox._launcher import Confinement
from agentloom.sandbox._spool import SpoolDir
from agentloom.sandbox._supervisor import CONFIRM_TIMEOUT_S, Launch, start
from agentloom.sandbox.env import build_environment, is_stripped
from agentloom.sandbox.errors import (
    DEADLINE_EXCEEDED,
    IMAGE_UNSUPPORTED,
    LEASE_REVOKED,
    REVOCATION_UNCONFIRMED,
    SCOPE_INVALID,
    SHELL_NOT_ALLOWED,
    SPAWN_FAILED,
    UNKNOWN_EXECUTION,
    SandboxError,
)
from agentloom.sandbox.identity import scratch_folder
from agentloom.sandbox.ports import (
    EnvironmentPolicy,
    ExecCommand,
    ExecutionHandle,
    ExecutionOwnerRef,
    ExecutionStatus,
    RevocationReceipt,
    SandboxHandle,
    SandboxMode,
    SandboxScope,
    SandboxView,
)

log = logging.getLogger("agentloom.sandbox")

#: Finished executions kept for ``inspect``; older ones are forgotten first.
HISTORY = 1024
#: The environment variable naming the skills' folder in a command's environment.
SKILLS_ENV = "AGENTLOOM_SKILLS"
SKILLS_ROOT = "/skills"


class ProcessGateway:
    """Base of the process-backed gateways. Not a public extension point."""

    mode: SandboxMode = "unsandboxed"

    def __init__(self, policy: EnvironmentPolicy, *, output_dir: Path) -> None:
        self._policy = policy
        #: The (uid, gid) commands run as, when the runtime is root (set by the adapter).
        self._identity: tuple[int, int] | None = None
        self._output_dir = Path(output_dir).absolute()
        # This gateway's own spool folder, locked for its life; orphans of dead runtimes go.
        self._spool = SpoolDir.create(self._output_dir)
        self._spool_dir = self._spool.path
        self._lock = threading.Lock()
        self._executions: OrderedDict[str, Execution] = OrderedDict()
        self._unconfirmed: dict[str, Execution] = {}  # finished but not provably gone
        self._ever_ran: dict[str, int] = {}  # run_id -> lowest epoch that ever executed
        self._current_epoch: dict[str, int] = {}
        self._revoked_through: dict[str, int] = {}
        #: Other processes of runs (``stdio.StdioServers``): revoked with the executions.
        self._extra_revokers: list[Callable[[str, int], Awaitable[tuple[int, bool]]]] = []
        configured = sorted(name for name in policy.env if is_stripped(name))
        if configured:
            log.warning("sandbox policy lists variables that are never set: %s", ", ".join(configured))

    @property
    def _command_uid(self) -> int:
        """The host uid commands run as."""
        return os.geteuid() if self._identity is None else self._identity[0]

    @property
    def sandbox_mode(self) -> SandboxMode:
        return self.mode

    @property
    def view(self) -> SandboxView:
        """How commands see their folders (``SandboxView``); the adapter decides."""
        return "host"

    def scratch_folder(self, prefix: str) -> Path:
        """A new, empty folder for one command (a hook's, a self-check's) in this gateway's
        spool, given to the uid commands run as (``identity.scratch_folder``)."""
        return scratch_folder(prefix, self._spool_dir)

    @property
    def policy(self) -> EnvironmentPolicy:
        return self._policy

    # -- SandboxGateway --------------------------------------------------------------

    async def ensure(
        self, scope_ref: SandboxScope, image_digest: str | None, lease_epoch: int
    ) -> SandboxHandle:
        if image_digest is not None:
            raise SandboxError(
                IMAGE_UNSUPPORTED,
                f"the {self.mode} gateway runs the host's runtime; image_digest must be None",
                phase="ensure",
            )
        skills_dir = await asyncio.to_thread(self._prepare_scope, scope_ref)
        run_id = scope_ref.run_id
        with self._lock:
            self._check_epoch(run_id, lease_epoch)
            current = self._current_epoch.get(run_id)
        if current is not None and lease_epoch > current:
            receipt = await self.revoke(run_id, lease_epoch - 1)
            if not receipt.confirmed:
                raise SandboxError(
                    REVOCATION_UNCONFIRMED,
                    f"run {run_id}: executions of lease epochs <= {lease_epoch - 1} are not provably "
                    "gone; the workspace is not handed to a new epoch",
                    phase="ensure",
                )
        with self._lock:
            self._check_epoch(run_id, lease_epoch)
            self._current_epoch[run_id] = max(lease_epoch, self._current_epoch.get(run_id, lease_epoch))
        return SandboxHandle(
            handle_id=new_id(),
            scope=scope_ref,
            lease_epoch=lease_epoch,
            image_digest=None,
            sandbox_mode=self.mode,
            view=self.view,
            skills_dir=skills_dir,
        )

    async def execute(
        self, handle: SandboxHandle, command: ExecCommand, owner: ExecutionOwnerRef, deadline: float
    ) -> ExecutionHandle:
        if command.shell_script is not None and not self._policy.allow_shell:
            raise SandboxError(
                SHELL_NOT_ALLOWED, "shell_script is not allowed by this environment policy; use argv"
            )
        timeout = command.timeout_s if command.timeout_s is not None else self._policy.default_timeout_s
        timeout = min(timeout, deadline - time.time())
        if timeout <= 0:
            raise SandboxError(DEADLINE_EXCEEDED, "the run deadline has passed; nothing was started")
        env, stripped = build_environment(self._policy, command.env_patch)
        if handle.skills_dir is not None:
            env[SKILLS_ENV] = handle.skills_dir
        if stripped:
            log.warning(
                "sandbox: not setting %s (loader / shell start-up variables, PATH)", ", ".join(stripped)
            )
        run_id = handle.scope.run_id
        execution = Execution(
            execution_id=new_id(),
            run_id=run_id,
            lease_epoch=handle.lease_epoch,
            owner=owner,
            mode=self.mode,
            timeout_s=timeout,
            env_stripped=stripped,
        )
        launch = self._launch(handle, command, env)
        with self._lock:
            self._check_epoch(run_id, handle.lease_epoch)
            if handle.lease_epoch < self._current_epoch.get(run_id, handle.lease_epoch):
                why = f"run {run_id}: lease epoch {handle.lease_epoch} was superseded"
                raise SandboxError(LEASE_REVOKED, why)
            self._executions[execution.execution_id] = execution
            self._ever_ran[run_id] = min(handle.lease_epoch, self._ever_ran.get(run_id, handle.lease_epoch))
        try:
            await asyncio.wrap_future(start(execution, launch))
        except asyncio.CancelledError:
            execution.kill("terminated")  # the caller is gone: never leave the command running
            raise
        except OSError as exc:
            with self._lock:
                self._executions.pop(execution.execution_id, None)
            raise SandboxError(SPAWN_FAILED, f"could not start the command: {exc.strerror or exc}") from None
        self._trim()
        return ExecutionHandleImpl(execution)

    async def inspect(self, execution_id: str) -> ExecutionStatus:
        return self._get(execution_id).status()

    async def terminate(self, execution_id: str) -> None:
        execution = self._get(execution_id)
        execution.kill("terminated")
        await _wait_done([execution], CONFIRM_TIMEOUT_S + 5.0)

    async def revoke(self, run_id: str, lease_epoch: int) -> RevocationReceipt:
        with self._lock:
            self._revoked_through[run_id] = max(lease_epoch, self._revoked_through.get(run_id, lease_epoch))
            targets = [
                e for e in self._executions.values() if e.run_id == run_id and e.lease_epoch <= lease_epoch
            ]
            targets += [
                e
                for e in self._unconfirmed.values()
                if e.run_id == run_id
                and e.lease_epoch <= lease_epoch
                and e.execution_id not in self._executions
            ]
            ran = self._ever_ran.get(run_id, lease_epoch + 1) <= lease_epoch
        running = [e for e in targets if e.kill("revoked")]
        all_done = await _wait_done(targets, CONFIRM_TIMEOUT_S + 5.0)
        killed = sum(1 for e in running if e.result is not None and e.result.killed_by_revoke)
        confirmed = not ran or (all_done and all(e.recheck_confirmed() for e in targets))
        for extra in self._extra_revokers:
            more, gone = await extra(run_id, lease_epoch)
            killed, confirmed = killed + more, confirmed and gone
        with self._lock:
            for e in targets:
                if e.confirmed:
                    self._unconfirmed.pop(e.execution_id, None)
        return RevocationReceipt(
            run_id=run_id, lease_epoch=lease_epoch, killed=killed, confirmed=confirmed, at=time.time()
        )

    # -- housekeeping ----------------------------------------------------------------

    async def aclose(self) -> None:
        """Kill every running execution and wait for them (best effort, bounded)."""
        with self._lock:
            running = [e for e in self._executions.values() if not e.done.is_set()]
        for execution in running:
            execution.kill("terminated")
        await _wait_done(running, CONFIRM_TIMEOUT_S + 5.0)

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        raise NotImplementedError

    def check_scope(self, scope: SandboxScope) -> None:
        """Refuse a scope whose folders are missing (``SCOPE_INVALID``) or that commands
        could not reach here (``FOLDER_UNREACHABLE``, the adapter's check). A ``managed`` work
        folder root owns (one AgentLoom made) is given to the sandbox uid, ``0700``; no other
        folder is ever changed."""
        if not scope.work_dir.is_dir():
            raise SandboxError(SCOPE_INVALID, f"work_dir {scope.work_dir} is not a directory",
                               phase="ensure")
        if scope.managed and self._identity is not None:
            fd = os.open(scope.work_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                if os.fstat(fd).st_uid == 0:
                    os.fchown(fd, *self._identity)
                    os.fchmod(fd, 0o700)
            finally:
                os.close(fd)
        for host, target in scope.readonly_mounts:
            if not os.path.exists(host):
                raise SandboxError(SCOPE_INVALID, f"mount source for {target} does not exist",
                                   phase="ensure")

    def _prepare_scope(self, scope: SandboxScope) -> str | None:
        """``check_scope``, then where commands see the skills' folder (``SKILLS_ENV``):
        ``/skills`` in a namespace view, else a folder of links named after the skills."""
        self.check_scope(scope)
        skills = [(host, target) for host, target in scope.readonly_mounts
                  if target.startswith(SKILLS_ROOT + "/")]
        if not skills:
            return None
        if self.view == "namespace":
            return SKILLS_ROOT
        return str(self._links(skills) / SKILLS_ROOT.lstrip("/"))

    def _links(self, mounts: list[tuple[Path, str]]) -> Path:
        """A folder of this gateway's spool in which each mount's target (``/skills/a``) is a
        link to its host folder: the read-only mounts at the host's paths, under the names a
        namespace view gives them. Made once per set of mounts, never changed."""
        key = hashlib.sha256(json.dumps(sorted((t, str(Path(h).absolute())) for h, t in mounts))
                             .encode()).hexdigest()[:24]
        folder = self._spool_dir / "links" / key
        if folder.is_dir():
            return folder
        building = Path(tempfile.mkdtemp(prefix=".links-", dir=self._spool_dir))
        os.chmod(building, 0o755)
        for host, target in mounts:
            link = building / target.lstrip("/")
            link.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            link.symlink_to(Path(host).absolute())
        (self._spool_dir / "links").mkdir(mode=0o711, exist_ok=True)
        try:
            os.rename(building, folder)
        except OSError:  # made meanwhile by another thread: the same links
            shutil.rmtree(building, ignore_errors=True)
        return folder

    def _make_launch(
        self,
        argv_for: Callable[[int | None], list[str]],
        *,
        env: dict[str, str],
        cwd: str | None,
        info_fd: bool,
        confinement: Confinement | None = None,
        pass_fds: tuple[int, ...] = (),
        identity: tuple[int, int] | None = None,
        rlimits: tuple[tuple[int, int], ...] = (),
        cleanup: Callable[[], object] | None = None,
        scope: SandboxScope | None = None,
        tmp: Path | None = None,
    ) -> Launch:
        """``scope``: a ``managed`` work folder (one AgentLoom made) is capped at
        ``max_work_bytes``; ``tmp``: a private ``TMPDIR`` outside a tmpfs, capped at
        ``tmp_size_bytes`` (``_disk``)."""
        capped = []
        if scope is not None and scope.managed:
            capped.append(Capped(scope.work_dir.absolute(), self._policy.max_work_bytes,
                                 "the work folder"))
        if tmp is not None:
            capped.append(Capped(tmp, self._policy.tmp_size_bytes, "TMPDIR"))
        return Launch(
            argv_for=argv_for,
            env=env,
            cwd=cwd,
            info_fd=info_fd,
            preview_bytes=self._policy.max_preview_bytes,
            spool_bytes=self._policy.max_spool_bytes,
            spool_dir=self._spool_dir,
            confinement=confinement,
            pass_fds=pass_fds,
            identity=identity,
            rlimits=rlimits,
            cleanup=cleanup,
            capped=tuple(capped),
        )

    def _check_epoch(self, run_id: str, lease_epoch: int) -> None:
        if lease_epoch <= self._revoked_through.get(run_id, lease_epoch - 1):
            raise SandboxError(LEASE_REVOKED, f"run {run_id}: lease epoch {lease_epoch} was revoked")

    def _get(self, execution_id: str) -> Execution:
        with self._lock:
            execution = self._executions.get(execution_id) or self._unconfirmed.get(execution_id)
        if execution is None:
            raise SandboxError(UNKNOWN_EXECUTION, f"no execution {execution_id!r} on this gateway")
        return execution

    def _trim(self) -> None:
        with self._lock:
            finished = [k for k, e in self._executions.items() if e.done.is_set()]
            for key in finished[: max(0, len(finished) - HISTORY)]:
                execution = self._executions.pop(key)
                if not execution.confirmed and execution.result is not None:
                    self._unconfirmed[key] = execution


async def _wait_done(executions: list[Execution], timeout_s: float) -> bool:
    pending = [e for e in executions if not e.done.is_set()]
    if not pending:
        return True
    deadline = time.monotonic() + timeout_s

    def wait_all() -> bool:
        return all(e.done.wait(max(0.0, deadline - time.monotonic())) for e in pending)

    return await asyncio.to_thread(wait_all)
