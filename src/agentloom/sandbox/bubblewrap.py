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
counted. bubblewrap resolves mount sources by path as that uid, so every folder above
the work folder must be searchable by it (the workspace root's folders are 0711); where
they are not, ``self_check`` fails and ``auto`` uses Landlock. Every command also runs
under the seccomp filter of ``seccomp`` (``--seccomp``) and the policy's rlimits.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._limits import apply_rlimits, command_rlimits
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

    def self_check(self) -> None:
        """Start one sandbox running ``true`` on a folder beside the workspaces; raise
        ``SANDBOX_UNAVAILABLE`` if it fails (no user namespaces in this container, a
        seccomp profile refusing mounts, a folder above the workspaces the sandbox uid
        cannot search...)."""
        command = ExecCommand(argv=("true",))
        work = self._spool_dir / "self-check"
        work.mkdir(mode=0o700, exist_ok=True)
        if self._identity is not None:
            os.chown(work, *self._identity)
        seccomp_fd = self._seccomp_fd()
        argv = self._argv(work, (), seccomp_fd, command, {"PATH": self._policy.path}, None)
        rlimits = self._rlimits
        try:
            done = subprocess.run(
                argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
                pass_fds=(seccomp_fd,), cwd="/", user=self._uid, group=self._gid,
                extra_groups=None if self._identity is None else [],
                preexec_fn=lambda: apply_rlimits(rlimits),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap could not start a sandbox: {exc}") from None
        finally:
            os.close(seccomp_fd)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [
                f"exit {done.returncode}"
            ]
            hint = ""
            if "Permission denied" in why[0] and self._identity is not None:
                hint = (f" (bubblewrap runs as uid {self._identity[0]}: every folder above "
                        f"{self._output_dir} must be searchable by it, e.g. chmod o+x)")
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap could not start a sandbox: {why[0]}{hint}")

    @property
    def _uid(self) -> int | None:
        return None if self._identity is None else self._identity[0]

    @property
    def _gid(self) -> int | None:
        return None if self._identity is None else self._identity[1]

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        scope = handle.scope
        work_dir = scope.work_dir.absolute()
        seccomp_fd = self._seccomp_fd()

        def argv_for(info_fd: int | None) -> list[str]:
            return self._argv(work_dir, scope.readonly_mounts, seccomp_fd, command, env, info_fd)

        # bwrap itself gets an empty environment: nothing of the host's reaches the
        # launcher's /proc/<pid>/environ, which the sandbox's PID 1 would expose.
        return self._make_launch(argv_for, env={}, cwd="/", info_fd=True, pass_fds=(seccomp_fd,),
                                 identity=self._identity, rlimits=self._rlimits,
                                 cleanup=lambda: sweep(work_dir, self._command_uid,
                                                       foreign=scope.foreign))

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
        work_dir: Path,
        readonly_mounts: tuple[tuple[Path, str], ...],
        seccomp_fd: int,
        command: ExecCommand,
        env: dict[str, str],
        info_fd: int | None,
    ) -> list[str]:
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
        a += ["--bind", str(work_dir), WORK_MOUNT]
        for host, target in readonly_mounts:
            a += ["--ro-bind", str(Path(host).absolute()), target]
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
