"""The specs the stdio shim (``_stdio_shim``) starts a sandboxed server from, one per way of
confining it: bubblewrap (its flags and binds, staged by root), Landlock in a root of its own
(``_view`` entries and rules at the view's paths), Landlock at the host's paths (rules there),
and ``none``. ``stdio.StdioServers.prepare`` picks one; what the server sees is in
``docs/sandbox.md``, "Sandboxed stdio servers".
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentloom.sandbox import _kernel, _layout, reach
from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._installation import Installation
from agentloom.sandbox._limits import command_rlimits
from agentloom.sandbox.bubblewrap import SANDBOX_HOSTNAME, BubblewrapGateway
from agentloom.sandbox.identity import SANDBOX_UID
from agentloom.sandbox.landlock import LandlockGateway
from agentloom.sandbox.seccomp import seccomp_program

if TYPE_CHECKING:
    from agentloom.sandbox.stdio import StdioCommand, StdioMount

_READ_EXEC = _layout.READ_EXEC


def bwrap_spec(gateway: BubblewrapGateway, binds: list[_layout.Bind],
                workspace_path: str, command: StdioCommand) -> dict[str, object]:
    policy = gateway.policy
    uid = str(SANDBOX_UID)
    head = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not command.network:
        head.append("--unshare-net")
    head += ["--uid", uid, "--gid", uid, "--hostname", SANDBOX_HOSTNAME, "--disable-userns",
             "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    runtime = [*_layout.bwrap_runtime_args(egress=command.network), "--proc", "/proc"]
    for path in _layout.PROC_READONLY:
        runtime += ["--ro-bind-try", path, path]
    size = str(policy.tmp_size_bytes)
    runtime += ["--dev", "/dev", "--size", size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
                "--size", size, "--tmpfs", "/tmp"]
    staged = gateway.stages_sources
    return {
        "mode": "bubblewrap", "bwrap": gateway._bwrap, "head": head, "runtime": runtime,
        "binds": [_entry(b, idmapped=staged) for b in binds],
        "tail": ["--remount-ro", "/", "--chdir", workspace_path],
        "stage": staged, "identity": gateway._identity,
        "rlimits": gateway._rlimits, "seccomp": seccomp_program(deny_sockets=False).hex(),
    }

def view_spec(gateway: LandlockGateway, binds: list[_layout.Bind],
               workspace_path: str, command: StdioCommand) -> dict[str, object]:
    """Landlock in a root of its own (``_view``): the server's installation and mounts at
    their own paths, the workspace at ``workspace_path``, a private ``/tmp``."""
    everything = _kernel.handled_fs(gateway.abi)
    rules = [*_layout.system_rules(egress=command.network),
             *((p, everything) for p in ("/tmp", "/dev/shm"))]
    rules += [(target, everything if writable else _READ_EXEC)
              for _, target, writable, _ in binds]
    confine = {
        "cwd": workspace_path, "identity": gateway._identity,
        "rlimits": command_rlimits(gateway.policy, gateway._identity),
        "landlock": {"abi": gateway.abi, "rules": rules, "deny_tcp": not command.network},
        "seccomp": seccomp_program(deny_sockets=not command.network).hex(),
        "view": {"static": _layout.static_entries(egress=command.network,
                                                  tmp_size=gateway.policy.tmp_size_bytes),
                 "dynamic": _layout.bind_entries(binds)},
    }
    return {"mode": "landlock", "confine": confine, "cwd": workspace_path}

def confined_spec(gateway: ProcessGateway, installation: Installation,
                   mounts: tuple[StdioMount, ...], work: Path, tmp: Path,
                   command: StdioCommand, identity: tuple[int, int] | None
                   ) -> dict[str, object]:
    if not isinstance(gateway, LandlockGateway):  # backend ``none``: asked for by name
        return {"mode": "none", "confine": None, "cwd": str(work)}
    everything = _kernel.handled_fs(gateway.abi)
    rules = [*_layout.system_rules(egress=command.network), (str(work), everything),
             (str(tmp), everything)]
    rules += [(str(r), _READ_EXEC) for r in installation.roots]
    rules += [(str(m.path), everything if m.writable else _READ_EXEC) for m in mounts]
    confine = {
        "cwd": str(work), "identity": identity,
        "rlimits": command_rlimits(gateway.policy, identity),
        "landlock": {"abi": gateway.abi, "rules": rules, "deny_tcp": not command.network},
        "seccomp": seccomp_program(deny_sockets=not command.network).hex(),
    }
    return {"mode": "landlock", "confine": confine, "cwd": str(work)}



def server_binds(installation: Installation, mounts: tuple[StdioMount, ...], work: Path,
                  workspace_path: str, identity: tuple[int, int] | None) -> list[_layout.Bind]:
    """The server's binds in a namespace view: its installation and declared mounts at their
    own paths, the workspace last (on top of everything); each idmapped where the sandbox
    uid could not use it as it is (root only)."""
    binds: list[_layout.Bind] = [
        (str(r), str(r), False, reach.idmap_owner(r, identity, writable=False))
        for r in installation.roots]
    binds += [(str(m.path), str(m.path), m.writable,
               reach.idmap_owner(m.path, identity, writable=m.writable)) for m in mounts]
    binds.append((str(work), workspace_path, True, reach.idmap_owner(work, identity, writable=True)))
    return binds


def _entry(bind: _layout.Bind, *, idmapped: bool) -> list[object]:
    source, target, writable, idmap = bind
    return [source, target, writable, list(idmap) if idmap is not None and idmapped else None]
