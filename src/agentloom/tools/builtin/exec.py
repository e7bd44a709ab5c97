"""The ``exec`` tool (000 §7.3): one command in the calling run's sandbox.

``argv`` runs without a shell; ``shell_script`` only when the environment policy
allows a shell. The model gets a bounded preview of stdout / stderr (head and tail),
the exit code and the execution id; a truncated stream's full bytes move into the
file blob store and are readable with ``result_read``: the preview names the exact
``result_ref`` to pass, and so do the ``stdout_ref`` / ``stderr_ref`` fields.
Every result says whether it ran sandboxed. The role's skills (``mounts``, set by the
kernel) are mounted read-only at ``/skills/<name>``; without a mount namespace (Landlock,
none) an ``argv`` item under ``/skills/<name>`` is given the folder's host path instead.

A workflow node's granted files (the scope's inputs folder, ``workspace.inputs``) are mounted
per call, read-only, at ``/inputs`` (``/inputs/<from node>/...``), and ``$AGENTLOOM_INPUTS``
names that folder on every backend: ``/inputs`` in a namespace view, its host path otherwise
(an ``argv`` item under ``/inputs`` is given that host path too). A scope without one has
neither: ``AGENTLOOM_INPUTS`` is unset (a value in ``env_patch`` is dropped).

The gateway is asked for on each call (``GatewayProvider``), so a host without a usable
sandbox fails that call — a failed result with ``SANDBOX_UNAVAILABLE`` the model reads —
and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import AgentLoomError, OperationError
from agentloom.results import ArtifactRef, JsonBlock, ToolResult, result_ref
from agentloom.sandbox import (
    BusinessOwner,
    CapturedStream,
    ExecCommand,
    ExecutionResult,
    SandboxGateway,
    SandboxHandle,
    SandboxScope,
)
from agentloom.sandbox.ports import WORK_MOUNT
from agentloom.workspace.blobs import BLOB_REF_PREFIX, FileBlobStore
from agentloom.workspace.inputs import INPUTS_ENV, INPUTS_ROOT, existing_inputs, inputs_folder
from agentloom.workspace.resolver import WorkspaceResolver
from agentloom.workspace.scope import WorkspaceScope

EXEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "shell_script": {"type": "string"},
        "cwd": {"type": "string", "description": "/work or a folder below it"},
        "env_patch": {"type": "object", "additionalProperties": {"type": "string"}},
        "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
    },
    "additionalProperties": False,
    "oneOf": [{"required": ["argv"]}, {"required": ["shell_script"]}],
}


def exec_spec(resource_version_id: str = "builtin") -> CapabilitySpec:
    return CapabilitySpec(
        resource_version_id=resource_version_id, capability_key="exec", kind="builtin",
        exposed_name=legal_exposed_name("exec"),
        description="Run a command in the sandbox; its working directory is the workspace "
        "(/work under bubblewrap), so use paths relative to it. Give argv (no shell) or "
        "shell_script (only if allowed). Default timeout 10 s.",
        input_schema=EXEC_SCHEMA, handler_ref="builtin:exec", schema_origin="config",
    )


GatewayProvider = Callable[[], Awaitable[SandboxGateway]]
"""Returns the sandbox gateway, or raises ``SandboxError`` (``SANDBOX_UNAVAILABLE``)."""
MountsFor = Callable[[str | None], tuple[tuple[Path, str], ...]]
"""The read-only ``(host folder, sandbox path)`` mounts of a role (its skills at
``/skills/<name>``); given by the kernel."""


class ExecHandler:
    """The raw handler of ``exec``: runs a command in the sandbox, in the call's workspace, and
    returns its exit status and bounded output (the full output as a blob behind a
    ``result_ref``). Owns no confinement itself: that is the ``SandboxGateway``'s."""

    rerunnable = False
    recoverable = False

    def __init__(self, gateway: GatewayProvider, resolver: WorkspaceResolver,
                 blobs: FileBlobStore) -> None:
        self.gateway = gateway
        self.resolver = resolver
        self.blobs = blobs
        self.mounts: MountsFor | None = None

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        args = dict(request.arguments)
        try:
            scope = self.resolver.scope_for(context)
            if scope.state != "registered":
                return _refused("WORKSPACE_READ_ONLY",
                                "this run no longer holds the workspace; no command can run")
            command = ExecCommand(
                argv=tuple(args["argv"]) if "argv" in args else None,
                shell_script=args.get("shell_script"),
                cwd=args.get("cwd", "/work"), env_patch=args.get("env_patch", {}),
                timeout_s=args.get("timeout_s"),
            )
            gateway = await self.gateway()
            folder = self.resolver.scopes.ensure_folder(scope)
            mounts, granted = await asyncio.to_thread(self._readonly_mounts, scope,
                                                      context.role)
            handle = await gateway.ensure(
                SandboxScope(workspace_scope_id=scope.workspace_scope_id, run_id=context.run_id,
                             work_dir=folder, managed=scope.bound_path is None,
                             readonly_mounts=mounts),
                None, context.lease_epoch or 0)
            command = _inputs_env(command, handle, present=granted)
            if mounts and handle.view == "host":
                command = _host_paths(command, handle)
            execution = await gateway.execute(
                handle, command, BusinessOwner(operation_id=context.operation_id,
                                               attempt_no=context.attempt_no),
                context.deadline)
        except AgentLoomError as exc:
            return ToolResult(status="failed", error=exc.error)
        result = await execution.wait()
        owners = "workflows" if scope.owner_ref.kind == "workflow" else "agents"
        artifacts = []
        refs: dict[str, str] = {}
        for name, stream in (("stdout", result.stdout), ("stderr", result.stderr)):
            if stream.truncated and stream.spool_path is not None:
                location, size = self.blobs.adopt(stream.spool_path, owners=owners,
                                                  file_root_id=scope.file_root_id)
                artifacts.append(ArtifactRef(ref=BLOB_REF_PREFIX + location, name=name,
                                             size=size, media_type="text/plain"))
                # the ref ``ContextManager.result_ops`` registers for the artifact ``name``
                refs[name] = result_ref(context.operation_id, name)
        if result.disk_limit is not None:
            return ToolResult(
                status="unknown", content=(JsonBlock(_summary(result, {})),),
                artifacts=tuple(artifacts),
                error=OperationError(
                    code="EXEC_DISK_LIMIT", category="permission",
                    message=f"the command was killed: {result.disk_limit}; it may have changed "
                    "files before that — delete what is not needed", external_outcome="unknown"),
            )
        if result.timed_out or result.killed_by_revoke or result.terminated:
            why = ("timed out" if result.timed_out else "was stopped")
            # Only a delivered (succeeded) result's artifacts get a result_ref: name none.
            return ToolResult(
                status="unknown", content=(JsonBlock(_summary(result, {})),),
                artifacts=tuple(artifacts),
                error=OperationError(
                    code="EXEC_TIMEOUT" if result.timed_out else "EXEC_KILLED",
                    category="timeout" if result.timed_out else "cancelled",
                    message=f"the command {why} and its process group was killed; "
                    "it may have changed files before that", external_outcome="unknown"),
            )
        return ToolResult.success(JsonBlock(_summary(result, refs)), artifacts=artifacts)

    def _readonly_mounts(self, scope: WorkspaceScope, role: str | None
                         ) -> tuple[tuple[tuple[Path, str], ...], bool]:
        """The call's read-only mounts: the role's skills, then the scope's inputs folder at
        ``/inputs`` when it has one (and whether it has)."""
        mounts = () if self.mounts is None else self.mounts(role)
        inputs = existing_inputs(inputs_folder(self.resolver.scopes.root, scope))
        if inputs is None:
            return mounts, False
        return (*mounts, (inputs, INPUTS_ROOT)), True


