"""The ``command`` kind: a hook's program run in the sandbox, the event on its stdin.

``handler: {kind: command, command: …}`` (or ``argv``) ─► ``CommandHookHandler`` ─►
``CommandHookRunner``.

It starts nothing itself: each run is one execution of the sandbox gateway ``exec`` uses
(``make_gateway`` on the configured ``sandbox.backend``; bubblewrap or Landlock, ``none``
only when written), owned by the hook (``HookOwner``)::

    event ─► <scratch>/event.json ─► gateway.execute(sh -c 'cd "$AGENTLOOM_PROJECT_DIR";
               exec < event.json; <command line>')  (argv: ... exec "$@", no shell parsing)
    exit 0: stdout is the decision (empty: allow) · exit 2: deny, stderr the reason
    not started — the sandbox refused (``SandboxError``), or exit 126 / 127 (the project
    folder or the program could not be reached or run: the shell's "cannot execute" and
    "not found", the sandbox's "could not confine"): ``HookStartFailed``, which denies the
    call whatever the hook's ``on_failure`` (000 §5.2)
    any other exit: the hook failed · cancelled (its timeout, the run's stop): the
    execution is terminated — every process of it killed, as for ``exec``
    format: claude-code — stdin and stdout in Claude Code's shapes (``hooks.claude.shim``)

What the command sees: exactly its declared ``env`` (``${VAR}`` filled in from the runtime's
environment) plus ``PATH``, ``AGENTLOOM_PROJECT_DIR`` / ``CLAUDE_PROJECT_DIR`` (the config
file's folder, its working folder) and ``AGENTLOOM_WORKSPACE_DIR`` (the run's workspace, when
it has one), both mounted read-only — in a namespace view (bubblewrap; Landlock as root with a
mount namespace) at ``/resources/project`` and ``/resources/workspace``, at the host's paths
otherwise, with read rights only. Its only writable folders are a scratch folder (``/work`` in
a namespace view, deleted after the hook) and ``/tmp``. No network.

Owns: the kind's spec, and turning a ``command`` handler and an event into one sandboxed
execution and its result into a decision. Does not own: the config model
(``config.handler_kinds.CommandHandlerConfig``: config is core), the sandbox
(``agentloom.sandbox``), the timeout (the ``HookManager`` cancels the run; the execution's own
timeout is only a backstop).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from agentloom.config.handler_kinds import CommandHandlerConfig
from agentloom.hooks.claude.shim import FORMAT as CLAUDE_CODE
from agentloom.hooks.claude.shim import claude_decision, claude_event
from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers._common import (
    HookRunFailed,
    HookStartFailed,
    Secrets,
    decision_of,
    event_json,
    excerpt,
    handler_of,
)
from agentloom.hooks.handlers.kind import HookKind
from agentloom.hooks.spec import HookHandler, HookSpec, Pairs
from agentloom.sandbox import (
    EnvironmentPolicy,
    ExecCommand,
    ExecutionResult,
    HookOwner,
    SandboxBackend,
    SandboxError,
    SandboxScope,
    make_gateway,
)
from agentloom.sandbox.bubblewrap import BubblewrapGateway
from agentloom.sandbox.landlock import LandlockGateway
from agentloom.sandbox.unsandboxed import UnsandboxedGateway
from agentloom.workspace.scope import WorkspaceScope

PROJECT_MOUNT = "/resources/project"
WORKSPACE_MOUNT = "/resources/workspace"
MAX_OUTPUT_BYTES = 1 << 20  # of stdout a decision may take; more is a hook failure
BACKSTOP_S = 2.0  # the execution's own timeout runs this long past the hook's
DENY_EXIT = 2
EVENT_FILE = "event.json"
# Start in the project folder with the event on stdin; a command line then runs in this same
# shell (one process fewer than ``sh -c`` in ``sh -c``), an argv replaces it. A folder or event
# file it cannot reach is exit 126 (a failed ``exec <`` would end the shell with 2: a deny).
PROLOGUE = ('cd -- "${AGENTLOOM_PROJECT_DIR:-.}" || exit 126; '
            '[ -r %(event)s ] || { echo "cannot read the event file" >&2; exit 126; }; '
            'exec < %(event)s')
#: Exit statuses of a hook that did not start: the shell's "found but cannot execute" and
#: "not found" (also the sandbox's "could not confine" and "cannot run").
NOT_STARTED = {126: "cannot be run", 127: "was not found"}

Gateway = BubblewrapGateway | LandlockGateway | UnsandboxedGateway
FORMATS = ("agentloom", CLAUDE_CODE)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandHookHandler(HookHandler):
    """``command`` (a line for ``sh -c``) or ``argv`` (no shell), run in the sandbox with
    exactly ``env`` (values may hold ``${VAR}``, read from the runtime's environment when the
    hook runs, never stored), started in ``project_dir``; ``format`` says how the event and its
    answer are written (``agentloom``, or ``claude-code`` for a Claude Code hook script).
    ``env`` may be given as a mapping and ``argv`` as a list.

    Raises:
        ValueError: neither or both of ``command`` and ``argv``; an unknown ``format``.
    """

    kind: Literal["command"] = "command"
    command: str | None = None
    argv: tuple[str, ...] | None = None
    env: Pairs = ()
    project_dir: str | None = None
    format: str = "agentloom"

    def __post_init__(self) -> None:
        if isinstance(self.env, Mapping):
            object.__setattr__(self, "env", tuple(self.env.items()))
        if self.argv is not None and not isinstance(self.argv, tuple):
            object.__setattr__(self, "argv", tuple(self.argv))
        if (self.command is None) == (self.argv is None):
            raise ValueError("a command hook needs exactly one of command or argv")
        if self.format not in FORMATS:
            raise ValueError(f"unknown handler format {self.format!r}; use agentloom or "
                             "claude-code")

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind, "ref": "", "command": self.command,
            "argv": None if self.argv is None else list(self.argv), "env": dict(self.env),
            "project_dir": self.project_dir}
        if self.format != "agentloom":  # the versions of earlier configs stay the same
            out["format"] = self.format
        return out


class HookWorkspaces(Protocol):
    """Where a run's workspace folder is (``WorkspaceStore``)."""

    def scopes_for_run(self, run_id: str) -> list[WorkspaceScope]: ...

    def path(self, scope: WorkspaceScope) -> Path: ...

    def ensure_folder(self, scope: WorkspaceScope) -> Path: ...


