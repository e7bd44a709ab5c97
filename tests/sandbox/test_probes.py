"""Escape probes (research plan G3): every probe runs under each confining backend
(bubblewrap and Landlock), where it must fail, and once unconfined on the host as a
control, where it must succeed, which proves the probe would notice the escape.

Escapes are judged from the host wherever the host can see them: canary files, listener
accept queues, the process table, a sysctl's value, an inode's ctime, a victim's pending
signals. Kernel refusals that leave no host trace (nested user namespace, mount,
sethostname, ptrace) are judged by the probe's own report. Every sandboxed run must also
show the probe's start marker, so a probe cannot "pass" because it never ran.

Nothing here touches the session machinery: PID 1 of this host is not ours, so the part of
"the runtime" is played by a victim process each test starts, and /etc/shadow is opened,
never read.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from tests.sandbox.conftest import kill_all, processes_with, run_command, sandbox_path, scope_for, text
from tests.sandbox.io_uring_attack import URING_SOCKET

from agentloom.sandbox import BubblewrapGateway, ExecCommand, LandlockGateway

Mode = Literal["sandbox", "control"]
START = "PROBE_START"
PY_START = "PROBE_PY"


@dataclass
class Outcome:
    stdout: str
    stderr: str


@dataclass
class Ctx:
    """Everything a probe may aim at, created fresh for each test."""

    tmp: Path
    work_dir: Path
    outside: Path
    canary: Path
    secret: str
    token: str
    victim: subprocess.Popen[bytes]
    victim_token: str
    inherited_fd: int
    preload_so: Path | None
    tcp: socket.socket
    udp: socket.socket
    abstract: socket.socket
    abstract_name: str
    unix: socket.socket
    unix_path: Path
    sandbox_work: str = "/work"  # the work folder as a confined command sees it
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)

    def w(self, mode: Mode) -> str:
        """The work folder as the probe sees it."""
        return self.sandbox_work if mode == "sandbox" else str(self.work_dir)

    def sleep_token(self) -> str:
        return f"600.{self.token_digits}"

    @property
    def token_digits(self) -> str:
        return str(int(self.token, 16) % 10**9).rjust(9, "0")


def _accepted(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _received(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return bool(sock.recv(64))
    except BlockingIOError:
        return False


def _sigkill_hit(pid: int) -> bool:
    """True if ``pid`` is dead or has SIGKILL pending: judged now, without waiting."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    if fields.get("State", "").startswith(("Z", "X")):
        return True
    return any(int(fields.get(key, "0"), 16) & (1 << (9 - 1)) for key in ("SigPnd", "ShdPnd"))


def uring(code: str) -> str:
    """A probe that makes its socket through io_uring (``uring_socket``), then runs ``code``."""
    return py(URING_SOCKET + code)


def _pg_socket() -> str | None:
    """The host's PostgreSQL socket (the server CI runs), if any."""
    found = sorted(glob.glob("/var/run/postgresql/.s.PGSQL.*[0-9]"))
    return found[0] if found else None


def py(code: str) -> str:
    return "/usr/bin/python3 -c " + shlex.quote(f"print({PY_START!r}, flush=True)\n{code}")


@dataclass(frozen=True)
class Probe:
    name: str
    script: Callable[[Ctx, Mode], str]
    escaped: Callable[[Ctx, Outcome], bool]
    setup: Callable[[Ctx], None] | None = None
    env_patch: Callable[[Ctx, Mode], dict[str, str]] | None = None
    host_env: Callable[[Ctx], dict[str, str]] | None = None
    timeout_s: float | None = None
    needs: Callable[[Ctx], str | None] | None = None  # a reason to skip, if any

    def __str__(self) -> str:
        return self.name


def _cleanup_path(ctx: Ctx, path: Path) -> None:
    ctx.cleanups.append(lambda: path.unlink(missing_ok=True))


