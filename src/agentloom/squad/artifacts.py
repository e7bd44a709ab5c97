"""Artifacts: the files a workflow node hands on, and the grants that hand them to a later node
(issue 37, 000 §7.1.9, §9.12).

::

    node succeeds ─► on_record: its files matching ``outputs`` ─► blobs (committed first,
                     content-addressed: nothing names them yet) ─► artifact rows, returned to
                     the driver's ``_record`` and committed WITH the node's record
    artifact.publish {paths} (a tool of an agent node) ─► blobs + rows at once; they count only
                     once the node's record is ``succeeded`` (``latest`` reads only those)
    later node with ``inputs`` ─► grant: the rows of ``from``'s latest succeeded activation
                     matching ``files`` ─► its inputs folder, read only (``_artifact_files``)

Recovery: an activation whose record committed is taken from its record and records nothing
again; one killed before handed nothing on (its rows were not committed, or — published — do
not count until its record says ``succeeded``). Every row is an ``if_absent`` insert keyed by
(run, node, attempt, path): a replayed publish or an outputs record over a published path
writes no second row. A glob that matches nothing records nothing (not an error).

Where a node works: an agent node in its invocation folder (``squad.nodes``); a capability
node with ``outputs`` or ``inputs`` in a folder of its own under the workflow's owner
(partition ``n-<node>-<attempt>``); every other capability node in the workflow's shared
folder, as before (a workflow without artifacts pays for none of this).

Owns: recording outputs, ``artifact.publish``, granting inputs, the ``{{ nodes.NAME.artifacts
}}`` listing. Does not own: the files' walk and limits (``squad._artifact_files``), the rows
(``store.artifacts``), when a node's record commits (``squad.driver``), mounting the inputs
folder in the sandbox (``tools.builtin.exec``), deleting artifacts (``agent.owners``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import mimetypes
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentloom.agent.programs import ProgramRun
from agentloom.agent.spec import AgentSpec, AgentTool, tool_key
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import ConfigError, OperationError
from agentloom.pipeline import crashpoints
from agentloom.pipeline.context import InvocationContext
from agentloom.refs import OwnerRef
from agentloom.results import ToolResult
from agentloom.squad._artifact_files import (
    ArtifactError,
    FileBytes,
    matches,
    read_matching,
    read_named,
    write_inputs,
)
from agentloom.squad.live import driving
from agentloom.squad.results import NodeOutcome
from agentloom.squad.spec import AgentNode, CapabilityNode, Node, WorkflowSpec
from agentloom.store import blobs as blob_rows
from agentloom.store.artifacts import ArtifactRecord, artifact_insert, artifacts_of
from agentloom.store.ports import Fence, Op, Store, WriteSet
from agentloom.store.workflow_nodes import node_records
from agentloom.workspace.inputs import inputs_folder
from agentloom.workspace.scope import WorkspaceScope

__all__ = ["PUBLISH_KEY", "ArtifactError", "Listing", "blob_bytes", "capability_context",
           "check_grants", "grant", "latest", "on_record", "publish_tool"]

PUBLISH_KEY = "artifact.publish"
CHUNK_SIZE = 1 << 20  # as context.blobs / skills.versions: one blob format everywhere
GROUP_BYTES = 8 << 20  # blob bytes per write set committed ahead of the rows
COLLECTED = "artifacts_collected"  # crash point: blobs committed, rows not (tests)
GRANTING = "artifacts_granting"  # crash point: a later node is about to get its inputs

_PUBLISH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"paths": {"type": "array", "minItems": 1, "maxItems": 1000,
                             "items": {"type": "string", "minLength": 1}}},
    "required": ["paths"], "additionalProperties": False}


def _partition(node: str, attempt: int) -> str:
    return f"n-{node}-{attempt}"


def source_owner(spec: WorkflowSpec, node: Node) -> str:
    """Whose content a node's files are: its agent's, or the workflow's."""
    return f"agent:{node.agent}" if isinstance(node, AgentNode) else f"workflow:{spec.name}"


def _owner_text(owner: OwnerRef) -> str:
    return f"{owner.kind}:{owner.id}"


def node_scope(run: ProgramRun, node: Node, attempt: int) -> WorkspaceScope | None:
    """The scope activation ``attempt`` of ``node`` worked in (registered before it ran)."""
    partition = _partition(node.name, attempt)
    kind = "agent" if isinstance(node, AgentNode) else "workflow"
    for scope in run.kernel.environment.scopes.scopes_for_run(run.run_id):
        if scope.partition_id == partition and scope.owner_ref.kind == kind:
            return scope
    return None


# -- reads -----------------------------------------------------------------------------------


def latest(store: Store, run_id: str, node: str) -> list[ArtifactRecord]:
    """The artifacts of ``node``'s latest succeeded activation in run ``run_id`` (none when it
    has not succeeded: published rows of an activation that did not succeed never count)."""
    attempt = None
    for record in node_records(store, run_id):
        if record.node == node and record.status == "succeeded":
            attempt = record.attempt
    return [] if attempt is None else artifacts_of(store, run_id, node, attempt)