class HookEnvironment(Protocol):
    """What the command runner needs of the kernel's ``RunEnvironment``: the configured
    sandbox backend, the spool folder gateways write under, and the runs' workspaces."""

    @property
    def sandbox_backend(self) -> SandboxBackend: ...

    @property
    def spool_dir(self) -> Path: ...

    @property
    def scopes(self) -> HookWorkspaces: ...


class CommandHookRunner:
    """Runs ``kind: command`` hooks in the sandbox (see the module docstring). Without an
    attached environment it uses ``sandbox.backend: auto`` and a spool in the system's
    temporary folder, and mounts no workspace."""

    def __init__(self, environment: HookEnvironment | None = None) -> None:
        self._environment = environment
        self._gateway: Gateway | None = None
        self._gateway_lock = threading.Lock()  # two first hooks at once make one gateway
        self._reaping: set[asyncio.Task[None]] = set()  # terminations of given-up hooks

    def attach(self, environment: HookEnvironment) -> None:
        """Use ``environment``'s sandbox backend, spool folder and workspaces."""
        self._environment = environment
        self._gateway = None

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        handler = handler_of(spec, CommandHookHandler)
        secrets = Secrets()
        env = secrets.expand_all(handler.env, what=f"hook {spec.hook_id!r} env")
        try:
            gateway = await self._gateway_ready()
        except SandboxError as exc:  # SANDBOX_UNAVAILABLE: never unconfined, never passed over
            raise _not_started(spec, exc) from None
        bwrap = gateway.view == "namespace"  # mounts at /work, /resources/... (else host paths)
        mounts: list[tuple[Path, str]] = []
        if handler.project_dir is not None:
            mounts.append((Path(handler.project_dir), PROJECT_MOUNT))
            env["AGENTLOOM_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = (
                PROJECT_MOUNT if bwrap else handler.project_dir)
        workspace = self._workspace(event.run_id)
        if workspace is not None:
            mounts.append((workspace, WORKSPACE_MOUNT))
            env["AGENTLOOM_WORKSPACE_DIR"] = WORKSPACE_MOUNT if bwrap else str(workspace)
        stdin = _stdin(handler.format, event, env)
        # In the gateway's own spool: reclaimed with it if this process dies mid-hook.
        scratch = gateway.scratch_folder("hook-")
        (scratch / EVENT_FILE).write_bytes(stdin)
        (scratch / EVENT_FILE).chmod(0o644)
        prologue = PROLOGUE % {"event": shlex.quote(f"/work/{EVENT_FILE}" if bwrap
                                                    else str(scratch / EVENT_FILE))}
        argv = (("/bin/sh", "-c", f"{prologue}\n{handler.command}") if handler.command is not None
                else ("/bin/sh", "-c", f'{prologue}; exec "$@"', "sh", *(handler.argv or ())))
        timeout = spec.timeout_s + BACKSTOP_S
        try:
            handle = await gateway.ensure(
                SandboxScope(workspace_scope_id=f"hook-{scratch.name}", run_id=event.run_id,
                             work_dir=scratch, readonly_mounts=tuple(mounts), managed=True),
                None, 0)
            execution = await gateway.execute(
                handle, ExecCommand(argv=argv, env_patch=env, timeout_s=timeout),
                HookOwner(hook_invocation_id=f"{event.operation_id}:{spec.hook_id}"),
                time.time() + timeout)
        except SandboxError as exc:  # refused before anything ran
            shutil.rmtree(scratch, ignore_errors=True)
            raise _not_started(spec, exc) from None
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        try:
            result = await execution.wait()
        except asyncio.CancelledError:  # its timeout or the run's stop: kill every process
            self._terminate(gateway, execution.execution_id, scratch)
            raise
        shutil.rmtree(scratch, ignore_errors=True)
        return _decision(spec, handler.format, event, result, secrets)

    async def _gateway_ready(self) -> Gateway:
        if self._gateway is not None:
            return self._gateway
        return await asyncio.to_thread(self._make_gateway)

    def _make_gateway(self) -> Gateway:
        with self._gateway_lock:
            return self._gateway or self._new_gateway()

    def _new_gateway(self) -> Gateway:
        if self._gateway is None:
            env = self._environment
            backend: SandboxBackend = "auto" if env is None else env.sandbox_backend
            spool = (Path(tempfile.gettempdir()) / "agentloom-hooks" if env is None
                     else env.spool_dir)
            policy = EnvironmentPolicy(allow_shell=True, max_preview_bytes=MAX_OUTPUT_BYTES,
                                       max_spool_bytes=MAX_OUTPUT_BYTES)
            self._gateway = make_gateway(policy, backend=backend, output_dir=spool)
        return self._gateway

    def _workspace(self, run_id: str) -> Path | None:
        """The run's workspace folder, when it has one that exists."""
        if self._environment is None:
            return None
        scopes = self._environment.scopes
        for scope in reversed(scopes.scopes_for_run(run_id)):
            if scope.state == "registered":  # a run's own folder is made when first used
                return scopes.ensure_folder(scope)
            if scope.state != "deleted" and (folder := scopes.path(scope)).is_dir():
                return folder
        return None

    def _terminate(self, gateway: Gateway, execution_id: str, scratch: Path) -> None:
        async def terminate() -> None:
            try:
                await gateway.terminate(execution_id)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)

        task = asyncio.ensure_future(terminate())
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    async def aclose(self) -> None:
        """Wait for the terminations under way, then stop the gateway's executions."""
        if self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)
        if self._gateway is not None:
            with contextlib.suppress(Exception):
                await self._gateway.aclose()