def _preview(stream: CapturedStream, ref: str | None) -> str:
    head = stream.head.decode("utf-8", errors="replace")
    if not stream.truncated:
        return head + stream.tail.decode("utf-8", errors="replace")
    omitted = stream.total_bytes - len(stream.head) - len(stream.tail)
    if ref is None:
        note = f"{omitted} bytes omitted"
    else:
        note = (f"{omitted} bytes omitted; read the full output with "
                f"result_read(result_ref='{ref}'); the omitted part starts at offset "
                f"{len(stream.head)}")
        if stream.spool_bytes < stream.total_bytes:
            note += f"; only its first {stream.spool_bytes} bytes were kept"
    return head + f"\n…[{note}]…\n" + stream.tail.decode("utf-8", errors="replace")


def _summary(result: ExecutionResult, refs: dict[str, str]) -> dict[str, Any]:
    """The body the model reads; ``refs`` maps a stored stream to its ``result_ref``."""
    body: dict[str, Any] = {
        "execution_id": result.execution_id,
        "exit_code": result.exit_code,
        "signal": result.signal,
        "timed_out": result.timed_out,
        "stdout": _preview(result.stdout, refs.get("stdout")),
        "stderr": _preview(result.stderr, refs.get("stderr")),
        "stdout_bytes": result.stdout.total_bytes,
        "stderr_bytes": result.stderr.total_bytes,
        "truncated": result.stdout.truncated or result.stderr.truncated,
        "duration_s": round(result.duration_s, 3),
        "sandboxed": result.sandboxed,
        "sandbox_mode": result.sandbox_mode,
    }
    for name, ref in refs.items():
        body[f"{name}_ref"] = ref
    if not result.sandboxed:
        body["warning"] = "this command ran WITHOUT a sandbox (sandbox.backend: none)"
    if result.env_stripped:
        body["env_stripped"] = list(result.env_stripped)
    return body


def _host_paths(command: ExecCommand, handle: SandboxHandle) -> ExecCommand:
    """At the host's paths (Landlock without a mount namespace, ``none``) a read-only mount
    keeps its host path: an ``argv`` item naming ``/skills/<name>`` or ``/inputs`` or a path
    below one is given that host path (the ``shell_script`` text is left as written: it has
    ``$AGENTLOOM_SKILLS`` and ``$AGENTLOOM_INPUTS``)."""
    if command.argv is None:
        return command
    return replace(command, argv=tuple(
        handle.host_path(item) if item != WORK_MOUNT and not item.startswith(WORK_MOUNT + "/")
        else item for item in command.argv))


def _inputs_env(command: ExecCommand, handle: SandboxHandle, *, present: bool) -> ExecCommand:
    """``$AGENTLOOM_INPUTS``: where the command sees the node's inputs (``/inputs`` in a
    namespace view, the folder's host path otherwise); unset when the scope has none."""
    env = {k: v for k, v in command.env_patch.items() if k != INPUTS_ENV}
    if present:
        env[INPUTS_ENV] = handle.host_path(INPUTS_ROOT)
    elif len(env) == len(command.env_patch):
        return command
    return replace(command, env_patch=env)


def _refused(code: str, message: str) -> ToolResult:
    return ToolResult(status="failed", error=OperationError(
        code=code, category="permission", message=message, external_outcome="not_started"))


