"""The container shapes (issue #33, point 6), made by ``launcher.py`` and probed from real
processes started through it: ``container`` refuses user and mount namespaces and has no
``CAP_SYS_ADMIN`` while fork, threads and commands still work; both shapes hide bubblewrap
(the host's ``bwrap`` stays as it was); ``no-bwrap`` keeps ``CAP_SYS_ADMIN``; and the product's
Landlock gateway still starts a command in either shape. Run as root (skipped otherwise);
under ``CI`` a missing ``unshare`` or ``capsh`` fails instead of skipping."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.shapes import launcher
from tests.shapes.launcher import ARCHES, CAP_SYS_ADMIN, SHAPE_VARIABLE, SHAPES

LAUNCHER = Path(launcher.__file__)
EXIT_DEADLINE_S = 60

#: unshare(2) with each flag, then setns, clone3 and a raw clone with CLONE_NEWUSER, from a
#: process in the shape: each call's errno name, or "ok". Argument: the clone syscall number.
PROBE_NAMESPACES = r"""
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def outcome(result):
    return "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
seen = {}
for name, flag in (("user", 0x10000000), ("mount", 0x00020000), ("net", 0x40000000),
                   ("pid", 0x20000000), ("ipc", 0x08000000), ("uts", 0x04000000)):
    seen["unshare_" + name] = outcome(libc.unshare(flag))
fd = os.open("/proc/self/ns/net", os.O_RDONLY)
seen["setns"] = outcome(libc.setns(fd, 0))
seen["clone3"] = outcome(libc.syscall(435, None, ctypes.c_size_t(0)))
pid = libc.syscall(int(sys.argv[1]), ctypes.c_ulong(0x10000000 | 17), None, None, None, None)
if pid == 0:
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
seen["clone_newuser"] = outcome(pid)
print(json.dumps(seen))
"""

#: What a process in the shape can still do: fork, a thread (clone3 -> clone), a command.
PROBE_PROCESSES = r"""
import json, os, subprocess, threading
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
ran = []
thread = threading.Thread(target=ran.append, args=("thread",))
thread.start()
thread.join()
print(json.dumps({"fork": os.waitstatus_to_exitcode(status), "thread": ran,
                  "true": subprocess.run(["true"]).returncode}))
"""

#: The product's Landlock gateway runs ``true``. Arguments: backend, output folder, work folder.
RUN_TRUE = r"""
import asyncio, json, sys, time
from pathlib import Path
from agentloom.sandbox import BusinessOwner, EnvironmentPolicy, ExecCommand, SandboxScope, make_gateway

async def main():
    backend, out, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    gateway = make_gateway(EnvironmentPolicy(), backend=backend, output_dir=out)
    handle = await gateway.ensure(SandboxScope(workspace_scope_id="ws-shape", run_id="run-shape",
                                               work_dir=work, managed=True), None, 1)
    execution = await gateway.execute(handle, ExecCommand(argv=("true",)),
                                      BusinessOwner(operation_id="op-shape", attempt_no=1), time.time() + 60)
    result = await execution.wait()
    print(json.dumps({"exit_code": result.exit_code, "sandbox_mode": result.sandbox_mode}))

