"""Stdio MCP servers inside the run's sandbox (issue #15, isolation and acceptance 4; 000 §6.2,
§7.2, §7.4): real servers (the probe in ``servers/probe.py``, ``mcp-server-git`` from PyPI,
``@modelcontextprotocol/server-filesystem`` from npm) started by ``sandboxed_launch`` under
real bubblewrap and spoken to with the ``mcp`` client. Skipped with a one-line reason where
bubblewrap is missing (failed under ``CI=true``)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_npm import FILESYSTEM, NpmUnavailable, install_filesystem
from tests.sandbox.conftest import confined_gateway, gone, processes_with, require_bwrap, searchable
from tests.workspace.corpus import payloads
from tests.workspace.layout import Layout, build_layout, leaks

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.config.mcp import StdioServerConfig
from agentloom.ids import new_id
from agentloom.kernel import Kernel
from agentloom.mcp import list_servers, sandboxed
from agentloom.mcp.launch import LaunchContext, unconfined_launch
from agentloom.sandbox import EnvironmentPolicy, SandboxError, sandbox_identity
from agentloom.sandbox.stdio import StdioLaunch, StdioServers
from mcp import Client, StdioServerParameters

SERVERS = Path(__file__).parent / "servers"
PROBE = SERVERS / "probe.py"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StdioServers:
    """Stdio servers through a real bubblewrap gateway, bound as the run environment's is."""
    gateway = confined_gateway("bubblewrap", EnvironmentPolicy(), tmp_path / "out")
    monkeypatch.setattr(sandboxed, "_bound", None)
    return sandboxed.bind_gateway(gateway)


def _give_to_sandbox(folder: Path) -> None:
    """What the workspace package does for its work folders: the sandbox uid owns them."""
    identity = sandbox_identity()
    if identity is None:
        return
    for top, dirs, files in os.walk(folder):
        for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
            os.lchown(name, *identity)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "scope" / "work"
    folder.mkdir(parents=True)
    (folder / "inside.txt").write_text("INSIDE")
    _give_to_sandbox(folder)
    return folder


def _context(work: Path, *, run_id: str = "run-1", epoch: int = 1,
             env: dict[str, str] | None = None) -> LaunchContext:
    return LaunchContext(server_name="probe", run_id=run_id, lease_epoch=epoch,
                         workspace_scope_id="ws-1", workspace=work, base_dir=REPO,
                         backend="bubblewrap", env=env or {})


def _probe(**extra: Any) -> StdioServerConfig:
    return StdioServerConfig.model_validate({
        "transport": "stdio", "command": sys.executable, "args": [str(PROBE)],
        "mounts": [{"path": str(SERVERS.relative_to(REPO))}], **extra})


def _params(launch: StdioLaunch) -> StdioServerParameters:
    return StdioServerParameters(command=launch.argv[0], args=list(launch.argv[1:]),
                                 env=dict(launch.env))


@asynccontextmanager
async def _connected(params: StdioServerParameters) -> AsyncIterator[Client]:
    async with Client(params, mode="legacy") as client:
        yield client


