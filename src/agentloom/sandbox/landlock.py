"""The Landlock adapter: commands confined by the kernel's Landlock LSM, no binary needed.

Each command is started by a reaper (``_launcher``) and, before ``exec``, applies to
itself: the resource limits, the sandbox uid when the runtime is root, a parent-death
signal, ``no_new_privs``, a Landlock ruleset and the seccomp filter (``seccomp``). The
ruleset handles every filesystem right the kernel knows and grants:

- the work folder: everything; a private temporary folder (``TMPDIR``): everything;
- the runtime (``/usr``, ``/bin``, ``/lib*``, ``/etc/ld.so.cache``, ``/etc/alternatives``)
  and read-only mounts: read and execute; ``/dev/null`` and friends: read and write;
- with ``policy.egress`` the name-resolution and TLS files as well.

Nothing else: no ``/proc``, ``/sys``, ``/tmp``, ``/etc``, home folders. TCP is denied
by Landlock (ABI >= 4) and every ``socket()`` by seccomp unless the policy allows egress;
signals and abstract unix sockets outside the sandbox are scoped away (ABI >= 6).

Unlike bubblewrap there is no mount namespace: the workspace keeps its host path (the
command starts in it; ``/work`` does not exist) and the command shares the host's PID
and IPC namespaces (the kernel hides other processes' ``/proc`` by the rules above).
``docs/sandbox.md`` has the table of what each backend blocks.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentloom.ids import new_id
from agentloom.sandbox import _kernel
from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._launcher import Confinement, LandlockRules, spawn
from agentloom.sandbox._limits import command_rlimits
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox._sweep import sweep
from agentloom.sandbox.bubblewrap import EGRESS_ETC, RUNTIME_ETC, RUNTIME_PATHS
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.identity import sandbox_identity
from agentloom.sandbox.ports import WORK_MOUNT, EnvironmentPolicy, ExecCommand, SandboxHandle
from agentloom.sandbox.seccomp import seccomp_program

ENABLE_HINT = (
    "Landlock needs Linux >= 5.13 with `landlock` in the kernel's lsm= list "
    "(check /sys/kernel/security/lsm)"
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_READ = _kernel.FS_READ_FILE | _kernel.FS_READ_DIR
_READ_EXEC = _READ | _kernel.FS_EXECUTE
_READ_WRITE_FILE = _kernel.FS_READ_FILE | _kernel.FS_WRITE_FILE


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
        self._confinement = Confinement(
            identity=self._identity,
            rlimits=command_rlimits(policy, self._identity),
            seccomp=seccomp_program(deny_sockets=not policy.egress),
        )
        system = [(path, _READ_EXEC) for path in RUNTIME_PATHS if os.path.exists(path)]
        system += [(path, _READ) for path in RUNTIME_ETC + (EGRESS_ETC if policy.egress else ())]
        system += [(path, _READ_WRITE_FILE) for path in DEVICES]
        self._system = tuple(system)

    def self_check(self) -> None:
        """Start one confined ``true``; raise ``SANDBOX_UNAVAILABLE`` if it does not run
        (seccomp or Landlock refused by a container's own filter...)."""
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        tmp = self._private_tmp()
        try:
            rules = self._rules(tmp, tmp, ())
            confinement = Confinement(
                identity=self._identity, rlimits=self._confinement.rlimits,
                landlock=rules, seccomp=self._confinement.seccomp,
            )
            proc = spawn(["true"], env={"PATH": self._policy.path}, cwd=str(tmp), stdout_fd=err_w,
                         stderr_fd=err_w, confinement=confinement)
            os.close(err_w)
            err_w = -1
            proc.wait()  # the reaper of `true` ends at once: it exits or is refused
            why = os.read(err_r, 4096).decode(errors="replace").strip()
        finally:
            for fd in (err_r, err_w):
                if fd >= 0:
                    os.close(fd)
            shutil.rmtree(tmp, ignore_errors=True)
        if proc.returncode != 0:
            raise SandboxError(SANDBOX_UNAVAILABLE,
                               f"Landlock could not start a sandbox: {why or f'exit {proc.returncode}'}")

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        work = handle.scope.work_dir.absolute()
        cwd = work / command.cwd[len(WORK_MOUNT):].lstrip("/")
        tmp = self._private_tmp()
        env = {**env, "TMPDIR": env.get("TMPDIR", str(tmp))}
        confinement = Confinement(
            identity=self._identity, rlimits=self._confinement.rlimits,
            landlock=self._rules(work, tmp, handle.scope.readonly_mounts),
            seccomp=self._confinement.seccomp,
        )
        if command.argv is not None:
            argv = list(command.argv)
        else:
            assert command.shell_script is not None
            argv = ["/bin/sh", "-c", command.shell_script]
        def cleanup() -> None:
            sweep(work, self._command_uid, foreign=handle.scope.foreign)
            shutil.rmtree(tmp, ignore_errors=True)

        return self._make_launch(lambda _fd: argv, env=env, cwd=str(cwd), info_fd=False,
                                 confinement=confinement, cleanup=cleanup)

    def _rules(self, work: Path, tmp: Path, readonly: tuple[tuple[Path, str], ...]) -> LandlockRules:
        everything = _kernel.handled_fs(self.abi)
        rules = [*self._system, (str(work), everything), (str(tmp), everything)]
        rules += [(str(Path(host).absolute()), _READ_EXEC) for host, _ in readonly]
        return LandlockRules(abi=self.abi, rules=tuple(rules), deny_tcp=not self._policy.egress)

    def _private_tmp(self) -> Path:
        tmp = self._spool_dir / f"tmp-{new_id()}"
        tmp.mkdir(mode=0o700)
        if self._identity is not None:
            os.chown(tmp, *self._identity)
        return tmp


def landlock_available() -> bool:
    """True when this kernel enforces Landlock (any ABI)."""
    return _kernel.landlock_abi() >= 1


__all__ = ["LandlockGateway", "landlock_available"]