def _file_probe(name: str, target: Callable[[Ctx], Path]) -> Probe:
    def setup(ctx: Ctx) -> None:
        _cleanup_path(ctx, target(ctx))

    return Probe(
        name,
        lambda c, m: f"echo pwned > {shlex.quote(str(target(c)))}",
        lambda c, o: target(c).exists(),
        setup=setup,
    )


def _link(ctx: Ctx, name: str, to: Path) -> None:
    os.symlink(to, ctx.work_dir / name)


def _copy_preload(ctx: Ctx) -> None:
    assert ctx.preload_so is not None
    shutil.copy(ctx.preload_so, ctx.work_dir / "evil.so")


def _need_preload(ctx: Ctx) -> str | None:
    return None if ctx.preload_so is not None else "gcc is needed to build the LD_PRELOAD probe library"


SYSCTL = Path("/proc/sys/kernel/printk_ratelimit")  # harmless, and restored after the test


def _sysctl_setup(ctx: Ctx) -> None:
    original = SYSCTL.read_text().strip()
    ctx.notes["sysctl"] = int(original)
    ctx.cleanups.append(lambda: SYSCTL.write_text(original))


def _dev_null_setup(ctx: Ctx) -> None:
    ctx.notes["ctime"] = os.stat("/dev/null").st_ctime_ns
    ctx.notes["mode"] = os.stat("/dev/null").st_mode & 0o7777


def _mount_setup(ctx: Ctx) -> None:
    target = ctx.work_dir / "mnt"
    target.mkdir()

    def unmount() -> None:
        if os.path.ismount(target):
            subprocess.run(["umount", str(target)], check=False)

    ctx.cleanups.append(unmount)


def _processes_escaped(ctx: Ctx, outcome: Outcome) -> bool:
    pids = processes_with(ctx.sleep_token())
    kill_all(pids)
    return bool(pids)


def _listing_overlaps(host_dir: str) -> Callable[[Ctx, Outcome], bool]:
    def check(ctx: Ctx, outcome: Outcome) -> bool:
        return bool(set(outcome.stdout.split()) & set(os.listdir(host_dir)))

    return check


def _needs_listing(host_dir: str) -> Callable[[Ctx], str | None]:
    return lambda ctx: (
        None if os.path.isdir(host_dir) and os.listdir(host_dir) else f"host {host_dir} is empty"
    )