asyncio.run(main())
"""


def require_shapes(*tools: str) -> None:
    """Skip unless root (the shapes need CAP_SYS_ADMIN to be made) and ``tools`` are on PATH;
    under ``CI`` a missing tool is a failure."""
    if os.geteuid() != 0:
        pytest.skip("the test shapes are made by root (run the suite as root)")
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing and os.environ.get("CI"):
        pytest.fail(f"{', '.join(missing)} missing and CI must test the shapes "
                    "(apt-get install -y util-linux libcap2-bin)")
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (util-linux, libcap2-bin)")


def in_shape(shape: str, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(LAUNCHER), "--shape", shape, "--", *argv],
                          capture_output=True, text=True, timeout=EXIT_DEADLINE_S, env=env)


def python_in_shape(shape: str, code: str, *args: str) -> dict[str, object]:
    done = in_shape(shape, sys.executable, "-c", code, *args)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def capabilities(status: str) -> dict[str, int]:
    """The ``Cap*`` sets of a ``/proc/<pid>/status`` text, as integers."""
    return {key: int(value, 16) for key, value in
            (line.split(":\t") for line in status.splitlines() if line.startswith("Cap"))}


def clone_number() -> str:
    machine = os.uname().machine
    if machine not in ARCHES:
        pytest.skip(f"the container shape has no seccomp filter for {machine}")
    return str(ARCHES[machine][1]["clone"])


def test_i33_6_container_shape_refuses_user_and_mount_namespaces() -> None:
    require_shapes()
    seen = python_in_shape("container", PROBE_NAMESPACES, clone_number())
    assert seen == {
        "unshare_user": "EPERM", "unshare_mount": "EPERM", "unshare_net": "EPERM", "unshare_pid": "EPERM",
        "unshare_ipc": "EPERM", "unshare_uts": "EPERM", "setns": "EPERM", "clone3": "ENOSYS",
        "clone_newuser": "EPERM",
    }


def test_i33_6_container_shape_refuses_the_unshare_tool() -> None:
    require_shapes("unshare")
    for flag in ("-U", "-m"):
        done = in_shape("container", "unshare", flag, "true")
        assert done.returncode != 0
        assert "Operation not permitted" in done.stderr


def test_i33_6_container_shape_still_forks_starts_threads_and_runs_commands() -> None:
    require_shapes()
    assert python_in_shape("container", PROBE_PROCESSES) == {"fork": 7, "thread": ["thread"], "true": 0}


def test_i33_6_container_shape_drops_cap_sys_admin_from_every_set_of_every_descendant() -> None:
    require_shapes("capsh")
    done = in_shape("container", "sh", "-c", "cat /proc/self/status")  # cat: a descendant of CMD
    assert done.returncode == 0, done.stderr
    caps = capabilities(done.stdout)
    admin = 1 << CAP_SYS_ADMIN
    assert all(not value & admin for value in caps.values()), caps
    assert caps["CapEff"] & 1 << 1  # still root with its other capabilities (CAP_DAC_OVERRIDE)
    assert "Seccomp:\t2" in done.stdout and "NoNewPrivs:\t0" in done.stdout
    assert in_shape("container", "capsh", "--has-p=cap_sys_admin").returncode != 0
    assert in_shape("container", "capsh", "--has-b=cap_sys_admin").returncode != 0


def test_i33_6_no_bwrap_shape_keeps_cap_sys_admin_and_namespaces() -> None:
    require_shapes("unshare")
    done = in_shape("no-bwrap", "sh", "-c", "cat /proc/self/status")
    assert capabilities(done.stdout)["CapEff"] & 1 << CAP_SYS_ADMIN
    assert "Seccomp:\t0" in done.stdout
    code = "import ctypes; print(ctypes.CDLL(None, use_errno=True).unshare(0x00020000))"
    assert in_shape("no-bwrap", sys.executable, "-c", code).stdout.strip() == "0"
    assert in_shape("no-bwrap", "unshare", "-U", "true").returncode == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_i33_6_shapes_hide_bwrap_on_path_and_leave_the_host_s_as_it_was(shape: str, tmp_path: Path) -> None:
    require_shapes()
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho started\n")
    fake.chmod(0o755)
    link = tmp_path / "links" / "bwrap"  # found first: hidden through the file it names
    link.parent.mkdir()
    link.symlink_to(fake)
    path = os.pathsep.join([str(link.parent), str(fake.parent), os.environ.get("PATH", os.defpath)])
    assert shutil.which("bwrap", path=path) == str(link)
    code = (f"import os, shutil, subprocess\nprint(shutil.which('bwrap'))\n"
            f"try:\n    subprocess.run([{str(fake)!r}])\nexcept PermissionError:\n    print('refused')\n")
    done = in_shape(shape, sys.executable, "-c", code, env={**os.environ, "PATH": path})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "refused"]
    assert shutil.which("bwrap", path=path) == str(link)  # the bind stayed in the shape's namespace
    assert fake.read_text() == "#!/bin/sh\necho started\n"


def test_i33_6_every_bwrap_a_lookup_could_find_is_hidden_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, on_path, in_bin = tmp_path / "real", tmp_path / "path", tmp_path / "bin"
    for folder in (real, on_path, in_bin):
        folder.mkdir()
    (real / "bwrap").write_text("")
    (on_path / "bwrap").symlink_to(real / "bwrap")
    (in_bin / "bwrap").write_text("")
    monkeypatch.setattr(launcher, "BIN_DIRS", (str(in_bin),))
    search = os.pathsep.join([str(on_path), str(real), "relative", str(tmp_path / "missing")])
    assert launcher.bwrap_paths(search) == [str(real / "bwrap"), str(in_bin / "bwrap")]


@pytest.mark.parametrize("shape", SHAPES)
def test_i33_6_shapes_name_themselves_and_pass_the_exit_status_through(shape: str) -> None:
    require_shapes()
    done = in_shape(shape, "sh", "-c", f'printf %s "${SHAPE_VARIABLE}"; exit 3')
    assert (done.returncode, done.stdout) == (3, shape)
    assert in_shape(shape, "no-such-command-i33").returncode == 127


def test_i33_6_launcher_refuses_a_shape_it_cannot_make_in_one_line() -> None:
    require_shapes()
    nested = in_shape("container", sys.executable, str(LAUNCHER), "--shape", "no-bwrap", "--", "true")
    assert nested.returncode == 2
    assert nested.stderr.splitlines() == [
        "launcher: refused: unshare(CLONE_NEWNS) failed: Operation not permitted (EPERM)"
    ]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--shape", "container", "--", "true"], "the 'container' shape is made by root"),
        (["--shape", "vm", "--", "true"], "unknown shape 'vm'"),
        (["--shape", "container", "true"], "no command after `--`"),
        (["--", "true"], "expected --shape SHAPE before `--`"),
    ],
)
def test_i33_6_launcher_refuses_non_root_and_bad_command_lines_in_one_line(
    args: list[str], reason: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # refused before anything changes
    assert launcher.main(args) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"launcher: refused: {reason}")


def _landlock_enabled() -> bool:
    """The kernel answers ``landlock_create_ruleset(NULL, 0, VERSION)`` with an ABI (asked
    directly: securityfs, where ``lsm`` is listed, is often not mounted)."""
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    return int(syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))) > 0


@pytest.mark.parametrize("backend", ["landlock", "auto"])
@pytest.mark.parametrize("shape", SHAPES)
def test_i33_6_landlock_gateway_starts_a_command_in_each_shape(
    shape: str, backend: str, tmp_path: Path
) -> None:
    require_shapes()
    if not _landlock_enabled():
        pytest.skip("Landlock is not enabled in this kernel (needs Linux >= 5.13, landlock in lsm=)")
    try:
        from tests.sandbox.conftest import open_to_others
    except ImportError as broken:
        pytest.fail(f"agentloom does not import here, in or out of a shape: {broken}")
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    work.mkdir()
    if shape == "container":  # commands run at the host's paths there: pytest's are 0700
        open_to_others(work)
        open_to_others(out)
    script = tmp_path / "run_true.py"
    script.write_text(RUN_TRUE)
    argv = [sys.executable, str(script), backend, str(out), str(work)]
    outside = subprocess.run(argv, capture_output=True, text=True, timeout=EXIT_DEADLINE_S)
    assert outside.returncode == 0, f"the gateway fails outside the shapes too: {outside.stderr}"
    inside = in_shape(shape, *argv)
    assert inside.returncode == 0, inside.stderr
    assert json.loads(inside.stdout) == {"exit_code": 0, "sandbox_mode": "landlock"}
