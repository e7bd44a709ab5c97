"""How a stdio MCP server process is started: the one launch port, and its unconfined default.

The port (what ``agentloom.mcp.sandboxed`` implements)::

    StdioLaunch = Callable[[StdioServerConfig, LaunchContext], StdioServerParameters]

    def sandboxed_launch(server: StdioServerConfig, ctx: LaunchContext) -> StdioServerParameters:
        '''argv / env / cwd that run ``server`` confined to ``ctx.workspace``.'''

- ``server`` is the validated config entry (``agentloom.config.mcp.StdioServerConfig``):
  ``command`` (resolved on ``PATH`` by the launcher), ``args``, ``mounts`` (``McpMount``:
  ``path`` as written, ``mode`` ``ro`` / ``rw``), ``network`` (default false). Read its ``env``
  from ``ctx.env``, never from ``server.env``: ``ctx.env`` holds the values with every
  ``${VAR}`` already read from AgentLoom's environment (secrets: never log, store or show them).
- ``ctx`` is a ``LaunchContext``: the run, its lease epoch and workspace scope, ``workspace``
  (the host folder of that scope, ``None`` outside a run: ``agentloom mcp list`` and the
  catalog listing at build time use a fresh empty folder), ``base_dir`` (the config file's
  folder; relative ``mounts`` paths are read from it), the sandbox ``backend`` and ``policy``.
- It returns the ``mcp.StdioServerParameters`` the official ``mcp`` stdio client spawns
  (``command``, ``args``, ``env``, ``cwd``). Note that ``mcp``'s ``stdio_client`` merges ``env``
  over its own few inherited variables (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``,
  ``USER``); a confining launcher sets the server's environment inside the sandbox.
- It raises ``agentloom.sandbox.SandboxError`` (``SANDBOX_UNAVAILABLE`` when no confining
  backend is usable here, other codes for a bad mount); nothing is then started.
- Stopping: the ``mcp`` client closes stdin, then SIGTERM / SIGKILL of the process group when
  the run's MCP sessions close (``Kernel.end_run``); a launcher may also register the process
  with the sandbox's revocation so a crashed runtime's servers are reaped.

``launcher_for(backend)`` picks the launcher: ``none`` (written in the config, recorded on the
run) is ``unconfined_launch``; any other backend is ``sandboxed.sandboxed_launch`` — and where
that module or a confining backend is missing, starting a server is refused
(``SANDBOX_UNAVAILABLE``). Nothing runs unconfined unless the config says so.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentloom.config.mcp import StdioServerConfig
from agentloom.sandbox import EnvironmentPolicy, SandboxError
from agentloom.sandbox.errors import SANDBOX_UNAVAILABLE
from agentloom.sandbox.ports import SandboxBackend
from mcp import StdioServerParameters

__all__ = ["LaunchContext", "LaunchParameters", "StdioLaunch", "launcher_for", "unconfined_launch"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchContext:
    """The trusted facts a launcher starts one stdio server with (see the module docstring).

    ``env`` is the server's declared environment with its ``${VAR}`` references resolved:
    secrets, held in memory only for the start."""

    server_name: str
    run_id: str | None
    lease_epoch: int | None
    workspace_scope_id: str | None
    workspace: Path
    base_dir: Path
    backend: SandboxBackend
    policy: EnvironmentPolicy = field(default_factory=EnvironmentPolicy)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)


class LaunchParameters(StdioServerParameters):
    """What a launcher returns: the process the ``mcp`` stdio client spawns, and
    ``workspace_path``, where the server sees its workspace (``/work`` in a bubblewrap sandbox,
    else the host folder) — the root a ``roots/list`` request is answered with."""

    workspace_path: str | None = None


StdioLaunch = Callable[[StdioServerConfig, LaunchContext], StdioServerParameters]
"""The launch port: a server config and its context in, the process to spawn out (a
``LaunchParameters`` says where the server sees its workspace)."""

MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"


def unconfined_launch(server: StdioServerConfig, ctx: LaunchContext) -> StdioServerParameters:
    """``sandbox.backend: none``: the plain command, in the workspace folder, with only the
    declared environment plus ``PATH`` (the host's, else a minimal one) and ``HOME`` (the
    workspace) unless the config sets them."""
    import os

    env = {"PATH": os.environ.get("PATH") or MINIMAL_PATH, "HOME": str(ctx.workspace), **ctx.env}
    return LaunchParameters(command=server.command, args=list(server.args), env=env,
                            cwd=str(ctx.workspace), workspace_path=str(ctx.workspace))


def _refuse(why: str) -> StdioLaunch:
    def refused(server: StdioServerConfig, ctx: LaunchContext) -> StdioServerParameters:
        raise SandboxError(SANDBOX_UNAVAILABLE, (
            f"MCP server {ctx.server_name!r} was not started: {why}. Nothing runs unconfined "
            "unless the config says so: install bubblewrap, or write `sandbox: {backend: none}` "
            "to run stdio servers unconfined (not recommended)"))
    return refused


def launcher_for(backend: SandboxBackend) -> StdioLaunch:
    """The launcher for the run's sandox backend: ``unconfined_launch`` for ``none``, the
    sandboxed launcher otherwise, or one that refuses every start (``SANDBOX_UNAVAILABLE``)
    when no sandboxed launcher is installed."""
    if backend == "none":
        return unconfined_launch
    try:
        module = importlib.import_module("agentloom.mcp.sandboxed")
    except ImportError:
        return _refuse(f"no sandboxed launcher for stdio servers is available (backend {backend!r})")
    launch: StdioLaunch | None = getattr(module, "sandboxed_launch", None)
    if launch is None:
        return _refuse("agentloom.mcp.sandboxed has no sandboxed_launch")
    return launch
