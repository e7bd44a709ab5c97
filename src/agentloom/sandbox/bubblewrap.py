"""The bubblewrap adapter: every command in fresh namespaces, as uid 65534, with only
``/work`` writable. What each flag is for is in ``docs/sandbox.md``.

Facts this module relies on (checked on bubblewrap 0.8, see research §3 and §6): run as
root without ``--uid`` the sandbox keeps its capabilities; open fds pass straight
through; ``--setenv LD_PRELOAD`` is honoured by ld.so; nested user namespaces need
``--disable-userns``; killing the launcher (PID namespace + ``--die-with-parent``)
kills every process inside.

Started as root, the sandbox's uid 65534 maps to host uid 0. Capabilities are gone,
but the kernel still sees the owner of root's files, so three more things are done:
the sandbox root is remounted read-only, ``/proc/sys`` (and a few other writable proc
files) are bound read-only, and ``/dev/null`` and friends are private device nodes
owned by another uid, so the sandbox cannot ``chmod`` the host's.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._supervisor import Launch
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE, SandboxError
from agentloom.sandbox.ports import WORK_MOUNT, EnvironmentPolicy, ExecCommand, SandboxHandle

log = logging.getLogger("agentloom.sandbox")

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora: `dnf install bubblewrap`)"
)
MIN_VERSION = (0, 8)  # --disable-userns and --size first appear in 0.8.0
SANDBOX_UID = 65534
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
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9), "tty": (5, 0)}
DEVICE_OWNER = 65534  # any uid but the launcher's: the sandbox must not own its device nodes


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
        self._dev_dir = _private_devices(self._output_dir) if os.geteuid() == 0 else None

    def self_check(self) -> None:
        """Start one sandbox running ``true``; raise ``SANDBOX_UNAVAILABLE`` if it fails
        (no user namespaces in this container, a seccomp profile refusing mounts...)."""
        command = ExecCommand(argv=("true",))
        argv = self._argv(self._output_dir, (), command, {"PATH": self._policy.path}, None)
        try:
            done = subprocess.run(
                argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap could not start a sandbox: {exc}") from None
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [
                f"exit {done.returncode}"
            ]
            raise SandboxError(SANDBOX_UNAVAILABLE, f"bubblewrap could not start a sandbox: {why[0]}")

    def _launch(self, handle: SandboxHandle, command: ExecCommand, env: dict[str, str]) -> Launch:
        scope = handle.scope
        work_dir = scope.work_dir.absolute()

        def argv_for(info_fd: int | None) -> list[str]:
            return self._argv(work_dir, scope.readonly_mounts, command, env, info_fd)

        # bwrap itself gets an empty environment: nothing of the host's reaches the
        # launcher's /proc/<pid>/environ, which the sandbox's PID 1 would expose.
        return self._make_launch(argv_for, env={}, cwd="/", info_fd=True)

    def _argv(
        self,
        work_dir: Path,
        readonly_mounts: tuple[tuple[Path, str], ...],
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
        a += self._runtime
        a += ["--proc", "/proc"]
        for path in PROC_READONLY:
            a += ["--ro-bind-try", path, path]
        a += ["--dev", "/dev"]
        if self._dev_dir is not None:
            for name in DEVICES:
                a += ["--dev-bind", str(self._dev_dir / name), f"/dev/{name}"]
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


def _private_devices(output_dir: Path) -> Path | None:
    """Create ``null``, ``zero``... owned by ``DEVICE_OWNER`` under ``output_dir``."""
    dev = output_dir / ".sandbox-dev"
    try:
        dev.mkdir(mode=0o755, exist_ok=True)
        for name, (major, minor) in DEVICES.items():
            path = dev / name
            want = os.makedev(major, minor)
            try:
                st = os.lstat(path)
                ok = stat.S_ISCHR(st.st_mode) and st.st_rdev == want
            except FileNotFoundError:
                ok = False
            if not ok:
                path.unlink(missing_ok=True)
                os.mknod(path, stat.S_IFCHR | 0o666, want)
            os.chown(path, DEVICE_OWNER, DEVICE_OWNER)
            os.chmod(path, 0o666)
        os.close(os.open(dev / "null", os.O_WRONLY))  # fails on a nodev filesystem
    except OSError as exc:
        log.warning("sandbox: private device nodes unavailable under %s (%s); binding the host's", dev, exc)
        return None
    return dev