class Listing(Mapping[str, str]):
    """``{{ nodes.NAME.artifacts }}``: each node's artifact paths, one per line, read from the
    store when a template names them (a workflow whose templates do not pays nothing)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self._store = store
        self._run_id = run_id

    def __getitem__(self, node: str) -> str:
        return "\n".join(a.path for a in latest(self._store, self._run_id, node))

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({r.node for r in node_records(self._store, self._run_id)}))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def blob_bytes(store: Store, digest: str) -> bytes:
    """The bytes of a stored blob (its chunks joined).

    Raises:
        ArtifactError: ``ARTIFACT_NOT_FOUND`` — the blob or one of its chunks is gone.
    """
    blob = blob_rows.get_blob(store, digest)
    if blob is not None and not blob.chunk_size:
        return blob.content
    parts = [blob_rows.chunk(store, digest, i) for i in range(blob.chunks)] if blob else [None]
    if any(p is None for p in parts):
        raise ArtifactError(f"the bytes of artifact blob {digest[:12]} are gone",
                            code="ARTIFACT_NOT_FOUND")
    return b"".join(p for p in parts if p is not None)


# -- writes ----------------------------------------------------------------------------------


async def _store_blobs(run: ProgramRun, files: Sequence[FileBytes]) -> None:
    """Commit the blobs of ``files`` not stored yet, a few MiB per write set (fenced by the
    run's lease). Nothing names them until the rows commit."""
    store = run.kernel.store
    now = time.time()
    groups: list[list[Op]] = [[]]
    size = 0
    for file in {f.digest: f for f in files}.values():
        if blob_rows.get_blob(store, file.digest) is not None:
            continue
        chunked = len(file.content) > CHUNK_SIZE
        ops: list[Op] = []
        if chunked:
            ops += [blob_rows.chunk_insert(digest=file.digest, seq=i // CHUNK_SIZE,
                                           content=file.content[i:i + CHUNK_SIZE])
                    for i in range(0, len(file.content), CHUNK_SIZE)]
        ops.append(blob_rows.blob_insert(
            digest=file.digest, size=len(file.content), created_at=now,
            content=b"" if chunked else file.content, chunk_size=CHUNK_SIZE if chunked else None))
        for op in ops:  # a chunked blob's row comes after its chunks, in this or a later group
            if size >= GROUP_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(op)
            size += len(op.row.get("content") or b"")
    fence = Fence(run.run_id, run.lease_epoch)
    for group in groups:
        if group:
            await run.kernel.pipeline.commits.coordinator.commit(
                WriteSet(tuple(group), fence, sync=False, label="artifact blobs"))


def _rows(files: Sequence[FileBytes], *, run_id: str, node: str, attempt: int, owner: str,
          how: str) -> list[Op]:
    now = time.time()
    invocation = f"{run_id}/n/{node}/{attempt}"
    return [artifact_insert(ArtifactRecord(
        run_id=run_id, node=node, attempt=attempt, path=f.path, digest=f.digest,
        size=len(f.content), source_owner=owner, invocation=invocation, created_at=now,
        data={"how": how, "media_type": _media_type(f.path)})) for f in files]


def _media_type(path: str) -> str:
    return mimetypes.guess_type(path)[0] or "application/octet-stream"


def check_grants(spec: WorkflowSpec, agents: Mapping[str, AgentSpec]) -> None:
    """Refuse a grant from an agent node that declares no ``outputs`` and whose agent (as the
    runtime defines it) does not list ``artifact.publish``: it could hand nothing on (the
    YAML loader checks this at load; a workflow built in Python is checked here).

    Raises:
        ConfigError: naming the grant, ``WORKFLOW_GRANT_EMPTY``.
    """
    for node in spec.nodes.values():
        for i, g in enumerate(getattr(node, "inputs", ())):
            source = spec.nodes.get(g.source)
            if isinstance(source, AgentNode) and not source.outputs and source.agent in agents \
                    and PUBLISH_KEY not in {tool_key(t) for t in agents[source.agent].tools}:
                raise ConfigError(
                    f"workflows.{spec.name}.nodes.{node.name}.inputs[{i}].from: node "
                    f"{g.source!r} hands on no artifacts; give it outputs or list "
                    f"{PUBLISH_KEY!r} in agent {source.agent!r}'s tools",
                    code="WORKFLOW_GRANT_EMPTY")


async def on_record(run: ProgramRun, spec: WorkflowSpec, name: str, attempt: int,
                    outcome: NodeOutcome) -> tuple[NodeOutcome, list[Op]]:
    """What a node's record commits besides itself: a succeeded node's ``outputs`` as artifact
    rows (their blobs committed now). Over the limits, the node fails ``ARTIFACTS_TOO_LARGE``
    and records none."""
    node = spec.nodes[name]
    if not outcome.succeeded or not isinstance(node, AgentNode | CapabilityNode) \
            or not node.outputs:
        return outcome, []
    scope = node_scope(run, node, attempt)
    if scope is None:  # it never got a folder (it made no call that needed one): no files
        return outcome, []
    folder = run.kernel.environment.scopes.path(scope)
    try:
        files = await asyncio.to_thread(read_matching, folder, node.outputs)
    except ArtifactError as exc:
        return NodeOutcome("failed", error=OperationError(
            code=exc.code, category="validation", external_outcome="known",
            message=f"node {name!r}: {exc}"), operation_id=outcome.operation_id,
            attempts=outcome.attempts), []
    await _store_blobs(run, files)
    crashpoints.reached(COLLECTED)
    return outcome, _rows(files, run_id=run.run_id, node=name, attempt=attempt,
                          owner=source_owner(spec, node), how="outputs")


# -- grants ----------------------------------------------------------------------------------


async def grant(run: ProgramRun, scope: WorkspaceScope, node: AgentNode | CapabilityNode) -> None:
    """Write ``node``'s granted artifacts read only into ``scope``'s inputs folder
    (``<from>/<path>``); nothing when it has no ``inputs``. Idempotent: a folder written
    before (a resumed node) is kept."""
    if not node.inputs:
        return
    folder = inputs_folder(run.kernel.environment.scopes.root, scope)
    if folder is None or folder.is_dir():
        return
    crashpoints.reached(GRANTING)
    store = run.kernel.store
    files: list[tuple[str, bytes]] = []
    for g in node.inputs:
        for record in latest(store, run.run_id, g.source):
            if matches(g.files, record.path):
                files.append((f"{g.source}/{record.path}", blob_bytes(store, record.digest)))
    await asyncio.to_thread(write_inputs, folder, files)


async def capability_context(run: ProgramRun, ctx: InvocationContext, node: CapabilityNode,
                             attempt: int) -> InvocationContext:
    """``ctx`` in a folder of the capability node's own (registered under the workflow's
    owner, partition ``n-<node>-<attempt>``), its inputs granted."""
    partition = _partition(node.name, attempt)
    scope = await run.kernel.environment.scopes.register(
        owner=ctx.owner_ref, run_id=run.run_id, fence=Fence(run.run_id, run.lease_epoch),
        persistent=False, partition_kind="workflow_session", partition_id=partition,
        invocation_id=partition)
    await grant(run, scope, node)
    return dataclasses.replace(ctx, workspace_scope_id=scope.workspace_scope_id)


# -- artifact.publish ------------------------------------------------------------------------


def _failed(code: str, message: str, category: str = "validation") -> ToolResult:
    return ToolResult.failure(OperationError(code=code, category=category,  # type: ignore[arg-type]
                                             external_outcome="not_started", message=message))


class _PublishHandler:
    """``artifact.publish {paths}``: record files of the calling node's folder as artifacts."""

    rerunnable = False
    recoverable = True  # idempotent (if_absent rows, content-addressed blobs): run it again

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        ref = context.node
        run = driving(context.run_id) if ref is not None else None
        if ref is None or run is None or context.workspace_scope_id is None:
            return _failed("NOT_IN_WORKFLOW", "artifact.publish records files of a workflow "
                           "node; this call is not made for one", "permission")
        scopes = run.kernel.environment.scopes
        scope = scopes.get(context.workspace_scope_id)
        paths = [str(p) for p in request.arguments.get("paths") or ()]
        try:
            files = await asyncio.to_thread(read_named, scopes.path(scope), paths)
        except ArtifactError as exc:
            return _failed(exc.code, str(exc))
        await _store_blobs(run, files)
        rows = _rows(files, run_id=run.run_id, node=ref.name, attempt=ref.attempt,
                     owner=_owner_text(scope.owner_ref), how="publish")
        await run.kernel.pipeline.commits.coordinator.commit(
            WriteSet(tuple(rows), Fence(run.run_id, run.lease_epoch), label="artifact.publish"))
        return ToolResult.success({"published": [
            {"path": f.path, "digest": f.digest, "size": len(f.content)} for f in files]})


def publish_tool(release_id: str) -> AgentTool:
    """``artifact.publish`` and its handler, for a catalog of ``release_id``."""
    return (CapabilitySpec(
        resource_version_id=release_id, capability_key=PUBLISH_KEY, kind="builtin",
        exposed_name=legal_exposed_name(PUBLISH_KEY),
        description="Hand files of this workflow node's folder on to later nodes as artifacts "
        "(paths relative to the folder). They count once the node succeeds.",
        input_schema=_PUBLISH_SCHEMA, handler_ref=f"builtin:{PUBLISH_KEY}",
        schema_origin="config"), _PublishHandler())
