"""The confining implementation of the stdio launch port (``launch.StdioLaunch``): every stdio
MCP server starts inside the sandbox of its run's workspace scope (000 §6.2, §7.2).

::

    sandboxed_launch(server, ctx) ─► StdioServers.prepare(scope, epoch, StdioCommand)
        ─► StdioServerParameters(argv of the sandbox supervisor, the server's env)
    revoke_run(run_id, epoch) / the bound gateway's revoke ─► every server of the run is gone

The sandbox is the one of ``exec`` (``agentloom.sandbox.stdio``; ``docs/mcp.md``, "Sandboxed
stdio servers"). Servers go through the gateway given to ``bind_gateway`` (the run
environment's, so the run's cleanup revokes them with its ``exec`` commands); without one, a
gateway of this process per backend, made on first use (``make_gateway``: ``auto`` is
bubblewrap, else Landlock, else ``SANDBOX_UNAVAILABLE`` — never unconfined).

Owns: turning a server's config and launch context into a sandboxed launch, the process's
stdio gateways, revoking a run's servers. Does not own: the sandbox (``agentloom.sandbox``),
the MCP session (``connection``), when a run ends (the kernel).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

from agentloom.config.mcp import StdioServerConfig
from agentloom.ids import new_id
from agentloom.mcp.launch import LaunchContext, LaunchParameters
from agentloom.sandbox import EnvironmentPolicy, RevocationReceipt, make_gateway
from agentloom.sandbox.ports import SandboxBackend, SandboxGateway, SandboxScope
from agentloom.sandbox.stdio import StdioCommand, StdioLaunch, StdioMount, StdioServers
from mcp import StdioServerParameters

__all__ = ["bind_gateway", "prepare", "revoke_run", "sandboxed_launch", "stdio_servers"]

_lock = threading.Lock()
_bound: StdioServers | None = None
_own: dict[tuple[object, ...], StdioServers] = {}
#: ``lease_epoch`` of a server started outside a run (``agentloom mcp list``, discovery).
NO_RUN_EPOCH = 0


def bind_gateway(gateway: SandboxGateway) -> StdioServers:
    """Start every later stdio server through ``gateway`` (the run environment's), so that
    its ``revoke`` — the run's cleanup, a takeover — stops them with the run's commands."""
    global _bound
    with _lock:
        if _bound is None or _bound.gateway is not gateway:
            _bound = StdioServers(gateway)
        return _bound


def stdio_servers(backend: SandboxBackend, policy: EnvironmentPolicy) -> StdioServers:
    """The servers' sandbox for ``backend``: the bound gateway's, else one of this process.

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE`` when ``backend`` cannot confine anything here.
    """
    with _lock:
        if _bound is not None:
            return _bound
        key = (backend, policy.path, policy.tmp_size_bytes, policy.max_processes,
               policy.max_file_bytes, policy.max_cpu_s)
        servers = _own.get(key)
        if servers is None:
            gateway = make_gateway(policy, backend=backend, output_dir=_state_dir())
            servers = _own[key] = StdioServers(gateway)
        return servers


def sandboxed_launch(server: StdioServerConfig, ctx: LaunchContext) -> StdioServerParameters:
    """``server`` confined to ``ctx.workspace`` (the launch port; see ``launch``).

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE``, ``LEASE_REVOKED``, ``COMMAND_INVALID`` (the
            command is not on ``PATH``), ``MOUNT_INVALID``, ``ENV_INVALID``; nothing started.
    """
    launch = prepare(server, ctx)
    return LaunchParameters(command=launch.argv[0], args=list(launch.argv[1:]),
                            env=dict(launch.env), cwd=None, workspace_path=launch.workspace_path)


def prepare(server: StdioServerConfig, ctx: LaunchContext) -> StdioLaunch:
    """The sandboxed launch behind ``sandboxed_launch`` (with where the server sees its
    workspace, ``workspace_path``)."""
    servers = stdio_servers(ctx.backend, ctx.policy)
    run_id = ctx.run_id or f"mcp-{new_id()}"  # outside a run: a scope of its own
    epoch = ctx.lease_epoch if ctx.lease_epoch is not None else NO_RUN_EPOCH
    # A workspace scope's folder is the workspace package's (the sandbox uid's), a scratch
    # folder (``scratch_workspace``: the sandbox uid's too) or a folder of the user's, which the
    # sandbox never changes: it binds it idmapped, or works in it as its owner (``reach``).
    scope = SandboxScope(workspace_scope_id=ctx.workspace_scope_id or run_id, run_id=run_id,
                         work_dir=ctx.workspace)
    mounts = tuple(
        StdioMount(path=Path(os.path.normpath(ctx.base_dir / m.path)), writable=m.mode == "rw")
        for m in server.mounts
    )
    command = StdioCommand(command=server.command, args=tuple(server.args), env=dict(ctx.env),
                           mounts=mounts, network=server.network)
    return servers.prepare(scope, epoch, command)


async def revoke_run(run_id: str, lease_epoch: int = 1 << 62) -> RevocationReceipt:
    """Stop every stdio server of ``run_id`` started under ``lease_epoch`` or an older one
    (default: all), in every gateway of this process, and say whether all are provably gone.
    Later launches for those epochs are refused (``LEASE_REVOKED``)."""
    with _lock:
        every = ([_bound] if _bound is not None else []) + list(_own.values())
    killed, confirmed = 0, True
    for servers in every:
        receipt = await servers.gateway.revoke(run_id, lease_epoch)
        killed, confirmed = killed + receipt.killed, confirmed and receipt.confirmed
    return RevocationReceipt(run_id=run_id, lease_epoch=lease_epoch, killed=killed,
                             confirmed=confirmed, at=time.time())


def _state_dir() -> Path:
    """This user's folder for the gateways' spools: traversable, never listable by others."""
    path = Path(tempfile.gettempdir()) / f"agentloom-mcp-{os.geteuid()}"
    path.mkdir(mode=0o711, exist_ok=True)
    info = path.lstat()
    if info.st_uid != os.geteuid() or not path.is_dir() or path.is_symlink():
        raise PermissionError(f"{path} is not a folder of this user")
    os.chmod(path, 0o711)
    return path
