"""Long-lived servers on stdin / stdout inside a run's sandbox (MCP stdio servers, 000 §6.2,
§7.2): the command line that starts one, and stopping it with the run.

::

    StdioServers(gateway).prepare(scope, lease_epoch, StdioCommand)  ─►  StdioLaunch(argv, env)
        a spawner (the ``mcp`` stdio client) runs argv with its pipes on 0 / 1:
    python -S _stdio_shim.py <token>.json        (outside the sandbox; a child subreaper)
        ├─ bubblewrap ─► bwrap (namespaces, uid 65534, seccomp, rlimits) ─► server
        └─ landlock / none ─► server confined as ``exec`` commands are (or, for ``none``, not)
    gateway.revoke(run, epoch) / StdioServers.stop(token)  ─►  SIGTERM to the shim, which kills
        every descendant and writes <token>.gone once none is left (the receipt's proof)

The server gets the sandbox of ``exec`` where it applies (``docs/sandbox.md``): new
namespaces, the sandbox uid, the seccomp filter and rlimits, the runtime read-only, only
the workspace writable, no network unless the server's ``network`` says so, and an
environment of exactly its declared variables plus ``PATH``, ``HOME`` and ``LANG``. Its
``command`` is resolved on ``PATH`` and its installation (a venv and its base interpreter,
a ``node_modules`` tree, an interpreter named by a ``#!`` line, a ``<prefix>/bin`` tool's
prefix) is mounted read-only at its own path, with the ``mounts`` the server declares.

Owns: resolving a server's installation, its sandbox argv and environment, the launch
registry per (run, lease epoch), stopping and revoking servers. Does not own: speaking MCP
(``agentloom.mcp``) or the pipes (the spawner's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import posixpath
import shutil
import signal
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from agentloom.ids import new_id
from agentloom.sandbox import _stdio_specs, reach
from agentloom.sandbox._base import ProcessGateway
from agentloom.sandbox._execution import readable
from agentloom.sandbox._installation import Installation, resolve_installation
from agentloom.sandbox.bubblewrap import BubblewrapGateway
from agentloom.sandbox.env import is_stripped
from agentloom.sandbox.errors import (
    COMMAND_INVALID,
    LEASE_REVOKED,
    MOUNT_INVALID,
    SandboxError,
)
from agentloom.sandbox.landlock import LandlockGateway
from agentloom.sandbox.ports import (
    WORK_MOUNT,
    SandboxGateway,
    SandboxMode,
    SandboxScope,
    _frozen_env,
)

SHIM = Path(__file__).with_name("_stdio_shim.py")
#: How long a stopped server's supervisor has to kill its tree before it is SIGKILLed.
STOP_TIMEOUT_S = 10.0
DEFAULT_LANG = "C.UTF-8"


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioMount:
    """A host path the server sees at the same path: read-only unless ``writable``."""

    path: Path
    writable: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioCommand:
    """One server: ``command`` (resolved on ``search_path``, default the runtime's ``PATH``)
    with ``args``; ``env`` is its *whole* declared environment; ``network`` allows egress
    for this server only."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[StdioMount, ...] = ()
    network: bool = False
    search_path: str | None = None

    def __post_init__(self) -> None:
        if not self.command or "\0" in self.command:
            raise SandboxError(COMMAND_INVALID, "a stdio server needs a command")
        if any(not isinstance(a, str) or "\0" in a for a in self.args):
            raise SandboxError(COMMAND_INVALID, "stdio server args must be strings without NUL")
        object.__setattr__(self, "env", _frozen_env(self.env, what="stdio server env"))


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioLaunch:
    """The command line a spawner runs (``argv`` with ``env``, stdin / stdout piped). One
    launch starts one process: a second spawn of the same launch refuses to run."""

    token: str
    run_id: str
    lease_epoch: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    workspace_path: str
    """Where the server sees the workspace, its working directory: ``/work``, or the host
    path when ``/work`` would hide part of its installation or when no mount namespace
    exists (Landlock, ``none``)."""
    installation: Installation
    sandbox_mode: SandboxMode
    env_stripped: tuple[str, ...] = ()


@dataclass(slots=True, kw_only=True)
class _Record:
    run_id: str
    lease_epoch: int
    tmp: Path | None


class StdioServers:
    """The stdio servers started in one gateway's sandboxes.

    Made once per gateway; it joins the gateway's ``revoke``, so the run's cleanup (and a
    takeover by a newer lease epoch) stops the run's servers and counts them on the
    receipt. ``stop`` ends one server early.
    """

    def __init__(self, gateway: SandboxGateway) -> None:
        if not isinstance(gateway, ProcessGateway):
            raise TypeError(f"stdio servers need one of this package's gateways, not {gateway!r}")
        self._gateway = gateway
        self._dir = gateway._spool_dir / "stdio"
        self._dir.mkdir(mode=0o711, exist_ok=True)  # Landlock: private TMPDIRs below
        os.chmod(self._dir, 0o711)
        self._lock = threading.Lock()
        self._launches: dict[str, _Record] = {}
        gateway._extra_revokers.append(self.revoke)

    @property
    def sandbox_mode(self) -> SandboxMode:
        return self._gateway.sandbox_mode

    @property
    def gateway(self) -> SandboxGateway:
        """The gateway whose ``revoke`` stops these servers."""
        return self._gateway

    def prepare(self, scope: SandboxScope, lease_epoch: int, command: StdioCommand) -> StdioLaunch:
        """The command line that starts ``command`` in ``scope``'s sandbox under ``lease_epoch``.

        Raises:
            SandboxError: ``LEASE_REVOKED`` (the epoch was revoked or superseded),
                ``COMMAND_INVALID`` (not found), ``MOUNT_INVALID`` (a mount that is missing,
                not absolute, or would expose the folders around the workspace),
                ``SCOPE_INVALID``, ``FOLDER_UNREACHABLE`` (Landlock at the host's paths as
                root, with a folder the server's uid cannot reach: named, with the fixes).
        """
        self._sweep()
        gateway = self._gateway
        run_id = scope.run_id
        with gateway._lock:
            gateway._check_epoch(run_id, lease_epoch)
            if lease_epoch < gateway._current_epoch.get(run_id, lease_epoch):
                raise SandboxError(LEASE_REVOKED, f"run {run_id}: lease epoch {lease_epoch} was superseded")
        gateway.check_scope(scope)
        work = Path(os.path.abspath(scope.work_dir))  # normalised: ``..`` never reaches a view
        installation = resolve_installation(command.command, search_path=command.search_path)
        mounts = _check_mounts(command.mounts, installation, work)
        token = new_id()
        mode = gateway.sandbox_mode
        stripped = tuple(sorted(name for name in command.env if is_stripped(name)))
        env = {k: v for k, v in command.env.items() if not is_stripped(k)}
        policy = gateway.policy
        record = _Record(run_id=run_id, lease_epoch=lease_epoch, tmp=None)
        if gateway.view == "namespace":
            overlaps = [m.path for m in mounts] + list(installation.roots)
            hidden = any(p == Path(WORK_MOUNT) or Path(WORK_MOUNT) in p.parents for p in overlaps)
            workspace_path = str(work) if hidden else WORK_MOUNT
            env.setdefault("HOME", "/tmp")
            binds = _stdio_specs.server_binds(installation, mounts, work, workspace_path, gateway._identity)
            if isinstance(gateway, BubblewrapGateway):
                spec = _stdio_specs.bwrap_spec(gateway, binds, workspace_path, command)
            else:
                assert isinstance(gateway, LandlockGateway)
                spec = _stdio_specs.view_spec(gateway, binds, workspace_path, command)
        else:
            identity = gateway._identity
            if isinstance(gateway, LandlockGateway) and identity is not None:
                identity = reach.host_identity(work, identity, managed=scope.managed)
                reach.check_reach([*((root, reach.R | reach.X) for root in installation.roots),
                                   (installation.executable, reach.R | reach.X),
                                   *((m.path, reach.R | reach.X | (reach.W if m.writable else 0))
                                     for m in mounts)], identity)
            workspace_path = str(work)
            record.tmp = self._dir / f"{token}.tmp"
            record.tmp.mkdir(mode=0o700)
            if identity is not None:
                os.chown(record.tmp, *identity)
            env.setdefault("HOME", str(record.tmp))
            env["TMPDIR"] = str(record.tmp)
            spec = _stdio_specs.confined_spec(gateway, installation, mounts, work, record.tmp, command,
                                       identity)
        env.setdefault("LANG", DEFAULT_LANG)
        env["PATH"] = ":".join(dict.fromkeys([*installation.path_dirs, *policy.path.split(":")]))
        spec.update(token=token, parent=os.getpid(), env=sorted(env),
                    argv=[str(installation.executable), *command.args])
        spec_path = self._dir / f"{token}.json"
        fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        with self._lock:
            self._launches[token] = record
        argv = (sys.executable, "-E", "-s", "-S", "-B", str(SHIM), str(spec_path))
        return StdioLaunch(
            token=token, run_id=run_id, lease_epoch=lease_epoch, argv=argv,
            env=MappingProxyType(env), workspace_path=workspace_path, installation=installation,
            sandbox_mode=mode, env_stripped=stripped,
        )

    async def stop(self, token: str) -> bool:
        """Stop one server (started or not) and return whether it is provably gone; a
        launch not yet spawned will refuse to start."""
        _, confirmed = await asyncio.to_thread(self._stop, token)
        return confirmed

    async def revoke(self, run_id: str, lease_epoch: int) -> tuple[int, bool]:
        """Stop every server of ``run_id`` launched under ``lease_epoch`` or an older one:
        ``(how many were running, all provably gone)``. Part of the gateway's ``revoke``."""
        with self._lock:
            tokens = [t for t, r in self._launches.items()
                      if r.run_id == run_id and r.lease_epoch <= lease_epoch]
        results = await asyncio.gather(*(asyncio.to_thread(self._stop, t) for t in tokens))
        return sum(1 for killed, _ in results if killed), all(ok for _, ok in results)

    def _stop(self, token: str) -> tuple[bool, bool]:
        d = self._dir
        with contextlib.suppress(FileExistsError):
            os.close(os.open(d / f"{token}.stop", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        killed = False
        try:
            pid_text = (d / f"{token}.pid").read_text()
        except FileNotFoundError:
            pid_text = ""  # never started: it sees the stop file first if it ever does
        parts = pid_text.split()
        if len(parts) != 2:  # not started, or not yet registered: it will see the stop file
            pid_text = ""
        else:
            killed = _terminate(int(parts[0]), parts[1])
        confirmed = not pid_text or (d / f"{token}.gone").exists()
        if confirmed:
            self._forget(token)
        return killed, confirmed

    def _forget(self, token: str) -> None:
        """Drop a launch that is provably over: its record, files and temporary folder. A
        later spawn of it finds no launch file and refuses to start."""
        with self._lock:
            record = self._launches.pop(token, None)
        for suffix in ("json", "pid", "gone"):  # "stop" stays: a late spawn must see it
            with contextlib.suppress(FileNotFoundError):
                (self._dir / f"{token}.{suffix}").unlink()
        if record is not None and record.tmp is not None:
            shutil.rmtree(record.tmp, ignore_errors=True)

    def _sweep(self) -> None:
        """Forget the launches whose servers have ended and proved it (closed by their
        clients), so a long-lived runtime keeps no record of them."""
        with self._lock:
            tokens = list(self._launches)
        for token in tokens:
            if (self._dir / f"{token}.gone").exists():
                self._forget(token)

def _check_mounts(mounts: tuple[StdioMount, ...], installation: Installation,
                  work: Path) -> tuple[StdioMount, ...]:
    for root in installation.roots:
        if root == work or root in work.parents:
            raise SandboxError(MOUNT_INVALID, f"the server's installation {root} contains its "
                               "workspace; install it elsewhere", phase="ensure")
    checked = []
    for mount in mounts:
        path = Path(mount.path)
        if not path.is_absolute() or posixpath.normpath(str(path)) != str(path) or path == Path("/"):
            raise SandboxError(MOUNT_INVALID, f"stdio server mount {str(path)!r} must be a normalised "
                               "absolute path other than /", phase="ensure")
        if not path.exists():
            raise SandboxError(MOUNT_INVALID, f"stdio server mount {path} does not exist", phase="ensure")
        if path == work or path in work.parents:
            raise SandboxError(MOUNT_INVALID, f"stdio server mount {path} contains the workspace "
                               "(and the folders of other runs)", phase="ensure")
        checked.append(StdioMount(path=path, writable=mount.writable))
    return tuple(checked)


def _terminate(pid: int, start: str) -> bool:
    """SIGTERM the supervisor ``pid`` (if it is still the one that registered) and wait for
    it; SIGKILL it after ``STOP_TIMEOUT_S``. True if it was running."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                same = fh.read().rsplit(b")", 1)[1].split()[19].decode() == start
        except OSError:
            same = False
        if not same or readable(pidfd, 0):
            return False
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        if not readable(pidfd, STOP_TIMEOUT_S):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            readable(pidfd, 2.0)
        return True
    finally:
        os.close(pidfd)


__all__ = ["Installation", "StdioCommand", "StdioLaunch", "StdioMount", "StdioServers",
           "resolve_installation"]
