"""Issue #10, hardening: the attacks a root runtime's sandbox once let through, each run
under every confining backend, as root where the attack needs it.

- a setuid binary left in the workspace for another local user to run (no escalation);
- keys added to the host's kernel keyrings (seccomp);
- a fork bomb, and writing past the file-size limit (rlimits);
- an output spool orphaned by ``kill -9`` of the runtime (reclaimed at the next start);
- commands outliving a ``kill -9`` of the runtime (a child writing a heartbeat file).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.sandbox.conftest import (
    BACKENDS,
    confined_gateway,
    open_to_others,
    processes_with,
    require_backend,
    run_command,
    sandbox_path,
    scope_for,
    searchable,
    text,
    view_of,
)

from agentloom.sandbox import (
    EnvironmentPolicy,
    ExecCommand,
    UnsandboxedGateway,
    landlock_available,
    sandbox_identity,
)

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the attack is one on a runtime running as root")
#: An unprivileged local user who is neither the runtime nor the sandbox uid.
OTHER_USER = 4242


def policy(**changes: object) -> EnvironmentPolicy:
    return EnvironmentPolicy(allow_shell=True, **changes)  # type: ignore[arg-type]


def set_id_files(top: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            if stat.S_ISLNK(st.st_mode):
                continue
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IWOTH):
                found.append(os.path.join(folder, name))
    return found


@root_only
async def test_hardening_a_setuid_binary_left_in_the_workspace_gives_another_user_nothing(
    backend: str, tmp_path: Path, work_dir: Path
) -> None:
    gateway = confined_gateway(backend, policy(), tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    w = sandbox_path(gateway, work_dir)
    script = textwrap.dedent(f"""
        cp /usr/bin/python3 {w}/p && chmod 4755 {w}/p; echo "chmod=$?"
        python3 -c "import os; os.close(os.open('{w}/q', os.O_CREAT | os.O_WRONLY, 0o6777))"; echo "create=$?"
        python3 -c "import os; os.close(os.open('{w}/q', os.O_CREAT | os.O_WRONLY, 0o777))"
        cp /usr/bin/python3 {w}/r && python3 -c "import os; os.chmod('{w}/r', 0o4755)"; echo "pychmod=$?"
        mkdir -m 777 {w}/open; chmod 777 {w}/open {w}; chmod 755 {w}; ls -ln {w}
    """)
    result = await run_command(gateway, handle, ExecCommand(shell_script=script))
    assert "chmod=1" in text(result)  # seccomp refuses the set-id bit itself
    assert "pychmod=1" in text(result)
    assert "create=1" in text(result)  # ... on a file it creates too (issue #33)
    await asyncio.to_thread(check_nothing_to_escalate_with, work_dir, tmp_path)


def check_nothing_to_escalate_with(work_dir: Path, tmp_path: Path) -> None:
    """What the command left is the sandbox uid's, never root's, with no set-id or
    world-writable entry, in a work folder that is 0700 again; another user gets nothing."""
    identity = sandbox_identity()
    assert identity is not None
    for name in ("p", "q", "r", "open"):
        assert (work_dir / name).stat().st_uid == identity[0]
    assert set_id_files(work_dir) == []
    assert stat.S_IMODE(work_dir.stat().st_mode) == 0o700
    # Another local user tries the binary the command left: no way in, and no root.
    escalate = subprocess.run(
        ["/bin/sh", "-c", f"{work_dir}/p -c 'import os; print(\"euid\", os.geteuid())'"],
        user=OTHER_USER, group=OTHER_USER, extra_groups=[], capture_output=True, text=True, check=False,
    )
    assert escalate.returncode != 0 and "euid" not in escalate.stdout
    assert "Permission denied" in escalate.stderr
    # Even handed the binary directly (a link outside the 0700 folder), it is no root.
    exposed = tmp_path / "exposed"
    exposed.mkdir(mode=0o755)
    open_to_others(exposed)
    os.link(work_dir / "p", exposed / "p")
    direct = subprocess.run([str(exposed / "p"), "-c", "import os; print('euid', os.geteuid())"],
                            user=OTHER_USER, group=OTHER_USER, extra_groups=[], capture_output=True,
                            text=True, check=False)
    assert direct.stdout.strip() == f"euid {OTHER_USER}", direct.stderr

async def test_hardening_add_key_to_the_host_keyrings_fails(
    backend: str, tmp_path: Path, work_dir: Path
) -> None:
    code = ("import ctypes; libc = ctypes.CDLL(None, use_errno=True)\n"
            "for ring in (-2, -4, -5):  # process, user, user-session keyrings\n"
            "    r = libc.syscall(248 if __import__('platform').machine() == 'x86_64' else 217,"
            " b'user', b'agentloom-probe', b'v', 1, ring)\n"
            "    print('add_key', r, ctypes.get_errno())\n")
    gateway = confined_gateway(backend, policy(), tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(gateway, handle, ExecCommand(argv=("python3", "-c", code)))
    lines = [line.split() for line in text(result).splitlines() if line.startswith("add_key")]
    assert len(lines) == 3 and all(line[1] == "-1" and line[2] == "1" for line in lines)  # EPERM
    # The control: unconfined, the same call adds a key (to its own process keyring).
    control = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", code.replace("(-2, -4, -5)", "(-2,)")],
        capture_output=True, text=True, check=True)
    assert int(control.stdout.split()[1]) > 0


FORK_BOMB = """
import os, time
made = 0
for _ in range(2000):
    try:
        pid = os.fork()
    except OSError as exc:
        print("refused", exc.errno)
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    made += 1
print("made", made, flush=True)
"""


@root_only
async def test_hardening_a_fork_bomb_of_2000_stops_at_the_process_limit(
    backend: str, tmp_path: Path, work_dir: Path
) -> None:
    gateway = confined_gateway(backend, policy(max_processes=64), tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    result = await run_command(gateway, handle, ExecCommand(argv=("python3", "-c", FORK_BOMB)))
    out = text(result)
    assert "refused 11" in out  # EAGAIN
    made = int(out.split("made")[1].split()[0])
    assert made < 64
    assert processes_with("import os, time\nmade = 0") == []  # and they all died with it


async def test_hardening_writing_past_the_file_size_limit_fails(
    backend: str, tmp_path: Path, work_dir: Path
) -> None:
    gateway = confined_gateway(backend, policy(max_file_bytes=1 << 20), tmp_path / "out")
    handle = await gateway.ensure(scope_for(work_dir), None, 1)
    w = sandbox_path(gateway, work_dir)
    result = await run_command(gateway, handle, ExecCommand(
        shell_script=f"head -c 3000000 /dev/zero > {w}/big; echo rc=$?"))
    assert "rc=0" not in text(result)
    assert (work_dir / "big").stat().st_size <= 1 << 20


# -- the runtime killed with SIGKILL --------------------------------------------------------

RUNTIME = """
import asyncio, sys, time
from pathlib import Path
from agentloom.sandbox import BusinessOwner, EnvironmentPolicy, ExecCommand, SandboxScope, make_gateway

