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
from pathlib import Path

from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._execution import readable
from agentloom.sandbox._kernel import staged_path
from agentloom.sandbox._launcher import Confinement, StagedBwrap, spawn
from agentloom.sandbox._limits import apply_rlimits, command_rlimits
from agentloom.sandbox._reaper import BWRAP_SECCOMP_FD
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox._sweep import sweep
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.identity import SANDBOX_UID, sandbox_identity
from agentloom.sandbox.ports import WORK_MOUNT, EnvironmentPolicy, ExecCommand, SandboxHandle
from agentloom.sandbox.seccomp import seccomp_program

log = logging.getLogger("agentloom.sandbox")

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora: `dnf install bubblewrap`)"
)
MIN_VERSION = (0, 8)  # --disable-userns and --size first appear in 0.8.0
SANDBOX_HOSTNAME = "sandbox"
SELF_CHECK_TIMEOUT_S = 30.0

#: The runtime programs need, read-only. A merged-/usr symlink is recreated as a symlink.
RUNTIME_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
RUNTIME_ETC = ("/etc/alternatives", "/etc/ld.so.cache")
#: Only with ``policy.egress``: name resolution and TLS roots.
EGRESS_ETC = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
)
#: Writable-by-owner proc files that bubblewrap 0.8 leaves writable (kernel sysctls!).
PROC_READONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/pressure", "/proc/mtrr")


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
        self._runtime = _runtime_args(egress=policy.egress)
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
        binds = _binds(work, ())
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
        binds = _binds(work_dir, scope.readonly_mounts)

        def cleanup() -> None:
            sweep(work_dir, self._command_uid, foreign=scope.foreign)

        # bwrap itself gets an empty environment: nothing of the host's reaches the
        # launcher's /proc/<pid>/environ, which the sandbox's PID 1 would expose.
        if self._stage:  # root: the zygote stages the sources (``_staged``)
            return self._make_launch(
                lambda _info_fd: self._argv(binds, BWRAP_SECCOMP_FD, command, env, None, staged=True),
                env={}, cwd="/", info_fd=False, confinement=self._staged(binds), cleanup=cleanup)
        seccomp_fd = self._seccomp_fd()
        return self._make_launch(
            lambda info_fd: self._argv(binds, seccomp_fd, command, env, info_fd),
            env={}, cwd="/", info_fd=True, pass_fds=(seccomp_fd,), identity=self._identity,
            rlimits=self._rlimits, cleanup=cleanup)

    def _staged(self, binds: list[Bind]) -> Confinement:
        """How root starts bwrap: through a reaper of the zygote, whose command process binds
        the sources where the sandbox uid reaches them (a private mount namespace), puts the
        seccomp program at ``BWRAP_SECCOMP_FD``, applies the rlimits and becomes the sandbox
        uid before it runs bwrap. The reaper's exit proves the whole sandbox gone."""
        assert self._identity is not None
        return Confinement(identity=self._identity, rlimits=self._rlimits,
                           bwrap=StagedBwrap(stage=tuple(source for source, _, _ in binds),
                                             seccomp=self._seccomp))

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
        for path in PROC_READONLY:
            a += ["--ro-bind-try", path, path]
        a += ["--dev", "/dev"]
        size = str(policy.tmp_size_bytes)
        a += ["--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]  # /dev itself read-only
        a += ["--size", size, "--tmpfs", "/tmp"]
        for i, (source, target, writable) in enumerate(binds):
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


Bind = tuple[str, str, bool]
"""A bind mount of the sandbox: host source, target inside, writable."""


def _binds(work_dir: Path, readonly_mounts: tuple[tuple[Path, str], ...]) -> list[Bind]:
    """The work folder at ``/work``, writable, then each read-only mount."""
    return [(str(work_dir), WORK_MOUNT, True),
            *((str(Path(host).absolute()), target, False) for host, target in readonly_mounts)]


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


def _runtime_args(*, egress: bool) -> list[str]:
    args: list[str] = []
    for path in RUNTIME_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in RUNTIME_ETC + (EGRESS_ETC if egress else ()):
        args += ["--ro-bind-try", path, path]
    return args
