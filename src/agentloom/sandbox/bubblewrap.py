"""The bubblewrap adapter: every command in fresh namespaces, as uid 65534, with only
``/work`` writable. What each flag is for is in ``docs/sandbox.md``.

Facts this module relies on (checked on bubblewrap 0.8, see research §3 and §6): run as
root without ``--uid`` the sandbox keeps its capabilities; open fds pass straight
through; ``--setenv LD_PRELOAD`` is honoured by ld.so; nested user namespaces need
``--disable-userns``; killing the launcher (PID namespace + ``--die-with-parent``)
kills every process inside.

Started by root, bubblewrap itself runs as the unprivileged sandbox uid (``identity``)
with an unprivileged user namespace, so the sandbox's uid 65534 is host uid 65534, never
root: nothing it leaves in the workspace can be setuid root, and ``RLIMIT_NPROC`` is
counted. bubblewrap resolves mount sources by path as that uid, which cannot search
``/root``; so root starts it through a reaper of the zygote whose command process first
stages the sources in a private mount namespace (``_staged``). Where root cannot (no
``CAP_SYS_ADMIN``), bubblewrap is started directly and every folder above the work folder
must be searchable by that uid (the workspace root's folders are 0711). Every command also
runs under the seccomp filter of ``seccomp`` (``--seccomp``) and the policy's rlimits.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from agentloom.sandbox import _layout, reach
from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._execution import readable
from agentloom.sandbox._launcher import Confinement, StagedBwrap, spawn
from agentloom.sandbox._limits import apply_rlimits, command_rlimits
from agentloom.sandbox._reaper import BWRAP_SECCOMP_FD
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox._sweep import sweep
from agentloom.sandbox._view import staged_path
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.identity import SANDBOX_UID, sandbox_identity
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

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora: `dnf install bubblewrap`)"
)
MIN_VERSION = (0, 8)  # --disable-userns and --size first appear in 0.8.0
SANDBOX_HOSTNAME = "sandbox"
SELF_CHECK_TIMEOUT_S = 30.0

class BubblewrapGateway(ProcessGateway):
    """``SandboxGateway`` on bubblewrap (``bwrap``): see the module docstring.

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE`` when ``bwrap`` is missing or older than 0.8.
    """

    mode = "bubblewrap"

    def __init__(self, policy: EnvironmentPolicy, *, output_dir: Path, bwrap: str = "bwrap") -> None:
        super().__init__(policy, output_dir=output_dir)
        found = shutil.which(bwrap)
        if found is None:
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap ({bwrap!r}) was not found: {INSTALL_HINT}")
        self._bwrap = found
        self.version = _version(found)
        if self.version < MIN_VERSION:
            raise SandboxError(
                SANDBOX_UNAVAILABLE,
                f"bubblewrap {'.'.join(map(str, self.version))} is too old (need >= 0.8 for "
                f"--disable-userns): {INSTALL_HINT}",
            )
        self._runtime = _layout.bwrap_runtime_args(egress=policy.egress)
        self._identity = sandbox_identity()
        self._rlimits = command_rlimits(policy, self._identity)
        self._seccomp = seccomp_program(deny_sockets=False)  # the network namespace is empty
        self._stage = self._identity is not None  # root: stage the bind sources (``_staged``)

    def self_check(self) -> None:
        """Start one sandbox running ``true`` on a folder beside the workspaces; raise
        ``SANDBOX_UNAVAILABLE`` if it fails (no user namespaces in this container, a
        seccomp profile refusing mounts...).

        Run as root, the sources are staged (``_staged``) so that bubblewrap, running as the
        sandbox uid, reaches folders below ones it cannot search (``/root``). Where root may
        not make a mount namespace (no ``CAP_SYS_ADMIN``), bubblewrap is started directly as
        that uid instead, and every folder above the workspaces must then be searchable."""
        work = self._spool_dir / "self-check"
        work.mkdir(mode=0o700, exist_ok=True)
        if self._identity is not None:
            os.chown(work, *self._identity)
        binds = _binds(work, (), None)
        if self._identity is None:
            self._check(binds, staged=False)
            return
        try:
            self._check(binds, staged=True)
        except SandboxError as staged_failed:
            try:
                self._check(binds, staged=False)
            except SandboxError as direct_failed:
                raise SandboxError(SANDBOX_UNAVAILABLE, (
                    f"{staged_failed.error.message} (with its bind sources staged by root); "
                    f"started directly as uid {self._identity[0]}: {direct_failed.error.message}"
                    f" — every folder above {self._output_dir} must be searchable by that uid, "
                    "e.g. chmod o+x")) from None
            log.warning("sandbox: root cannot stage bubblewrap's bind sources (%s); bubblewrap "
                        "is started directly as uid %d, which must be able to search every "
                        "folder above the workspaces", staged_failed.error.message,
                        self._identity[0])
            self._stage = False

    def _check(self, binds: list[Bind], *, staged: bool) -> None:
        """Run ``true`` in a sandbox on ``binds``; ``SandboxError`` saying why it failed."""
        command = ExecCommand(argv=("true",))
        env = {"PATH": self._policy.path}
        try:
            if staged:
                code, stderr = _run_reaped(
                    self._argv(binds, BWRAP_SECCOMP_FD, command, env, None, staged=True),
                    self._staged(binds))
            else:
                seccomp_fd = self._seccomp_fd()
                rlimits = self._rlimits
                try:
                    done = subprocess.run(
                        self._argv(binds, seccomp_fd, command, env, None), env={},
                        stdin=subprocess.DEVNULL, capture_output=True, timeout=SELF_CHECK_TIMEOUT_S,
                        check=False, pass_fds=(seccomp_fd,), cwd="/", user=self._uid,
                        group=self._gid, extra_groups=None if self._identity is None else [],
                        preexec_fn=lambda: apply_rlimits(rlimits))
                finally:
                    os.close(seccomp_fd)
                code, stderr = done.returncode, done.stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap could not start a sandbox: {exc}") from None
        if code != 0:
            why = stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {code}"]
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap could not start a sandbox: {why[0]}")

    @property
    def view(self) -> SandboxView:
        return "namespace"

    def check_scope(self, scope: SandboxScope) -> None:
        super().check_scope(scope)
        if not self._stage and self._identity is not None:  # bwrap finds sources by path as uid
            identity = reach.host_identity(scope.work_dir, self._identity, managed=scope.managed)
            reach.check_reach([(scope.work_dir, reach.R | reach.W | reach.X),
                               *((host, reach.R | reach.X) for host, _ in scope.readonly_mounts)],
                              identity)

    @property
    def stages_sources(self) -> bool:
        """Whether root stages bubblewrap's bind sources (``_staged``) before starting it."""
        return self._stage

    @property
    def _uid(self) -> int | None:
        return None if self._identity is None else self._identity[0]

    @property
    def _gid(self) -> int | None:
        return None if self._identity is None else self._identity[1]

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        scope = handle.scope
        work_dir = scope.work_dir.absolute()
        started = time.time()
        if self._stage:  # root: the zygote stages the sources (``_staged``), idmapped as needed
            binds = _binds(work_dir, scope.readonly_mounts, self._identity)
            work_idmap = binds[0][3]
            owner = work_idmap[0] if work_idmap is not None else self._command_uid

            def cleanup() -> None:
                sweep(work_dir, owner, managed=scope.managed, since=started)

            # bwrap itself gets an empty environment: nothing of the host's reaches the
            # launcher's /proc/<pid>/environ, which the sandbox's PID 1 would expose.
            return self._make_launch(
                lambda _info_fd: self._argv(binds, BWRAP_SECCOMP_FD, command, env, None, staged=True),
                env={}, cwd="/", info_fd=False, confinement=self._staged(binds), cleanup=cleanup,
                scope=scope)
        identity = (None if self._identity is None
                    else reach.host_identity(work_dir, self._identity, managed=scope.managed))
        binds = _binds(work_dir, scope.readonly_mounts, None)
        uid = os.geteuid() if identity is None else identity[0]

        def sweep_direct() -> None:
            sweep(work_dir, uid, managed=scope.managed, since=started)

        seccomp_fd = self._seccomp_fd()
        return self._make_launch(
            lambda info_fd: self._argv(binds, seccomp_fd, command, env, info_fd),
            env={}, cwd="/", info_fd=True, pass_fds=(seccomp_fd,), identity=identity,
            rlimits=command_rlimits(self._policy, identity), cleanup=sweep_direct, scope=scope)

    def _staged(self, binds: list[Bind]) -> Confinement:
        """How root starts bwrap: through a reaper of the zygote, whose command process binds
        the sources where the sandbox uid reaches them (a private mount namespace; a folder the
        sandbox uid could not use as it is, idmapped), puts the seccomp program at
        ``BWRAP_SECCOMP_FD``, applies the rlimits and becomes the sandbox uid before it runs
        bwrap. The reaper's exit proves the whole sandbox gone."""
        assert self._identity is not None
        stage = tuple({"at": target, "bind": source, "rw": writable,
                       "idmap": None if idmap is None else list(idmap)}
                      for source, target, writable, idmap in binds)
        return Confinement(identity=self._identity, rlimits=self._rlimits,
                           bwrap=StagedBwrap(stage=stage, seccomp=self._seccomp))

    def _seccomp_fd(self) -> int:
        """The seccomp program in a fresh memfd, for ``--seccomp`` (bwrap reads it once)."""
        program = os.memfd_create("agentloom-seccomp", os.MFD_CLOEXEC)
        try:
            os.write(program, self._seccomp)
            os.lseek(program, 0, os.SEEK_SET)
        except BaseException:
            os.close(program)
            raise
        return program

    def _argv(
        self,
        binds: list[Bind],
        seccomp_fd: int,
        command: ExecCommand,
        env: dict[str, str],
        info_fd: int | None,
        *,
        staged: bool = False,
    ) -> list[str]:
        """bwrap's argv; ``staged``: each bind source at its staged path (``_staged``)."""
        policy = self._policy
        uid = str(SANDBOX_UID)
        a = [
            self._bwrap,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        if not policy.egress:
            a.append("--unshare-net")
        a += ["--uid", uid, "--gid", uid, "--hostname", SANDBOX_HOSTNAME]
        a += ["--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if info_fd is not None:
            a += ["--info-fd", str(info_fd)]
        a += ["--seccomp", str(seccomp_fd)]
        a += self._runtime
        a += ["--proc", "/proc"]
        for path in _layout.PROC_READONLY:
            a += ["--ro-bind-try", path, path]
        a += ["--dev", "/dev"]
        size = str(policy.tmp_size_bytes)
        a += ["--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]  # /dev itself read-only
        a += ["--size", size, "--tmpfs", "/tmp"]
        for i, (source, target, writable, _) in enumerate(binds):
            a += ["--bind" if writable else "--ro-bind", staged_path(i) if staged else source, target]
        a += ["--remount-ro", "/", "--chdir", command.cwd, "--clearenv"]
        for name, value in env.items():
            a += ["--setenv", name, value]
        a.append("--")
        if command.argv is not None:
            a += command.argv
        else:
            assert command.shell_script is not None
            a += ["/bin/sh", "-c", command.shell_script]
        return a


def _run_reaped(argv: list[str], confinement: Confinement) -> tuple[int, bytes]:
    """Run ``argv`` through a reaper of the zygote (``_launcher.spawn``) and wait for it:
    its exit status and its stderr. A run longer than ``SELF_CHECK_TIMEOUT_S`` is killed."""
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        try:
            proc = spawn(argv, env={}, cwd="/", stdout_fd=null, stderr_fd=err_w,
                         confinement=confinement)
        finally:
            os.close(err_w)
            os.close(null)
        if not readable(proc.pidfd, SELF_CHECK_TIMEOUT_S):
            proc.request_kill()
        code = proc.wait()
        chunks = []
        while chunk := os.read(err_r, 65536):  # every writer is gone with the reaper
            chunks.append(chunk)
        return code, b"".join(chunks)
    finally:
        os.close(err_r)


Bind = _layout.Bind
"""A bind mount of the sandbox: host source, target inside, writable, idmapped owner."""


def _binds(work_dir: Path, readonly_mounts: tuple[tuple[Path, str], ...],
           identity: tuple[int, int] | None) -> list[Bind]:
    """The work folder at ``/work``, writable, then each read-only mount; with ``identity``
    (staged by root), each idmapped when the sandbox uid could not use it as it is."""
    binds: list[Bind] = [(str(work_dir), WORK_MOUNT, True,
                          reach.idmap_owner(work_dir, identity, writable=True))]
    for host, target in readonly_mounts:
        path = Path(host).absolute()
        binds.append((str(path), target, False, reach.idmap_owner(path, identity, writable=False)))
    return binds


def _version(bwrap: str) -> tuple[int, ...]:
    try:
        out = subprocess.run(
            [bwrap, "--version"], env={}, capture_output=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = f"bubblewrap ({bwrap}) does not run: {exc}; {INSTALL_HINT}"
        raise SandboxError(SANDBOX_UNAVAILABLE, why) from None
    match = re.search(rb"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if match is None:
        raise SandboxError(SANDBOX_UNAVAILABLE, f"unrecognised `bwrap --version` output; {INSTALL_HINT}")
    return tuple(int(g) for g in match.groups() if g is not None)
