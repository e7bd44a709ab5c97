"""The Landlock adapter: commands confined by the kernel's Landlock LSM, no binary needed.

Each command is started by a reaper (``_launcher``) and, before ``exec``, applies to
itself: the resource limits, the sandbox uid when the runtime is root, a parent-death
signal, ``no_new_privs``, a Landlock ruleset and the seccomp filter (``seccomp``). The
ruleset handles every filesystem right the kernel knows and grants only what the command
needs: its work folder and a private temporary folder (everything), the runtime, the
read-only mounts and a few ``/etc`` files (read, execute), the devices (``_layout``).

Two views (``SandboxView``), chosen once by ``self_check``:

- ``namespace`` — the runtime is root and may make a mount namespace (``CAP_SYS_ADMIN``: a VM,
  CI, a privileged container): the command first enters a root of its own (``_view``) holding
  only what the ruleset grants, at bubblewrap's places — ``/work``, ``/skills/<name>``,
  ``/resources/...``, a private ``/tmp`` — so the folders above them never matter, and a
  folder the sandbox uid could not use as it is (a repository root owns) is bound idmapped.
- ``host`` — anywhere else (a normal user; root in a default container): the command runs at
  the host's paths, starting in its work folder, with ``TMPDIR`` a private folder. As root,
  every folder above what it needs must be searchable by its uid, and a folder of the user's
  is worked in as its owner (``reach``); what cannot work is refused before it starts.

TCP is denied by Landlock (ABI >= 4) and every ``socket()`` by seccomp unless the policy
allows egress; signals and abstract unix sockets outside the sandbox are scoped away (ABI
>= 6). The command shares the host's PID and IPC namespaces. ``docs/sandbox.md`` has the
table of what each backend blocks and the shapes each view serves.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from agentloom.ids import new_id
from agentloom.sandbox import _kernel, _layout, reach
from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._launcher import Confinement, LandlockRules, View, spawn
from agentloom.sandbox._layout import READ_EXEC
from agentloom.sandbox._limits import command_rlimits
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox._sweep import sweep
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.identity import sandbox_identity
from agentloom.sandbox.ports import (
    WORK_MOUNT,
    EnvironmentPolicy,
    ExecCommand,
    SandboxHandle,
    SandboxScope,
    SandboxView,
)
from agentloom.sandbox.seccomp import seccomp_program

log = logging.getLogger("agentloom.sandbox")

ENABLE_HINT = (
    "Landlock needs Linux >= 5.13 with `landlock` in the kernel's lsm= list "
    "(check /sys/kernel/security/lsm)"
)
_PRIVATE = ("/tmp", "/dev/shm")


class LandlockGateway(ProcessGateway):
    """``SandboxGateway`` on Landlock + seccomp: see the module docstring.

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE`` when the kernel has no Landlock.
    """

    mode = "landlock"

    def __init__(self, policy: EnvironmentPolicy, *, output_dir: Path) -> None:
        self.abi = _kernel.landlock_abi()
        if self.abi < 1:
            why = f"Landlock is not available in this kernel: {ENABLE_HINT}"
            raise SandboxError(SANDBOX_UNAVAILABLE, why)
        super().__init__(policy, output_dir=output_dir)
        self._identity = sandbox_identity()
        self._seccomp = seccomp_program(deny_sockets=not policy.egress)
        self._system = tuple(_layout.system_rules(egress=policy.egress))
        #: A namespace view's root without the command's folders: built ahead by the zygote.
        self._static = tuple(_layout.static_entries(egress=policy.egress,
                                                    tmp_size=policy.tmp_size_bytes))
        # As root where a mount namespace can be made, a view of its own (``self_check``
        # falls back to the host's paths if entering one fails).
        self._view: SandboxView = ("namespace" if self._identity is not None
                                   and reach.can_make_mount_namespace() else "host")

    @property
    def view(self) -> SandboxView:
        return self._view

    def self_check(self) -> None:
        """Start one confined ``true``; raise ``SANDBOX_UNAVAILABLE`` if it does not run
        (seccomp or Landlock refused by a container's own filter...). As root, first in a
        namespace view; where root may not make a mount namespace, at the host's paths."""
        if self._view == "namespace":
            try:
                self._check("namespace")
            except SandboxError as exc:
                log.info("sandbox: Landlock at the host's paths (no mount namespace: %s)",
                         exc.error.message)
                self._view = "host"
            else:
                return
        self._check("host")

    def _check(self, view: SandboxView) -> None:
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        scratch = self.scratch_folder("check-")
        try:
            scope = SandboxScope(workspace_scope_id="check", run_id="check", work_dir=scratch,
                                 managed=True)
            argv, env, cwd, confinement, _ = self._plan(scope, view, ("true",), {}, WORK_MOUNT)
            proc = spawn(argv, env=env, cwd=cwd, stdout_fd=err_w, stderr_fd=err_w,
                         confinement=confinement)
            os.close(err_w)
            err_w = -1
            proc.wait()  # the reaper of `true` ends at once: it exits or is refused
            why = os.read(err_r, 4096).decode(errors="replace").strip()
        finally:
            for fd in (err_r, err_w):
                if fd >= 0:
                    os.close(fd)
            shutil.rmtree(scratch, ignore_errors=True)
        if proc.returncode != 0:
            raise SandboxError(SANDBOX_UNAVAILABLE,
                               f"Landlock could not start a sandbox: {why or f'exit {proc.returncode}'}")

    def check_scope(self, scope: SandboxScope) -> None:
        super().check_scope(scope)
        if self._view == "host" and self._identity is not None:
            identity = reach.host_identity(scope.work_dir, self._identity, managed=scope.managed)
            reach.check_reach([(scope.work_dir, reach.R | reach.W | reach.X),
                               *((host, reach.R | reach.X) for host, _ in scope.readonly_mounts),
                               (self._spool_dir, reach.X)],  # its private TMPDIR is below
                              identity)

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        if command.argv is not None:
            argv: tuple[str, ...] = command.argv
        else:
            assert command.shell_script is not None
            argv = ("/bin/sh", "-c", command.shell_script)
        scope = handle.scope
        started = time.time()
        argv_list, env, cwd, confinement, cleanup = self._plan(scope, self._view, argv, env,
                                                               command.cwd)
        owner = confinement.identity[0] if confinement.identity is not None else os.geteuid()
        if confinement.view is not None:  # files made through an idmapped /work are its owner's
            work = confinement.view.dynamic[0]
            owner = work["idmap"][0] if work.get("idmap") else owner

        def done() -> None:
            sweep(scope.work_dir.absolute(), owner, managed=scope.managed, since=started)
            cleanup()

        tmp = env.get("TMPDIR", "")  # the host view's private folder (a namespace view: a tmpfs)
        private = confinement.view is None and Path(tmp).parent == self._spool_dir
        return self._make_launch(lambda _fd: argv_list, env=env, cwd=cwd, info_fd=False,
                                 confinement=confinement, cleanup=done, scope=scope,
                                 tmp=Path(tmp) if private else None)

    def _plan(self, scope: SandboxScope, view: SandboxView, argv: tuple[str, ...],
              env: dict[str, str], cwd: str
              ) -> tuple[list[str], dict[str, str], str, Confinement, Callable[[], object]]:
        """How one command starts under ``view``: argv, environment, working directory (a
        sandbox path, ``/work/...``), confinement, and what to remove afterwards."""
        work = scope.work_dir.absolute()
        everything = _kernel.handled_fs(self.abi)
        if view == "namespace":
            assert self._identity is not None
            binds: list[_layout.Bind] = [(str(work), WORK_MOUNT, True, reach.idmap_owner(
                work, self._identity, writable=True))]
            binds += [(str(Path(host).absolute()), target, False,
                       reach.idmap_owner(Path(host), self._identity, writable=False))
                      for host, target in scope.readonly_mounts]
            rules = [*self._system, *((p, everything) for p in (*_PRIVATE, WORK_MOUNT))]
            rules += [(target, READ_EXEC) for _, target in scope.readonly_mounts]
            # ``ls /skills`` lists the skills, as under bubblewrap (the folder holds no more)
            rules += [(top, _layout.READ) for top in sorted({"/" + target.split("/")[1]
                                                             for _, target in scope.readonly_mounts})]
            confinement = Confinement(
                identity=self._identity, rlimits=command_rlimits(self._policy, self._identity),
                landlock=LandlockRules(abi=self.abi, rules=tuple(rules),
                                       deny_tcp=not self._policy.egress),
                seccomp=self._seccomp,
                view=View(static=self._static, dynamic=tuple(_layout.bind_entries(binds))))
            return list(argv), env, cwd, confinement, _nothing
        identity = (None if self._identity is None
                    else reach.host_identity(work, self._identity, managed=scope.managed))
        tmp = self._private_tmp(identity)
        env = {**env, "TMPDIR": env.get("TMPDIR", str(tmp))}
        rules = [*self._system, (str(work), everything), (str(tmp), everything)]
        rules += [(str(Path(host).absolute()), READ_EXEC) for host, _ in scope.readonly_mounts]
        links = self._spool_dir / "links"
        if scope.readonly_mounts and links.is_dir():
            rules.append((str(links), _layout.READ))
        confinement = Confinement(
            identity=identity, rlimits=command_rlimits(self._policy, identity),
            landlock=LandlockRules(abi=self.abi, rules=tuple(rules),
                                   deny_tcp=not self._policy.egress),
            seccomp=self._seccomp)
        host_cwd = str(work / cwd[len(WORK_MOUNT):].lstrip("/"))
        return list(argv), env, host_cwd, confinement, lambda: shutil.rmtree(tmp, ignore_errors=True)

    def _private_tmp(self, identity: tuple[int, int] | None) -> Path:
        tmp = self._spool_dir / f"tmp-{new_id()}"
        tmp.mkdir(mode=0o700)
        if identity is not None:
            os.chown(tmp, *identity)
        return tmp


def _nothing() -> None:
    return None


def landlock_available() -> bool:
    """True when this kernel enforces Landlock (any ABI)."""
    return _kernel.landlock_abi() >= 1


__all__ = ["LandlockGateway", "landlock_available"]