def _not_started(spec: HookSpec, exc: SandboxError) -> HookStartFailed:
    return HookStartFailed(f"hook {spec.hook_id!r} could not start: {exc.code}: "
                           f"{exc.error.message}", code=exc.code)


def _stdin(form: str, event: HookEvent, env: dict[str, str]) -> bytes:
    """The event as the handler's ``format`` writes it; a Claude Code script's ``cwd`` is the
    workspace (where the tools' relative paths point), else the project folder."""
    if form != CLAUDE_CODE:
        return event_json(event)
    return claude_event(event, cwd=env.get("AGENTLOOM_WORKSPACE_DIR")
                        or env.get("AGENTLOOM_PROJECT_DIR", "."))


def _decision(spec: HookSpec, form: str, event: HookEvent, result: ExecutionResult,
              secrets: Secrets) -> Any:
    """What the command's exit and output say (see the module docstring)."""
    where = f"hook {spec.hook_id!r}"
    stderr = excerpt((result.stderr.head + result.stderr.tail).decode(errors="replace"), secrets)
    if result.exit_code is None:
        why = "timed out" if result.timed_out else "was killed"
        raise HookRunFailed(f"{where}: the command {why}; every process of it was killed",
                            code="HOOK_COMMAND_KILLED")
    if result.exit_code in NOT_STARTED:
        tail = f": {stderr}" if stderr else ""
        raise HookStartFailed(f"{where} could not start: its command {NOT_STARTED[result.exit_code]} "
                              f"(exit status {result.exit_code}){tail}", code="HOOK_NOT_STARTED")
    if result.exit_code == DENY_EXIT:
        return {"decision": "deny",
                "reason": stderr or f"{where} denied the call (exit status 2)"}
    if result.exit_code != 0:
        tail = f": {stderr}" if stderr else ""
        raise HookRunFailed(f"{where}: the command exited with status {result.exit_code}{tail}",
                            code="HOOK_COMMAND_FAILED")
    if result.stdout.truncated:
        raise HookRunFailed(f"{where}: the command wrote more than {MAX_OUTPUT_BYTES} bytes to "
                            "stdout; a decision is one small JSON object",
                            code="HOOK_OUTPUT_TOO_LARGE")
    stdout = result.stdout.head + result.stdout.tail
    if form == CLAUDE_CODE:
        return claude_decision(stdout, event, source=f"{where}'s stdout", scrub=secrets.scrub)
    return decision_of(stdout, source=f"{where}'s stdout", secrets=secrets)


def _from_config(config: CommandHandlerConfig, base_dir: Path) -> CommandHookHandler:
    """A configured command hook starts in the config file's folder."""
    return CommandHookHandler(command=config.command, argv=config.argv,
                              env=tuple(config.env.items()), project_dir=str(base_dir),
                              format=config.format)


KIND = HookKind(name="command", config=CommandHandlerConfig, spec=CommandHookHandler,
                from_config=_from_config, runner=CommandHookRunner)
