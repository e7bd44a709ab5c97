"""The sandbox port (000 §7.2): what the runtime asks of an execution service, as values.

``SandboxGateway`` is the Protocol every execution backend implements; the bubblewrap
adapter and the unsandboxed development adapter live in their own modules. Everything a
caller hands in is validated on construction, so a bad command is refused before anything
runs (``external_outcome="not_started"``).

Times: ``deadline`` arguments are wall-clock epochs (``time.time()`` scale), as in the
pipeline's ``AttemptContext``; durations are seconds.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Protocol

from agentloom.errors import ConfigError
from agentloom.sandbox.errors import (
    COMMAND_INVALID,
    CWD_OUTSIDE_WORK,
    ENV_INVALID,
    MOUNT_INVALID,
    SandboxError,
)

SandboxMode = Literal["bubblewrap", "landlock", "unsandboxed"]
#: How a command sees its folders: ``namespace`` — a view of its own (bubblewrap, or Landlock
#: where root may make a mount namespace): the work folder at ``/work``, read-only mounts at
#: ``/skills/...``, ``/resources/...``, a private ``/tmp``; ``host`` — the host's paths
#: (Landlock without a mount namespace, ``none``): ``/work`` and ``/skills`` do not exist.
SandboxView = Literal["namespace", "host"]
#: What the configuration asks for (``sandbox.backend``): ``auto`` is bubblewrap, else
#: Landlock, else a refusal; ``none`` (unconfined) is only ever used when written.
SandboxBackend = Literal["auto", "bubblewrap", "landlock", "none"]
SANDBOX_BACKENDS: tuple[SandboxBackend, ...] = ("auto", "bubblewrap", "landlock", "none")
ExecutionState = Literal["running", "exited", "timed_out", "terminated", "revoked"]

WORK_MOUNT = "/work"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Sandbox roots a read-only mount may sit under (000 §7.1: Skills, wiki, resources; a
#: workflow node's granted artifacts, issue 37).
READONLY_ROOTS = ("/skills", "/resources", "/wiki", "/inputs")
#: Of those, the ones a read-only mount may also be *at*: a node's inputs folder is bound as a
#: whole at ``/inputs`` (its sub-folders are the nodes the files come from).
WHOLE_ROOTS = ("/inputs",)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _frozen_env(env: Mapping[str, str], *, what: str) -> Mapping[str, str]:
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise SandboxError(ENV_INVALID, f"{what}: invalid environment variable name {name!r}")
        if not isinstance(value, str) or "\0" in value:
            raise SandboxError(ENV_INVALID, f"{what}: the value of {name} must be a string without NUL")
    return MappingProxyType(dict(env))


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvironmentPolicy:
    """How commands run: the environment allowlist, network, shell, limits.

    ``env`` is the *complete* environment a command sees besides ``PATH`` (set from
    ``path``) and the command's ``env_patch``: an absent or empty mapping means an
    **empty** environment, never the host's (003 F03). Loader and shell start-up
    variables (``LD_*``, ``BASH_ENV``, ``ENV``, ``BASH_FUNC_*``, ``GCONV_PATH``) are
    stripped at execution even when listed here, and reported in the result.

    Defaults: no network (``egress=False``), no shell, 10 s per command, an 8 KiB
    preview (head + tail) per stream, a spool of at most 2 GiB per stream, a 64 MiB
    ``/tmp`` (without a mount namespace: a private ``TMPDIR`` watched to that size), a
    work folder of at most 4 GiB (``max_work_bytes``: a work folder AgentLoom made, watched
    while a command runs, ``_disk``; a folder of the user's is not capped). Each is
    overridden only by constructing another policy.

    Resource limits (rlimits, set on the command before it starts, every backend but
    ``none``): ``max_processes`` processes of the sandbox user (``RLIMIT_NPROC``; enforced
    when the runtime runs as root and commands run as the dedicated sandbox uid),
    ``max_file_bytes`` per file written (``RLIMIT_FSIZE``: a larger write fails with
    ``EFBIG``), ``max_cpu_s`` seconds of CPU per process (``RLIMIT_CPU``).
    """

    env: Mapping[str, str] = field(default_factory=dict)
    path: str = DEFAULT_PATH
    egress: bool = False
    allow_shell: bool = False
    default_timeout_s: float = 10.0
    max_preview_bytes: int = 8192
    max_spool_bytes: int = 2 << 30
    tmp_size_bytes: int = 64 << 20
    max_processes: int = 512
    max_file_bytes: int = 1 << 30
    max_cpu_s: int = 3600
    max_work_bytes: int = 4 << 30

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "env", _frozen_env(self.env, what="EnvironmentPolicy.env"))
        except SandboxError as exc:
            raise ConfigError(exc.error.message, code=ENV_INVALID) from None
        if not self.path or "\0" in self.path:
            raise ConfigError("EnvironmentPolicy.path must be a non-empty string without NUL")
        if not (math.isfinite(self.default_timeout_s) and self.default_timeout_s > 0):
            raise ConfigError("EnvironmentPolicy.default_timeout_s must be a positive number of seconds")
        if self.max_preview_bytes < 2:
            raise ConfigError("EnvironmentPolicy.max_preview_bytes must be at least 2")
        if self.max_spool_bytes < 0:
            raise ConfigError("EnvironmentPolicy.max_spool_bytes must be >= 0")
        if self.tmp_size_bytes < 4096:
            raise ConfigError("EnvironmentPolicy.tmp_size_bytes must be at least 4096")
        if self.max_processes < 1:
            raise ConfigError("EnvironmentPolicy.max_processes must be at least 1")
        if self.max_file_bytes < 1:
            raise ConfigError("EnvironmentPolicy.max_file_bytes must be at least 1")
        if self.max_work_bytes < 4096:
            raise ConfigError("EnvironmentPolicy.max_work_bytes must be at least 4096")
        if self.max_cpu_s < 1:
            raise ConfigError("EnvironmentPolicy.max_cpu_s must be at least 1 second")


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxScope:
    """The workspace a sandbox maps: ``work_dir`` at ``/work`` (the only writable path)
    and ``readonly_mounts`` as ``(host path, sandbox path)`` pairs under ``/skills``,
    ``/resources`` or ``/wiki``, or at ``/inputs`` (a workflow node's granted files). Paths
    come from the runtime, never from a model."""

    workspace_scope_id: str
    run_id: str
    work_dir: Path
    readonly_mounts: tuple[tuple[Path, str], ...] = ()
    managed: bool = False
    """``work_dir`` is a folder AgentLoom made for this scope (a run's work folder, a hook's
    scratch folder): after each command it gets its ``0700`` back. Any other folder — a
    folder of the user's bound as the workspace — keeps its owner, group and mode; the
    sandbox never changes them (``sandbox.reach``: how it is worked in)."""

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for host, target in self.readonly_mounts:
            norm = posixpath.normpath(target) if target else ""
            if (
                norm != target
                or "\0" in target
                or not (any(norm.startswith(root + "/") for root in READONLY_ROOTS)
                        or norm in WHOLE_ROOTS)
            ):
                raise SandboxError(
                    MOUNT_INVALID,
                    f"read-only mount target {target!r} must be a normalised path under "
                    f"{', '.join(READONLY_ROOTS)} (or {', '.join(WHOLE_ROOTS)} itself)",
                    phase="ensure",
                )
            if any(norm == s or norm.startswith(s + "/") or s.startswith(norm + "/") for s in seen):
                why = f"read-only mount {target!r} overlaps another"
                raise SandboxError(MOUNT_INVALID, why, phase="ensure")
            seen.add(norm)
            if not isinstance(host, Path):
                why = f"mount source for {target!r} must be a Path"
                raise SandboxError(MOUNT_INVALID, why, phase="ensure")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecCommand:
    """One command: exactly one of ``argv`` (run without a shell) or ``shell_script``
    (run as ``/bin/sh -c`` only when the policy allows a shell).

    ``cwd`` is a sandbox path, ``/work`` or below; a relative one is taken from
    ``/work``. It is normalised on construction and refused if it leaves ``/work``.
    ``timeout_s`` overrides the policy's default; the run deadline still bounds it.
    """

    argv: tuple[str, ...] | None = None
    shell_script: str | None = None
    cwd: str = WORK_MOUNT
    env_patch: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if (self.argv is None) == (self.shell_script is None):
            raise SandboxError(COMMAND_INVALID, "give exactly one of argv or shell_script")
        if self.argv is not None:
            if not isinstance(self.argv, tuple) or not self.argv:
                raise SandboxError(COMMAND_INVALID, "argv must be a non-empty tuple of strings")
            if any(not isinstance(a, str) or "\0" in a for a in self.argv):
                raise SandboxError(COMMAND_INVALID, "argv items must be strings without NUL")
        if self.shell_script is not None and "\0" in self.shell_script:
            raise SandboxError(COMMAND_INVALID, "shell_script must not contain NUL")
        if self.timeout_s is not None and not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise SandboxError(COMMAND_INVALID, "timeout_s must be a positive number of seconds")
        object.__setattr__(self, "cwd", _sandbox_cwd(self.cwd))
        object.__setattr__(self, "env_patch", _frozen_env(self.env_patch, what="env_patch"))


def _sandbox_cwd(cwd: str) -> str:
    if not isinstance(cwd, str) or not cwd or "\0" in cwd:
        raise SandboxError(CWD_OUTSIDE_WORK, "cwd must be a non-empty path")
    norm = posixpath.normpath(posixpath.join(WORK_MOUNT, cwd))
    if norm.startswith("//"):
        norm = norm[1:]
    if norm != WORK_MOUNT and not norm.startswith(WORK_MOUNT + "/"):
        raise SandboxError(CWD_OUTSIDE_WORK, f"cwd {cwd!r} is outside {WORK_MOUNT}")
    return norm


@dataclass(frozen=True, slots=True, kw_only=True)
class BusinessOwner:
    """An execution owned by a business operation's physical Attempt."""

    operation_id: str
    attempt_no: int
    kind: Literal["business"] = field(default="business", init=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookOwner:
    """An execution owned by a hook invocation (no NodeTask is invented for it)."""

    hook_invocation_id: str
    kind: Literal["hook"] = field(default="hook", init=False)


ExecutionOwnerRef = BusinessOwner | HookOwner


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxHandle:
    """A prepared sandbox view for one scope under one lease epoch."""

    handle_id: str
    scope: SandboxScope
    lease_epoch: int
    image_digest: str | None
    sandbox_mode: SandboxMode
    view: SandboxView
    """Where a command of this scope sees its folders (``SandboxView``): under ``host``, a
    path of the work folder or a read-only mount is its host path (``host_path``)."""
    skills_dir: str | None = None
    """Where a command sees the skills' folder (``/skills`` in a namespace view, a folder of
    links at the host's paths otherwise), set as ``AGENTLOOM_SKILLS`` in its environment;
    ``None`` when the scope mounts no skill."""

    def host_path(self, path: str) -> str:
        """``path`` (``/work/...``, ``/skills/<name>/...``, ``/inputs/...``) as a command of
        this scope sees it: unchanged in a namespace view, its host path otherwise; a path
        under none of the scope's folders is returned as it is."""
        if self.view == "namespace":
            return path
        pairs = [(WORK_MOUNT, str(self.scope.work_dir.absolute())),
                 *((target, str(host.absolute())) for host, target in self.scope.readonly_mounts)]
        for target, host in pairs:
            if path == target or path.startswith(target + "/"):
                return host + path[len(target):]
        return path


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedStream:
    """One output stream, bounded in memory (003 F15).

    ``head`` holds the first bytes and ``tail`` the last ones; together at most
    ``policy.max_preview_bytes``. When ``truncated`` is false, ``head + tail`` is the
    whole output and there is no spool. When it is true, the full bytes are in
    ``spool_path`` (the first ``spool_bytes`` of them if the spool cap was reached).
    ``total_bytes`` and ``sha256`` always cover the whole stream.
    """

    head: bytes
    tail: bytes
    total_bytes: int
    truncated: bool
    spool_path: Path | None
    sha256: str
    spool_bytes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult:
    """How one execution ended.

    ``exit_code`` is the command's status; a command killed by signal N *inside* the
    sandbox shows as ``128 + N`` (bubblewrap's convention). ``signal`` is set, and
    ``exit_code`` is ``None``, when the gateway itself killed the execution: on
    timeout (``timed_out``), ``terminate`` (``terminated``) or ``revoke``
    (``killed_by_revoke``). ``env_stripped`` names the variables dropped from the
    configured environment (loader / shell start-up variables and ``PATH``).
    """

    execution_id: str
    exit_code: int | None
    signal: int | None
    timed_out: bool
    killed_by_revoke: bool
    stdout: CapturedStream
    stderr: CapturedStream
    duration_s: float
    sandboxed: bool
    sandbox_mode: SandboxMode
    terminated: bool = False
    env_stripped: tuple[str, ...] = ()
    #: Set when a size cap killed the command (``max_work_bytes`` on its work folder, or
    #: ``tmp_size_bytes`` on its private ``TMPDIR``): which folder and the cap, for people.
    disk_limit: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionStatus:
    """What ``inspect`` reports; ``result`` is set once the execution has ended."""

    execution_id: str
    run_id: str
    lease_epoch: int
    owner: ExecutionOwnerRef
    state: ExecutionState
    started_at: float
    result: ExecutionResult | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RevocationReceipt:
    """Proof that a run's executions up to ``lease_epoch`` were stopped.

    ``killed`` counts executions that were still running and were killed by this
    call. ``confirmed`` is true only when every process of every such execution is
    known to be gone (the PID namespace is empty); an unsandboxed gateway can never
    prove that and always says false. ``at`` is a wall-clock epoch.
    """

    run_id: str
    lease_epoch: int
    killed: int
    confirmed: bool
    at: float


class ExecutionHandle(Protocol):
    """A started execution. Awaiting ``wait`` does not stop it; cancel with ``terminate``."""

    @property
    def execution_id(self) -> str: ...

    async def wait(self) -> ExecutionResult: ...


class SandboxGateway(Protocol):
    """The execution service (000 §7.2): sandboxes, executions, revocation."""

    @property
    def sandbox_mode(self) -> SandboxMode: ...

    def check_scope(self, scope: SandboxScope) -> None:
        """Refuse, starting nothing, a scope whose commands could not work here: its folders
        missing (``SCOPE_INVALID``) or out of the sandbox uid's reach (``FOLDER_UNREACHABLE``,
        naming the folder, the uid and the fixes)."""
        ...

    async def ensure(
        self, scope_ref: SandboxScope, image_digest: str | None, lease_epoch: int
    ) -> SandboxHandle: ...

    async def execute(
        self, handle: SandboxHandle, command: ExecCommand, owner: ExecutionOwnerRef, deadline: float
    ) -> ExecutionHandle: ...

    async def inspect(self, execution_id: str) -> ExecutionStatus: ...

    async def terminate(self, execution_id: str) -> None: ...

    async def revoke(self, run_id: str, lease_epoch: int) -> RevocationReceipt: ...