PROBES: list[Probe] = [
    # -- reading host files --------------------------------------------------------------
    Probe(
        "open_etc_shadow",
        lambda c, m: ": < /etc/shadow && echo SHADOW_OPENED",
        lambda c, o: "SHADOW_OPENED" in o.stdout,
        needs=lambda c: None if os.path.exists("/etc/shadow") else "no /etc/shadow on this host",
    ),
    Probe(
        "open_root_home",
        lambda c, m: "test -r /root && test -x /root && echo ROOT_HOME_OPEN",
        lambda c, o: "ROOT_HOME_OPEN" in o.stdout,
        needs=lambda c: None if os.path.isdir("/root") else "no /root on this host",
    ),
    Probe("read_canary_by_absolute_path", lambda c, m: f"cat {c.canary}", lambda c, o: c.secret in o.stdout),
    Probe(
        "read_canary_by_dotdot_from_work",
        lambda c, m: f"cat {c.w(m)}/../../../../../../../../../..{c.canary}",
        lambda c, o: c.secret in o.stdout,
    ),
    Probe(
        "read_canary_via_symlink_planted_in_work",
        lambda c, m: f"cat {c.w(m)}/link-out",
        lambda c, o: c.secret in o.stdout,
        setup=lambda c: _link(c, "link-out", c.canary),
    ),
    Probe(
        "read_canary_via_proc_pid_root",
        lambda c, m: (
            f"for p in 1 {c.victim.pid}; do cat /proc/$p/root{c.canary}; done"
            if m == "sandbox"
            else f"cat /proc/{c.victim.pid}/root{c.canary}"  # never PID 1 of the host: not ours
        ),
        lambda c, o: c.secret in o.stdout,
    ),
    # -- writing outside /work -----------------------------------------------------------
    _file_probe("write_host_tmp", lambda c: Path(f"/tmp/agentloom-probe-{c.token}")),
    _file_probe("write_canary_dir", lambda c: c.outside / "written"),
    _file_probe("write_usr", lambda c: Path(f"/usr/agentloom-probe-{c.token}")),
    _file_probe("write_etc", lambda c: Path(f"/etc/agentloom-probe-{c.token}")),
    Probe(
        "write_via_symlinked_dir_in_work",
        lambda c, m: f"echo pwned > {c.w(m)}/dir-out/via-link",
        lambda c, o: (c.outside / "via-link").exists(),
        setup=lambda c: _link(c, "dir-out", c.outside),
    ),
    # -- network -------------------------------------------------------------------------
    Probe(
        "tcp_connect_to_host_loopback_listener",
        lambda c, m: py(
            f"import socket; socket.create_connection(('127.0.0.1', {c.tcp.getsockname()[1]}), timeout=3)"
        ),
        lambda c, o: _accepted(c.tcp),
    ),
    Probe(
        "udp_send_to_host_loopback",
        lambda c, m: py(
            "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.sendto(b'pwned', ('127.0.0.1', {c.udp.getsockname()[1]}))"
        ),
        lambda c, o: _received(c.udp),
    ),
    Probe(
        "connect_host_abstract_unix_socket",
        lambda c, m: py(f"import socket; socket.socket(socket.AF_UNIX).connect('\\0{c.abstract_name}')"),
        lambda c, o: _accepted(c.abstract),
    ),
    Probe(
        "connect_host_unix_socket_outside_work",
        lambda c, m: py(f"import socket; socket.socket(socket.AF_UNIX).connect({str(c.unix_path)!r})"),
        lambda c, o: _accepted(c.unix),
    ),
    # issue #34 (1): a socket made by io_uring never passes the seccomp socket() rule
    Probe(
        "io_uring_socket_connects_host_unix_socket",
        lambda c, m: uring(f"uring_socket(1, 1).connect({str(c.unix_path)!r}); print('CONNECTED')"),
        lambda c, o: _accepted(c.unix) or "CONNECTED" in o.stdout,
    ),
    Probe(
        "io_uring_socket_sends_udp_to_host_loopback",
        lambda c, m: uring(f"uring_socket(2, 2).sendto(b'pwned', ('127.0.0.1', {c.udp.getsockname()[1]}))"),
        lambda c, o: _received(c.udp),
    ),
    Probe(
        "io_uring_socket_connects_host_tcp_listener",
        lambda c, m: uring(f"uring_socket(2, 1).connect(('127.0.0.1', {c.tcp.getsockname()[1]}))"),
        lambda c, o: _accepted(c.tcp),
    ),
    Probe(
        "connect_host_postgresql_socket",
        lambda c, m: py(f"import socket; socket.socket(1).connect({_pg_socket()!r}); print('PG_CONNECTED')"),
        lambda c, o: "PG_CONNECTED" in o.stdout,
        needs=lambda c: None if _pg_socket() else "no PostgreSQL socket on this host",
    ),
    Probe(
        "io_uring_socket_connects_host_postgresql_socket",
        lambda c, m: uring(f"uring_socket(1, 1).connect({_pg_socket()!r}); print('PG_CONNECTED')"),
        lambda c, o: "PG_CONNECTED" in o.stdout,
        needs=lambda c: None if _pg_socket() else "no PostgreSQL socket on this host",
    ),
    # -- fds and environment -------------------------------------------------------------
    Probe(
        "read_fd_inherited_from_the_parent",
        lambda c, m: f"cat /proc/self/fd/{c.inherited_fd}",
        lambda c, o: c.secret in o.stdout,
    ),
    Probe(
        "ld_preload_in_env_patch",
        lambda c, m: "/bin/true",
        lambda c, o: (c.work_dir / "preloaded").exists(),
        setup=_copy_preload,
        env_patch=lambda c, m: {"LD_PRELOAD": f"{c.w(m)}/evil.so"},
        needs=_need_preload,
    ),
    Probe(
        "ld_preload_in_host_env",
        lambda c, m: "/bin/true",
        lambda c, o: (c.work_dir / "preloaded").exists(),
        setup=_copy_preload,
        host_env=lambda c: {"LD_PRELOAD": f"{c.work_dir}/evil.so /work/evil.so"},
        needs=_need_preload,
    ),
    Probe(
        "read_secret_from_host_env",
        lambda c, m: "printenv AGENTLOOM_PROBE_SECRET",
        lambda c, o: c.secret in o.stdout,
        host_env=lambda c: {"AGENTLOOM_PROBE_SECRET": c.secret},
    ),
    Probe(
        "read_runtime_environ_via_proc",
        lambda c, m: (
            f"cat /proc/1/environ /proc/{c.victim.pid}/environ"
            if m == "sandbox"
            else f"cat /proc/{c.victim.pid}/environ"
        ),
        lambda c, o: c.secret in o.stdout,
        host_env=lambda c: {"AGENTLOOM_PROBE_SECRET": c.secret},
    ),
    # -- privileges ----------------------------------------------------------------------
    Probe(
        "nested_user_namespace",
        lambda c, m: "unshare -U true && echo USERNS_CREATED",
        lambda c, o: "USERNS_CREATED" in o.stdout,
    ),
    Probe("run_as_root", lambda c, m: "id -u", lambda c, o: "0" in o.stdout.split()),
    Probe(
        "keep_capabilities",
        lambda c, m: "grep CapEff /proc/self/status",
        lambda c, o: any(int(w, 16) for w in o.stdout.split() if all(ch in "0123456789abcdef" for ch in w)),
    ),
    Probe(
        "mount_tmpfs",
        lambda c, m: f"mount -t tmpfs none {c.w(m)}/mnt && echo MOUNTED",
        lambda c, o: "MOUNTED" in o.stdout or os.path.ismount(c.work_dir / "mnt"),
        setup=_mount_setup,
    ),
    Probe(  # issue #33 (#34.1): io_uring's operations never pass through the seccomp filter
        "io_uring_setup",
        lambda c, m: py("import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
                        "params = ctypes.create_string_buffer(120); "
                        "fd = libc.syscall(425, 8, params); print('IO_URING_FD' if fd >= 0 else "
                        "f'refused {ctypes.get_errno()}')"),
        lambda c, o: "IO_URING_FD" in o.stdout,
    ),
    Probe(  # issue #33: made through an idmapped bind, a set-id file could be root's on disk
        "create_a_setuid_file",
        lambda c, m: py(
            "import os, stat\n"
            f"path = {c.w(m)!r} + '/suid'\n"
            "try:\n"
            "    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o4755))\n"
            "except OSError as exc:\n"
            "    print('refused', exc.errno)\n"
            "else:\n"
            "    print('SETUID_CREATED' if os.stat(path).st_mode & stat.S_ISUID else 'plain')"),
        lambda c, o: "SETUID_CREATED" in o.stdout,
    ),
    Probe(
        "set_hostname",
        lambda c, m: py("import socket; socket.sethostname(socket.gethostname()); print('HOSTNAME_SET')"),
        lambda c, o: "HOSTNAME_SET" in o.stdout,
    ),
    Probe(
        "write_kernel_sysctl",
        lambda c, m: f"echo {c.notes['sysctl'] + 1} > {SYSCTL}",
        lambda c, o: int(SYSCTL.read_text()) != c.notes["sysctl"],
        setup=_sysctl_setup,
    ),
    Probe(
        "chmod_host_dev_null",  # to its current mode: the host sees only the inode's ctime move
        lambda c, m: f"chmod {c.notes['mode']:o} /dev/null && echo CHMODDED",
        lambda c, o: os.stat("/dev/null").st_ctime_ns != c.notes["ctime"],
        setup=_dev_null_setup,
    ),
    Probe(
        "ptrace_runtime_process",
        lambda c, m: py(
            "import ctypes; libc = ctypes.CDLL('libc.so.6', use_errno=True); "
            "libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]; "
            f"print('PTRACE_ATTACHED' if libc.ptrace(0x4206, {c.victim.pid}, None, None) == 0 else 'refused')"
        ),
        lambda c, o: "PTRACE_ATTACHED" in o.stdout,
    ),
    Probe(
        "kill_runtime_process",
        lambda c, m: f"kill -9 {c.victim.pid}",
        lambda c, o: _sigkill_hit(c.victim.pid),
    ),
    Probe(
        "see_runtime_process",
        lambda c, m: f"cat /proc/{c.victim.pid}/cmdline",
        lambda c, o: c.victim_token in o.stdout,
    ),
    Probe("see_host_run", lambda c, m: "ls -A /run", _listing_overlaps("/run"), needs=_needs_listing("/run")),
    Probe(
        "see_host_network_devices",
        lambda c, m: "ls /sys/class/net",
        _listing_overlaps("/sys/class/net"),
        needs=_needs_listing("/sys/class/net"),
    ),
    # -- process lifetime ----------------------------------------------------------------
    Probe(
        "setsid_and_double_fork_outlive_the_call",
        lambda c, m: (
            f"setsid sleep {c.sleep_token()} </dev/null >/dev/null 2>&1 & "
            f"( sleep {c.sleep_token()} </dev/null >/dev/null 2>&1 & ) ; echo started"
        ),
        _processes_escaped,
    ),
    Probe(
        "grandchild_survives_the_timeout",
        lambda c, m: f"sleep {c.sleep_token()} & sleep {c.sleep_token()}",
        _processes_escaped,
        timeout_s=0.5,
    ),
]


