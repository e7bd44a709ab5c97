"""Stdio servers under Landlock (issue #15, isolation; 000 §6.2, §7.2; issue #33): where
bubblewrap is missing, a server is confined as ``exec`` commands are — its workspace, its
declared environment, no network, and gone with the run. Skipped with a one-line reason where
the kernel has no Landlock. The server is ``servers/line_probe.py`` on the system ``python3``.
A root runtime that may make a mount namespace gives the server a root of its own, so a venv
below ``/root`` runs; one that may not (a default container) runs it as the sandbox uid at the
host's paths, and refuses an installation that uid cannot reach, naming the folder."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from tests.sandbox.conftest import confined_gateway, gone, processes_with, searchable

from agentloom.ids import new_id
from agentloom.sandbox import EnvironmentPolicy, SandboxError, SandboxScope, sandbox_identity
from agentloom.sandbox.stdio import StdioCommand, StdioLaunch, StdioMount, StdioServers

SERVERS = Path(__file__).parent / "servers"
LINE_PROBE = SERVERS / "line_probe.py"
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture
def servers(tmp_path: Path) -> StdioServers:
    return StdioServers(confined_gateway("landlock", EnvironmentPolicy(), tmp_path / "out"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A run's work folder as the workspace package makes it: the sandbox uid's."""
    folder = tmp_path / "scope" / "work"
    folder.mkdir(parents=True)
    (folder / "inside.txt").write_text("INSIDE")
    if (identity := sandbox_identity()) is not None:
        os.chown(folder, *identity)
    searchable(tmp_path)
    return folder


def _command(**extra: object) -> StdioCommand:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{SYSTEM_PYTHON} is not installed")
    fields: dict[str, object] = {"command": SYSTEM_PYTHON, "args": (str(LINE_PROBE),),
                                 "mounts": (StdioMount(path=SERVERS),), **extra}
    return StdioCommand(**fields)  # type: ignore[arg-type]


@asynccontextmanager
async def _running(launch: StdioLaunch) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        *launch.argv, env=dict(launch.env), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, start_new_session=True)
    try:
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), timeout=30)


async def _ask(proc: asyncio.subprocess.Process, **request: object) -> object:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    await proc.stdin.drain()
    return json.loads(await asyncio.wait_for(proc.stdout.readline(), timeout=30))