async def main(backend, out, work, script):
    gateway = make_gateway(EnvironmentPolicy(allow_shell=True, max_preview_bytes=64),
                           backend=backend, output_dir=Path(out))
    handle = await gateway.ensure(SandboxScope(workspace_scope_id="ws", run_id="run", work_dir=Path(work)),
                                  None, 1)
    execution = await gateway.execute(handle, ExecCommand(shell_script=script, timeout_s=120),
                                      BusinessOwner(operation_id="op", attempt_no=1), time.time() + 120)
    print("STARTED", flush=True)
    await execution.wait()

asyncio.run(main(*sys.argv[1:5]))
"""


def start_runtime(backend: str, out: Path, work: Path, script: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", RUNTIME, backend, str(out), str(work), script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "STARTED" in line, proc.stderr.read() if proc.stderr else line
    return proc


def heartbeat_stops(beat: Path, within_s: float) -> bool:
    """True once ``beat`` has not changed for 0.5 s, looked at until ``within_s`` has passed."""
    deadline = time.monotonic() + within_s
    last = beat.stat().st_mtime_ns
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = beat.stat().st_mtime_ns
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= 0.5:
            return True
    return False


@pytest.mark.parametrize("which", [*BACKENDS, "none"])
def test_hardening_sigkill_of_the_runtime_kills_its_commands_within_a_second(
    which: str, tmp_path: Path, work_dir: Path
) -> None:
    if which != "none":
        require_backend(which)
    searchable(tmp_path)
    token = f"600.{time.time_ns() % 10**9:09d}"
    w = "/work" if which != "none" and view_of(which) == "namespace" else str(work_dir)
    # A child that beats every 50 ms, a setsid grandchild that sleeps: both must go.
    script = (f"(setsid sleep {token} &); "
              f"while true; do echo 1 > {w}/beat; sleep 0.05; done")
    runtime = start_runtime(which, tmp_path / "out", work_dir, script)
    beat = work_dir / "beat"
    for _ in range(200):
        if beat.exists():
            break
        time.sleep(0.01)
    assert beat.exists() and not heartbeat_stops(beat, 0.3)  # it is beating
    runtime.send_signal(signal.SIGKILL)
    runtime.wait()
    killed_at = time.time()
    assert heartbeat_stops(beat, 3.0)
    # "Gone within a second": the heartbeat's last beat came at most 1 s after the kill.
    assert beat.stat().st_mtime <= killed_at + 1.0
    deadline = time.monotonic() + 1.0
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert processes_with(token) == []


def test_hardening_a_spool_orphaned_by_kill_9_is_gone_after_the_next_start(
    tmp_path: Path, work_dir: Path
) -> None:
    which = next((b for b in BACKENDS if _has(b)), "none")
    searchable(tmp_path)
    out = tmp_path / "out"
    runtime = start_runtime(which, out, work_dir, "head -c 300000000 /dev/zero; sleep 60")
    spools = list(out.glob("spool-*"))
    assert len(spools) == 1
    deadline = time.monotonic() + 30
    while not list(spools[0].glob("*.stdout")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(spools[0].glob("*.stdout")), "the command's output never reached a spool file"
    runtime.send_signal(signal.SIGKILL)
    runtime.wait()
    assert spools[0].exists()  # nothing reclaims it while nothing starts
    UnsandboxedGateway(EnvironmentPolicy(), output_dir=out)  # the next start
    assert not spools[0].exists()
    assert len(list(out.glob("spool-*"))) == 1  # only the new gateway's own



def _has(backend: str) -> bool:
    return shutil.which("bwrap") is not None if backend == "bubblewrap" else landlock_available()