PRELOAD_C = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void preloaded(void) {
    int fd = open("preloaded", O_WRONLY | O_CREAT, 0644);  /* in the cwd: /work, or work_dir */
    if (fd >= 0) close(fd);
}
"""


@pytest.fixture(scope="session")
def preload_so(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    folder = tmp_path_factory.mktemp("preload")
    (folder / "evil.c").write_text(PRELOAD_C)
    built = subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(folder / "evil.so"), str(folder / "evil.c")],
        capture_output=True,
        check=False,
    )
    return folder / "evil.so" if built.returncode == 0 else None


@pytest.fixture
def ctx(tmp_path: Path, work_dir: Path, preload_so: Path | None) -> Iterator[Ctx]:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = "canary-" + secrets.token_hex(16)
    canary = outside / "canary.txt"
    canary.write_text(secret + "\n")
    victim_token = f"600.{secrets.randbelow(10**9):09d}"
    victim = subprocess.Popen(
        ["/bin/sleep", victim_token],
        env={"VICTIM_SECRET": secret},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    inherited_fd = os.open(canary, os.O_RDONLY)
    os.set_inheritable(inherited_fd, True)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    token = secrets.token_hex(8)
    abstract_name = f"agentloom-probe-{token}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0" + abstract_name)
    abstract.listen(8)
    sock_dir = Path(tempfile.mkdtemp(prefix="al-"))  # short: AF_UNIX paths stop at 108 bytes
    unix_path = sock_dir / "s"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(unix_path))
    unix.listen(8)
    context = Ctx(
        tmp=tmp_path,
        work_dir=work_dir,
        outside=outside,
        canary=canary,
        secret=secret,
        token=token,
        victim=victim,
        victim_token=victim_token,
        inherited_fd=inherited_fd,
        preload_so=preload_so,
        tcp=tcp,
        udp=udp,
        abstract=abstract,
        abstract_name=abstract_name,
        unix=unix,
        unix_path=unix_path,
    )
    try:
        yield context
    finally:
        for cleanup in reversed(context.cleanups):
            cleanup()
        for sock in (tcp, udp, abstract, unix):
            sock.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
        os.close(inherited_fd)
        victim.kill()
        victim.wait()
        kill_all(processes_with(context.sleep_token()))


@contextlib.contextmanager
def host_environment(extra: dict[str, str]) -> Iterator[None]:
    """Set variables in this (the runtime's) process environment for one probe."""
    saved = {name: os.environ.get(name) for name in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _prepare(probe: Probe, ctx: Ctx) -> None:
    if probe.needs is not None and (reason := probe.needs(ctx)):
        pytest.skip(reason)
    if probe.setup is not None:
        probe.setup(ctx)


@pytest.mark.parametrize("probe", PROBES, ids=str)
async def test_probe_is_contained_by_the_sandbox(
    probe: Probe, ctx: Ctx, shell_gateway: BubblewrapGateway | LandlockGateway
) -> None:
    ctx.sandbox_work = sandbox_path(shell_gateway, ctx.work_dir)
    _prepare(probe, ctx)
    script = probe.script(ctx, "sandbox")
    handle = await shell_gateway.ensure(scope_for(ctx.work_dir), None, 1)
    command = ExecCommand(
        shell_script=f"echo {START}; {script}",
        env_patch=probe.env_patch(ctx, "sandbox") if probe.env_patch else {},
        timeout_s=probe.timeout_s,
    )
    with host_environment(probe.host_env(ctx) if probe.host_env else {}):
        result = await run_command(shell_gateway, handle, command)
    outcome = Outcome(stdout=text(result), stderr=result.stderr.head.decode(errors="replace"))
    assert START in outcome.stdout, outcome.stderr  # the probe ran
    if PY_START in script:
        assert PY_START in outcome.stdout, outcome.stderr  # ... and its tool works in the sandbox
    assert not probe.escaped(ctx, outcome), f"{probe.name} escaped the sandbox: {outcome}"
    assert result.sandboxed and result.sandbox_mode == shell_gateway.sandbox_mode


#: Controls a default container refuses to every process, confined or not (its seccomp
#: profile and the missing CAP_SYS_ADMIN): in that test shape they cannot escape.
CONTAINER_REFUSES = {"nested_user_namespace", "mount_tmpfs", "set_hostname"}


@pytest.mark.parametrize("probe", PROBES, ids=str)
def test_probe_escapes_when_unconfined(probe: Probe, ctx: Ctx) -> None:
    if probe.name in CONTAINER_REFUSES and os.environ.get("AGENTLOOM_TEST_SHAPE") == "container":
        pytest.skip("the 'container' test shape refuses this to every process, as Docker does")
    _prepare(probe, ctx)
    script = probe.script(ctx, "control")
    env = dict(os.environ)
    env.update(probe.host_env(ctx) if probe.host_env else {})
    env.update(probe.env_patch(ctx, "control") if probe.env_patch else {})
    out, err = ctx.tmp / "control.out", ctx.tmp / "control.err"
    with (
        host_environment(probe.host_env(ctx) if probe.host_env else {}),
        open(out, "wb") as fo,
        open(err, "wb") as fe,
    ):
        proc = subprocess.Popen(
            ["/bin/sh", "-c", f"echo {START}; {script}"],
            cwd=ctx.work_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=fo,
            stderr=fe,
            close_fds=False,  # unconfined: whatever the parent left inheritable is inherited
        )
        try:
            proc.wait(timeout=probe.timeout_s or 30)
        except subprocess.TimeoutExpired:  # what a naive runner does: kill the child only
            proc.kill()
            proc.wait()
    outcome = Outcome(stdout=out.read_text(errors="replace"), stderr=err.read_text(errors="replace"))
    assert START in outcome.stdout
    assert probe.escaped(ctx, outcome), f"the control for {probe.name} did not escape: {outcome}"