async def _text(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_s6_2_stdio_server_reads_its_workspace_and_nothing_outside_its_scope(
    servers: StdioServers, work: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary.txt"  # beside the scope, readable by anyone on the host
    canary.write_text("CANARY-OUTSIDE")
    os.chmod(canary, 0o644)
    other = tmp_path / "other-scope" / "work"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("CANARY-OTHER-RUN")
    launch = sandboxed.prepare(_probe(), _context(work))
    async with _connected(_params(launch)) as client:
        assert await _text(client, "read_file", path="inside.txt") == "INSIDE"
        assert await _text(client, "read_file", path=f"{launch.workspace_path}/inside.txt") == "INSIDE"
        for path in (str(canary), "../../canary.txt", str(other / "secret.txt"), "/etc/shadow",
                     "/etc/passwd", str(tmp_path / "out"),
                     "/proc/1/root/etc/hostname", str(Path.home() / ".bashrc")):
            seen = await _text(client, "read_file", path=path)
            assert seen.startswith("error:"), (path, seen)


async def test_s6_2_a_server_installed_outside_work_finds_its_workspace_at_work(
    servers: StdioServers, work: Path
) -> None:
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("/usr/bin/python3 is not installed")
    code = "import os; print(os.getcwd()); print(open('/work/inside.txt').read())"
    config = StdioServerConfig.model_validate(
        {"transport": "stdio", "command": "/usr/bin/python3", "args": ["-c", code]})
    launch = sandboxed.prepare(config, _context(work))
    assert launch.workspace_path == "/work" and launch.installation.roots == ()
    proc = await asyncio.create_subprocess_exec(
        *launch.argv, env=dict(launch.env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, start_new_session=True)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert out.decode().split() == ["/work", "INSIDE"]


async def test_s6_2_stdio_server_gets_only_its_declared_environment(
    servers: StdioServers, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOOM_PARENT_SECRET", "parent-secret-5c1e")
    env = {"DECLARED": "declared-secret-77a0", "LD_PRELOAD": "/tmp/evil.so"}
    params = sandboxed.sandboxed_launch(_probe(), _context(work, env=env))
    assert "declared-secret-77a0" not in " ".join([params.command, *params.args])
    async with _connected(params) as client:
        assert await _text(client, "env", name="AGENTLOOM_PARENT_SECRET") == "<unset>"
        assert await _text(client, "env", name="DECLARED") == "declared-secret-77a0"
        names = (await _text(client, "environ")).splitlines()
        assert set(names) == {"DECLARED", "HOME", "LANG", "PATH", "PWD"}  # PWD: bubblewrap's
        assert processes_with("declared-secret-77a0") == []  # in no host command line


async def test_s6_2_stdio_server_has_no_network_unless_its_config_allows_it(
    servers: StdioServers, work: Path
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        async with _connected(sandboxed.sandboxed_launch(_probe(), _context(work))) as client:
            assert (await _text(client, "connect", port=port)).startswith("error:")
        allowed = _probe(network=True)
        async with _connected(sandboxed.sandboxed_launch(allowed, _context(work))) as client:
            assert await _text(client, "connect", port=port) == "connected"


async def test_s7_4_stdio_server_and_what_it_started_are_gone_once_its_client_closes(
    servers: StdioServers, work: Path
) -> None:
    marker = f"agentloom-daemon-{new_id()}"
    launch = sandboxed.prepare(_probe(), _context(work))
    async with _connected(_params(launch)) as client:
        assert await _text(client, "daemon", marker=marker) == "started"
        assert processes_with(marker), "the daemon should run while the server does"
        assert processes_with(launch.token)
    assert processes_with(marker) == []
    assert processes_with(launch.token) == []


async def test_s6_2_listing_servers_outside_a_run_starts_them_sandboxed_in_a_scratch_folder(
    servers: StdioServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOOM_PARENT_SECRET", "parent-secret-9d3f")
    (listing,) = await list_servers({"probe": _probe()}, base_dir=REPO, backend="bubblewrap")
    assert {"read_file", "env", "daemon"} <= {tool.name for tool in listing.tools}
    assert listing.record.protocol_version == "2025-11-25"


async def test_s7_4_run_revocation_stops_a_server_its_client_never_closed(
    servers: StdioServers, work: Path
) -> None:
    marker = f"agentloom-daemon-{new_id()}"
    run_id = f"run-{new_id()}"
    launch = sandboxed.prepare(_probe(), _context(work, run_id=run_id, epoch=3))
    async with _connected(_params(launch)) as client:
        assert await _text(client, "daemon", marker=marker) == "started"
        receipt = await servers.gateway.revoke(run_id, 3)  # what the run's cleanup calls
        assert (receipt.killed, receipt.confirmed) == (1, True)
        assert processes_with(marker) == []
        assert processes_with(launch.token) == []
    with pytest.raises(SandboxError) as refused:
        sandboxed.prepare(_probe(), _context(work, run_id=run_id, epoch=3))
    assert refused.value.code == "LEASE_REVOKED"


async def test_s7_4_the_runs_cleanup_stops_a_server_its_client_never_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_bwrap()
    monkeypatch.setattr(sandboxed, "_bound", None)
    monkeypatch.setattr(sandboxed, "_own", {})  # this test's own gateway, as a runtime makes it
    kernel = Kernel(f"sqlite:///{tmp_path / 'store.db'}", workspace_root=tmp_path / "ws",
                    sandbox_backend="bubblewrap")
    try:
        lease = await kernel.start_run(data={"task": "t"})
        (scope,) = kernel.environment.scopes.scopes_for_run(lease.run_id)
        folder = kernel.environment.scopes.ensure_folder(scope)
        ctx = LaunchContext(server_name="probe", run_id=lease.run_id, lease_epoch=lease.lease_epoch,
                            workspace_scope_id=scope.workspace_scope_id, workspace=folder,
                            base_dir=REPO, backend="bubblewrap")
        marker = f"agentloom-daemon-{new_id()}"
        launch = sandboxed.prepare(_probe(), ctx)
        async with _connected(_params(launch)) as client:
            assert await _text(client, "daemon", marker=marker) == "started"
            cleanup = await kernel.end_run(lease, "succeeded")  # the session is still open
            assert cleanup.state == "done", cleanup
            assert processes_with(marker) == [] and processes_with(launch.token) == []
            assert not folder.exists()
    finally:
        kernel.close()


#: A runtime in a process of its own: starts the probe through the launcher, has it leave a
#: daemon behind, says ``ready`` and waits to be killed.
RUNTIME = r"""
import asyncio, sys
from pathlib import Path
from mcp import Client
from agentloom.config.mcp import StdioServerConfig
from agentloom.mcp import sandboxed
from agentloom.mcp.launch import LaunchContext
from agentloom.sandbox import EnvironmentPolicy, make_gateway

async def main(out, work, servers, marker):
    sandboxed.bind_gateway(make_gateway(EnvironmentPolicy(), backend="bubblewrap", output_dir=Path(out)))
    config = StdioServerConfig.model_validate({"transport": "stdio", "command": sys.executable,
        "args": [servers + "/probe.py"], "mounts": [{"path": servers}]})
    ctx = LaunchContext(server_name="probe", run_id="r", lease_epoch=1, workspace_scope_id="ws",
                        workspace=Path(work), base_dir=Path(servers), backend="bubblewrap")
    async with Client(sandboxed.sandboxed_launch(config, ctx), mode="legacy") as client:
        await client.call_tool("daemon", {"marker": marker})
        print("ready", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_s7_2_sigkill_of_the_runtime_ends_its_stdio_servers_and_what_they_started(
    tmp_path: Path, work: Path
) -> None:
    require_bwrap()
    searchable(tmp_path)
    marker = f"agentloom-daemon-{new_id()}"
    runtime = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RUNTIME, str(tmp_path / "out"), str(work), str(SERVERS), marker,
        stdout=asyncio.subprocess.PIPE, cwd=REPO)
    try:
        assert runtime.stdout is not None
        assert await asyncio.wait_for(runtime.stdout.readline(), timeout=60) == b"ready\n"
        assert processes_with(marker)
    finally:
        runtime.kill()
        await runtime.wait()
    assert await asyncio.to_thread(gone, marker) == []


async def test_s7_4_a_launch_revoked_before_it_was_spawned_never_starts(
    servers: StdioServers, work: Path
) -> None:
    run_id = f"run-{new_id()}"
    launch = sandboxed.prepare(_probe(), _context(work, run_id=run_id))
    receipt = await sandboxed.revoke_run(run_id)
    assert (receipt.killed, receipt.confirmed) == (0, True)
    late = await asyncio.create_subprocess_exec(
        *launch.argv, env=dict(launch.env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(late.communicate(), timeout=60)
    assert late.returncode != 0 and out == b""  # refused: nothing was started
    assert b"no longer exists" in err
    assert processes_with(launch.token) == []


def test_s6_2_stdio_server_outside_its_workspace_mounts_are_refused(
    servers: StdioServers, work: Path
) -> None:
    enclosing = _probe(mounts=[{"path": str(work.parent)}])
    with pytest.raises(SandboxError) as refused:
        sandboxed.prepare(enclosing, _context(work))
    assert refused.value.code == "MOUNT_INVALID"
    with pytest.raises(SandboxError) as missing:
        sandboxed.prepare(_probe(command="no-such-mcp-server-here"), _context(work))
    assert missing.value.code == "COMMAND_INVALID"


@pytest.fixture
def repo(work: Path) -> Path:
    """The workspace as a git repository: one commit, one untracked file."""
    git = ["git", "-C", str(work), "-c", "safe.directory=*", "-c", "user.name=t",
           "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "inside.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    (work / "untracked.txt").write_text("new")
    _give_to_sandbox(work)
    return work


async def test_s6_2_mcp_server_git_speaks_mcp_from_the_sandbox_on_a_repo_in_the_workspace(
    servers: StdioServers, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = repo
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "mcp-server-git").exists():
        pytest.skip("mcp-server-git is not installed (pip install mcp-server-git; the dev extra has it)")
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    config = StdioServerConfig.model_validate(
        {"transport": "stdio", "command": "mcp-server-git", "args": ["--repository", "."]})
    launch = sandboxed.prepare(config, _context(work))
    assert launch.installation.executable == venv_bin / "mcp-server-git"
    async with _connected(sandboxed.sandboxed_launch(config, _context(work))) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"git_status", "git_log"} <= tools
        status = await _text(client, "git_status", repo_path=".")
        assert "untracked.txt" in status, status
        log = await _text(client, "git_log", repo_path=".")
        assert "first" in log, log


# -- the escape corpus through the reference filesystem server, given / as its root ----------


@pytest.fixture(scope="module")
def filesystem_server() -> Path:
    """``mcp-server-filesystem`` from npm, installed once into ``<repo>/.cache/mcp-npm``."""
    try:
        return install_filesystem()
    except NpmUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{FILESYSTEM} could not be installed: {exc}")
        pytest.skip(f"{FILESYSTEM} could not be installed: {exc}")


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[Layout]:
    built = build_layout(tmp_path / "layout")
    for name in ("hard_canary", "hard_sentinel"):  # a hard link in the folder is its file
        (built.root / name).unlink()
    for folder, _, files in os.walk(built.outside):  # only the sandbox stands in the way
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    yield built


def _utf8(path: str) -> bool:
    """JSON-RPC carries UTF-8 text only: a lone surrogate cannot even be sent."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def _read_corpus(params: StdioServerParameters, corpus: list[str]) -> str:
    seen: list[str] = []
    async with _connected(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        read = "read_text_file" if "read_text_file" in names else "read_file"
        for path in corpus:
            for tool, args in ((read, {"path": path}), ("list_directory", {"path": path})):
                try:
                    seen.append(await _text(client, tool, **args))
                except Exception as exc:  # a protocol error is a refusal too
                    seen.append(f"refused: {exc}")
    return "\n".join(seen)


async def test_s6_2_acceptance_4_filesystem_server_rooted_at_slash_never_reads_outside_its_scope(
    servers: StdioServers, filesystem_server: Path, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    _give_to_sandbox(layout.root)
    corpus = [p for p in payloads(str(layout.base), len(layout.root.parts) - 1) if _utf8(p)]
    assert len(corpus) >= 1000
    config = StdioServerConfig.model_validate(
        {"transport": "stdio", "command": str(filesystem_server), "args": ["/"]})
    params = sandboxed.sandboxed_launch(config, _context(layout.root))
    out = await _read_corpus(params, corpus)
    assert out.count("\n") >= 2 * len(corpus) - 1  # every payload was tried
    assert not leaks(out), "a read or a listing escaped the workspace scope"

    # The control: the same server unconfined does reach the canary (the detector works).
    control = unconfined_launch(config, _context(layout.root))
    assert leaks(await _read_corpus(control, [str(layout.canary_file)]))


@pytest.mark.parametrize("backend", ["none", "bubblewrap"])
async def test_s6_2_roots_list_names_the_workspace_where_the_server_sees_it(
    backend: str, tmp_path: Path, everything: Path, node: str,
) -> None:
    """``roots/list`` (stdio only) is answered with the workspace as the server sees it — the
    launcher says where (``/work``, or the host path where ``/work`` would hide the server's
    installation, or the host folder unconfined) — never a path it cannot open."""
    from mcp_support import everything_stdio

    from agentloom.mcp import McpSessions, McpToolHandler

    if backend == "bubblewrap":
        require_bwrap()
    kernel = Kernel(f"sqlite:///{tmp_path / 'store.db'}", workspace_root=tmp_path / "ws",
                    sandbox_backend=backend)  # type: ignore[arg-type]
    try:
        lease = await kernel.start_run(data={"task": "t"})
        (scope,) = kernel.environment.scopes.scopes_for_run(lease.run_id)
        folder = kernel.environment.scopes.ensure_folder(scope)
        # its installed command (a script run by node): the launcher mounts its node_modules
        config = (everything_stdio(node, everything) if backend == "none" else
                  StdioServerConfig(transport="stdio", command=str(
                      everything.parents[3] / ".bin" / "mcp-server-everything"), args=("stdio",)))
        (listing,) = await list_servers({"everything": config}, base_dir=tmp_path,
                                        backend=backend, workspace=folder)  # type: ignore[arg-type]
        (roots,) = [t for t in listing.tools if t.name == "get-roots-list"]
        sessions = McpSessions(notify=lambda kind, payload: None, backend=backend,  # type: ignore[arg-type]
                               workspace_of=lambda scope_id: folder)
        launched = sessions.launch(config, sessions._launch_context(roots, _attempt(lease, scope)))
        seen = getattr(launched, "workspace_path", None)
        assert seen is not None
        result = await McpToolHandler(roots, sessions).invoke_once(
            CapabilityRequest(operation_id="op", resource_version_id="r",
                              capability_key=roots.capability_key, arguments={}),
            _attempt(lease, scope))
        await sessions.aclose()
        assert result.status == "succeeded", result
        assert Path(seen).as_uri() in result.text()
        if backend == "none":
            assert seen == str(folder)
    finally:
        kernel.close()


def _attempt(lease: Any, scope: Any) -> AttemptContext:
    return AttemptContext(operation_id="op", attempt_no=1, run_id=lease.run_id, role="main",
                          deadline=time.time() + 60, workspace_scope_id=scope.workspace_scope_id,
                          lease_epoch=lease.lease_epoch)