async def test_s6_2_under_landlock_a_stdio_server_keeps_to_its_scope_env_and_no_network(
    servers: StdioServers, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY-OUTSIDE")
    os.chmod(canary, 0o644)
    monkeypatch.setenv("AGENTLOOM_PARENT_SECRET", "parent-secret-4b2d")
    run_id = f"run-{new_id()}"
    scope = SandboxScope(workspace_scope_id="ws", run_id=run_id, work_dir=work)
    launch = servers.prepare(scope, 1, _command(env={"DECLARED": "yes"}))
    namespace = servers.gateway.view == "namespace"  # type: ignore[attr-defined]
    assert launch.sandbox_mode == "landlock"
    assert launch.workspace_path == ("/work" if namespace and not str(SERVERS).startswith("/work/")
                                     else str(work))
    marker = f"agentloom-daemon-{new_id()}"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        async with _running(launch) as proc:
            assert await _ask(proc, op="read", path="inside.txt") == "INSIDE"
            for path in (str(canary), "../../canary.txt", "/etc/passwd", str(tmp_path / "out")):
                seen = await _ask(proc, op="read", path=path)
                assert isinstance(seen, str) and seen.startswith("error:"), (path, seen)
            environ = await _ask(proc, op="environ")  # a namespace view has a private /tmp
            assert environ == sorted({"DECLARED", "HOME", "LANG", "PATH",
                                      *(() if namespace else ("TMPDIR",))})
            port = listener.getsockname()[1]
            assert str(await _ask(proc, op="connect", port=port)).startswith("error:")
            assert await _ask(proc, op="daemon", marker=marker) == "started"
            assert processes_with(marker)
            receipt = await servers.gateway.revoke(run_id, 1)
            assert (receipt.killed, receipt.confirmed) == (1, True)
            assert processes_with(marker) == []
            assert processes_with(launch.token) == []


def _below_unsearchable() -> tuple[Path, Path]:
    """This interpreter (a venv's) and the first folder above it others cannot search."""
    venv_python = Path(sys.executable)
    unreachable = next((p for p in Path(os.path.realpath(venv_python)).parents
                        if not os.stat(p).st_mode & 0o001), None)
    if os.geteuid() != 0 or unreachable is None:
        pytest.skip("needs a root runtime whose interpreter lies below a folder others cannot search")
    return venv_python, unreachable


async def test_i33_1_with_a_mount_namespace_a_server_installed_below_root_runs_under_landlock(
    servers: StdioServers, work: Path
) -> None:
    venv_python, _ = _below_unsearchable()
    if servers.gateway.view != "namespace":  # type: ignore[attr-defined]
        pytest.skip("root may not make a mount namespace here (the 'container' shape)")
    scope = SandboxScope(workspace_scope_id="ws", run_id=new_id(), work_dir=work)
    launch = servers.prepare(scope, 1, StdioCommand(command=str(venv_python), args=(
        "-c", "import os, sys; print(os.getuid(), open('inside.txt').read(), sys.prefix)")))
    proc = await asyncio.create_subprocess_exec(
        *launch.argv, env=dict(launch.env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err
    uid, inside, prefix = out.decode().split()
    assert (int(uid), inside) == (65534, "INSIDE")  # the sandbox uid, never root
    assert Path(prefix) == Path(sys.prefix)


def test_i33_5_without_a_mount_namespace_an_installation_the_sandbox_uid_cannot_reach_is_refused(
    servers: StdioServers, work: Path
) -> None:
    venv_python, unreachable = _below_unsearchable()
    if servers.gateway.view == "namespace":  # type: ignore[attr-defined]
        pytest.skip("root may make a mount namespace here: the server runs (tested above)")
    scope = SandboxScope(workspace_scope_id="ws", run_id=new_id(), work_dir=work)
    with pytest.raises(SandboxError) as refused:
        servers.prepare(scope, 1, StdioCommand(command=str(venv_python), args=("-c", "pass")))
    assert refused.value.code == "FOLDER_UNREACHABLE"
    message = refused.value.error.message
    assert str(unreachable) in message and "uid 65534" in message and "CAP_SYS_ADMIN" in message


#: A runtime in a process of its own: starts the line probe under Landlock, has it leave a
#: daemon behind, says ``ready`` and waits to be killed.
RUNTIME = r"""
import asyncio, json, sys
from pathlib import Path
from agentloom.sandbox import EnvironmentPolicy, SandboxScope, make_gateway
from agentloom.sandbox.stdio import StdioCommand, StdioMount, StdioServers

async def main(out, work, servers, marker):
    stdio = StdioServers(make_gateway(EnvironmentPolicy(), backend="landlock", output_dir=Path(out)))
    launch = stdio.prepare(SandboxScope(workspace_scope_id="ws", run_id="r", work_dir=Path(work)), 1,
                           StdioCommand(command="/usr/bin/python3", args=(servers + "/line_probe.py",),
                                        mounts=(StdioMount(path=Path(servers)),)))
    proc = await asyncio.create_subprocess_exec(*launch.argv, env=dict(launch.env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, start_new_session=True)
    proc.stdin.write(json.dumps({"op": "daemon", "marker": marker}).encode() + b"\n")
    await proc.stdout.readline()
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_s7_2_under_landlock_sigkill_of_the_runtime_ends_its_servers_and_their_daemons(
    servers: StdioServers, work: Path, tmp_path: Path
) -> None:
    _command()  # skipped without the system python
    marker = f"agentloom-daemon-{new_id()}"
    runtime = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RUNTIME, str(tmp_path / "runtime-out"), str(work), str(SERVERS), marker,
        stdout=asyncio.subprocess.PIPE)
    try:
        assert runtime.stdout is not None
        assert await asyncio.wait_for(runtime.stdout.readline(), timeout=60) == b"ready\n"
        assert processes_with(marker)
    finally:
        runtime.kill()
        await runtime.wait()
    assert await asyncio.to_thread(gone, marker) == []
