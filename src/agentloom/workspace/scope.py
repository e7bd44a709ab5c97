"""Workspace scopes: who owns which folder, registered before the folder exists (000 §7.1).

The shared root is laid out as::

    <root>/agents/<file_root_id>/manifest.json
    <root>/agents/<file_root_id>/sessions/<session>/work/            persistent session
    <root>/agents/<file_root_id>/sessions/<session>/runs/<run>/work/ non-persistent session
    <root>/agents/<file_root_id>/invocations/<inv>/work/             persistent invocation
    <root>/agents/<file_root_id>/invocations/<inv>/runs/<run>/work/  non-persistent invocation
    <root>/workflows/<file_root_id>/sessions/<session>/[runs/<run>/]work/
    <root>/system/...                                                never mounted for models

A scope is registered under its creation key ``(owner, partition kind, partition id,
run)``: identity and mount intent are committed first, the folder is created after
(idempotently), so a crash in between reuses the same scope and path. A new run of a
persistent session gets a new scope; registering it revokes every older run's scope
of that partition, so an old run keeps no write right because the path is the same.
Paths come only from these trusted identities — never from a model, a hook or a user.

Every folder created here is ``0700``. With a ``content_owner`` (the runtime is root), a
registered scope's ``work/`` folder belongs to that uid/gid so sandboxed commands can write
it; the folders above it stay the runtime's (``_modes.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from agentloom.canonical import sorted_json
from agentloom.errors import AgentLoomError, ConfigError, ErrorCategory, RevisionConflict
from agentloom.ids import new_id
from agentloom.refs import OwnerRef
from agentloom.store import scopes as scope_rows
from agentloom.store.ports import Fence, Insert, Put, Store, WriteSet
from agentloom.store.scopes import ScopeRecord
from agentloom.workspace._modes import check_owner, hand_over_dir, make_private_dirs

PartitionKind = Literal["agent_session", "workflow_session", "invocation", "bound"]
ScopeState = Literal["registered", "revoked", "deleted"]

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class WorkspaceScopeError(AgentLoomError):
    """A workspace scope that cannot be used: not registered (``SCOPE_NOT_FOUND``), a bound
    folder that is missing (``WORKDIR_NOT_FOUND``) or held by another active run
    (``WORKSPACE_BUSY``); ``WORKSPACE_SCOPE`` otherwise."""

    default_code = "WORKSPACE_SCOPE"
    default_category: ErrorCategory = "permission"


def _component(value: str, what: str) -> str:
    if not _SAFE.match(value) or value in (".", ".."):
        raise ConfigError(
            f"{what} {value!r} cannot name a workspace folder: use letters, digits, '.', '_' "
            "and '-' (at most 128, starting with a letter or digit)"
        )
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceScope:
    """One registered workspace: who owns it, the file root and partition (per run, session or
    invocation, or a bound folder) it lives in, the run it was made for and whether it
    outlives that run. Resolved by the runtime, never from a path a model or hook gives."""

    workspace_scope_id: str
    owner_ref: OwnerRef
    file_root_id: str
    partition_kind: PartitionKind
    partition_id: str
    run_id: str
    persistent: bool
    invocation_id: str | None = None
    state: ScopeState = "registered"
    bound_path: str | None = None
    """A folder of the user's bound as the workspace (``--workdir``, ``workspace.bind``):
    its absolute real path. It is never created, re-moded, given away or deleted here."""

    @property
    def relative_path(self) -> Path:
        """The work folder below the shared root, from the trusted identity alone."""
        owners = "workflows" if self.owner_ref.kind == "workflow" else "agents"
        section = "invocations" if self.partition_kind == "invocation" else "sessions"
        base = Path(owners) / self.file_root_id / section / self.partition_id
        if not self.persistent:
            base = base / "runs" / self.run_id
        return base / "work"

    @classmethod
    def from_record(cls, record: ScopeRecord) -> WorkspaceScope:
        """The scope of its stored row (``store.scopes``)."""
        return cls(
            workspace_scope_id=record.workspace_scope_id,
            owner_ref=OwnerRef(kind=cast(Literal["agent", "workflow"], record.owner_kind),
                               id=record.owner_id,
                               space_id=record.space_id),
            file_root_id=record.file_root_id,
            partition_kind=cast(PartitionKind, record.partition_kind),
            partition_id=record.partition_id,
            run_id=record.run_id,
            persistent=record.persistent,
            invocation_id=record.invocation_id,
            state=cast(ScopeState, record.state),
            bound_path=record.data.get("bound"),
        )


def bound_folder(folder: Path) -> Path:
    """The absolute real path of a folder to bind (links in the path given are followed
    once, here, by the user's choice; the scope then holds the real path)."""
    real = Path(os.path.realpath(folder))
    if not real.is_dir():
        raise WorkspaceScopeError(
            f"cannot use {folder} as the workspace: "
            + ("it is not a folder" if real.exists() else "no such folder"),
            code="WORKDIR_NOT_FOUND", category="not_found")
    return real


class Committer(Protocol):
    """Where run facts are committed (the runtime's ``CommitCoordinator``)."""

    async def commit(self, ws: WriteSet) -> None: ...


class WorkspaceStore:
    """Registers scopes in the store and maps them to folders under one shared root.

    Args:
        content_owner: ``(uid, gid)`` that every registered scope's work folder is given
            to, for a runtime running as root whose commands run unprivileged
            (``sandbox_identity()``). Default ``None``: the runtime keeps it.
    """

    def __init__(
        self,
        store: Store,
        coordinator: Committer,
        root: Path,
        *,
        content_owner: tuple[int, int] | None = None,
    ) -> None:
        self.store = store
        self.coordinator = coordinator
        self.root = Path(root)
        self.content_owner = check_owner(content_owner)

    # -- file roots ------------------------------------------------------------------
    async def file_root(self, owner: OwnerRef) -> str:
        """The owner's fixed ``file_root_id``: created once, never rebuilt."""
        file_root_id = scope_rows.file_root_id(self.store, owner.kind, owner.id)
        if file_root_id is None:
            try:
                await self.coordinator.commit(WriteSet((scope_rows.file_root_insert(
                    owner_kind=owner.kind, owner_id=owner.id, space_id=owner.space_id,
                    file_root_id=new_id(), created_at=time.time()),)))
            except RevisionConflict:
                pass  # another worker created it first: use theirs
            file_root_id = scope_rows.file_root_id(self.store, owner.kind, owner.id)
            assert file_root_id is not None
        self._write_manifest(owner, file_root_id)
        return file_root_id

    def _write_manifest(self, owner: OwnerRef, file_root_id: str) -> None:
        owners = "workflows" if owner.kind == "workflow" else "agents"
        folder = self.root / owners / file_root_id
        manifest = folder / "manifest.json"
        if manifest.exists():
            return
        make_private_dirs(folder)
        tmp = folder / f".manifest.{os.getpid()}.tmp"
        data = sorted_json({"file_root_id": file_root_id, "owner": owner.to_dict()}) + "\n"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            os.write(fd, data.encode())
        finally:
            os.close(fd)
        os.replace(tmp, manifest)

    # -- scopes ----------------------------------------------------------------------------
    async def register(
        self,
        *,
        owner: OwnerRef,
        partition_kind: PartitionKind,
        partition_id: str,
        run_id: str,
        persistent: bool,
        invocation_id: str | None = None,
        fence: Fence | None = None,
        bound_path: Path | None = None,
    ) -> WorkspaceScope:
        """Register (or find) the scope for this key, then make sure its folder exists.

        ``bound_path`` (with ``partition_kind="bound"``, persistent) makes an existing folder
        the scope's: see ``bind``."""
        return await self.settle(*await self.plan(
            owner=owner, partition_kind=partition_kind, partition_id=partition_id,
            run_id=run_id, persistent=persistent, invocation_id=invocation_id,
            bound_path=bound_path), fence=fence)

    async def settle(self, scope: WorkspaceScope, ops: list[Insert | Put], *,
                     fence: Fence | None = None) -> WorkspaceScope:
        """Commit what ``plan`` gave (nothing when it found the scope registered), then make
        sure the scope's folder exists; a scope registered concurrently under the same key
        is reused."""
        if ops:
            try:
                await self.coordinator.commit(WriteSet(tuple(ops), fence))
            except RevisionConflict:
                pass  # registered concurrently under the same key: reuse it
            found = self._find(scope.owner_ref, scope.partition_kind, scope.partition_id,
                               scope.run_id)
            assert found is not None
            scope = found
        self.ensure_folder(scope)
        return scope

    async def plan(
        self,
        *,
        owner: OwnerRef,
        partition_kind: PartitionKind,
        partition_id: str,
        run_id: str,
        persistent: bool,
        invocation_id: str | None = None,
        bound_path: Path | None = None,
        new_run: bool = False,
    ) -> tuple[WorkspaceScope, list[Insert | Put]]:
        """The scope for this key and the rows that register it, for the caller to commit
        (with the rows of its own that must go in the same commit: a new run's): no rows
        when it is registered already (``new_run``: the run is being created in that commit,
        so it has none). The folder is not made here (``ensure_folder``)."""
        _component(partition_id, "partition id")
        _component(run_id, "run id")
        if owner.kind == "workflow" and partition_kind != "workflow_session":
            raise ConfigError("a workflow owner's workspace partition must be workflow_session")
        if (partition_kind == "bound") != (bound_path is not None) or (
                bound_path is not None and not persistent):
            raise ConfigError("a bound scope needs its folder and is persistent")
        if owner.kind == "agent" and partition_kind == "workflow_session":
            raise ConfigError("an agent owner's workspace partition is agent_session or invocation")
        existing = None if new_run else self._find(owner, partition_kind, partition_id, run_id)
        if existing is not None:
            return existing, []
        file_root_id = await self.file_root(owner)
        now = time.time()
        scope = WorkspaceScope(
            workspace_scope_id=new_id(), owner_ref=owner, file_root_id=file_root_id,
            partition_kind=partition_kind, partition_id=partition_id, run_id=run_id,
            persistent=persistent, invocation_id=invocation_id,
            bound_path=str(bound_path) if bound_path is not None else None,
        )
        data: dict[str, Any] = {"path": str(scope.relative_path)}
        if bound_path is not None:
            data = {"path": str(bound_path), "bound": str(bound_path)}
        ops: list[Insert | Put] = [scope_rows.scope_insert(
            workspace_scope_id=scope.workspace_scope_id, owner_kind=owner.kind,
            owner_id=owner.id, space_id=owner.space_id, file_root_id=file_root_id,
            partition_kind=partition_kind, partition_id=partition_id, run_id=run_id,
            invocation_id=invocation_id, persistent=persistent, created_at=now, data=data)]
        if persistent:
            # the same folder, a new run: every older run of it loses its write right
            for older in scope_rows.scopes_where(
                    self.store, owner_kind=owner.kind, owner_id=owner.id,
                    partition_kind=partition_kind, partition_id=partition_id,
                    state="registered"):
                ops.append(scope_rows.scope_state_put(older.workspace_scope_id, "revoked",
                                                      updated_at=now))
        return scope, ops

    async def bind(self, *, owner: OwnerRef, run_id: str, folder: Path,
                   busy: Callable[[str], bool], fence: Fence | None = None) -> WorkspaceScope:
        """Make the existing ``folder`` the run's workspace: a persistent scope that no
        cleanup deletes, every file tool beneath it by the same rules as any workspace.

        Refused (``WORKSPACE_BUSY``, naming the run) while a run for which ``busy(run_id)``
        is true holds it; ``WORKDIR_NOT_FOUND`` when it is not an existing folder.
        """
        real, partition_id = self.check_bindable(folder, busy, run_id=run_id)
        return await self.register(
            owner=owner, partition_kind="bound", partition_id=partition_id, run_id=run_id,
            persistent=True, fence=fence, bound_path=real)

    def check_bindable(self, folder: Path, busy: Callable[[str], bool], *,
                       run_id: str | None = None) -> tuple[Path, str]:
        """``folder``'s real path and partition id, if no other busy run holds it (else
        ``WORKSPACE_BUSY``; ``WORKDIR_NOT_FOUND`` when it is not a folder)."""
        real = bound_folder(folder)
        partition_id = hashlib.sha256(str(real).encode()).hexdigest()[:32]
        for holder in scope_rows.scopes_where(self.store, partition_kind="bound",
                                              partition_id=partition_id, state="registered"):
            if holder.run_id != run_id and busy(holder.run_id):
                raise WorkspaceScopeError(
                    f"the folder {real} is the workspace of run {holder.run_id}, which is still "
                    "running; wait for it (agentloom run --wait), or stop it first "
                    f"(agentloom runs stop {holder.run_id})", code="WORKSPACE_BUSY",
                    category="conflict")
        return real, partition_id

    def _find(self, owner: OwnerRef, partition_kind: str, partition_id: str,
              run_id: str) -> WorkspaceScope | None:
        found = scope_rows.find_scope(self.store, owner_kind=owner.kind, owner_id=owner.id,
                                      partition_kind=partition_kind,
                                      partition_id=partition_id, run_id=run_id)
        return None if found is None else WorkspaceScope.from_record(found)

    def get(self, workspace_scope_id: str) -> WorkspaceScope:
        found = scope_rows.get_scope(self.store, workspace_scope_id)
        if found is None:
            raise WorkspaceScopeError(f"workspace scope {workspace_scope_id} is not registered",
                                      code="SCOPE_NOT_FOUND", category="not_found")
        return WorkspaceScope.from_record(found)

    def scopes_for_run(self, run_id: str) -> list[WorkspaceScope]:
        return [WorkspaceScope.from_record(r)
                for r in scope_rows.scopes_where(self.store, run_id=run_id)]

    def path(self, scope: WorkspaceScope) -> Path:
        """The host folder of a scope (internal: never shown to a model or a hook)."""
        if scope.bound_path is not None:
            return Path(scope.bound_path)
        return self.root / scope.relative_path

    def lock_dir(self, scope: WorkspaceScope) -> Path:
        """Where the file tools' entry locks of a bound folder live: under the runtime's
        ``system/`` folder, never inside the user's folder."""
        return self.root / "system" / "locks" / scope.partition_id

    def ensure_folder(self, scope: WorkspaceScope) -> Path:
        """Create a registered scope's folder (``0700``) and give it to the content owner.
        A bound folder must still be a folder; it is left as its owner made it."""
        folder = self.path(scope)
        if scope.bound_path is not None:
            if not folder.is_dir() or folder.is_symlink():
                raise WorkspaceScopeError(f"the bound workspace folder {folder} is gone",
                                          code="WORKDIR_NOT_FOUND", category="not_found")
            return folder
        if scope.state == "registered":
            make_private_dirs(folder)
            # Its parents are the runtime's (0711, not writable by others), so no command
            # can swap the path.
            hand_over_dir(folder, self.content_owner, private=True)
        return folder

    def writable(self, workspace_scope_id: str) -> bool:
        """Only a registered (not revoked, not deleted) scope may be written."""
        return self.get(workspace_scope_id).state == "registered"

    async def set_state(self, scopes: list[WorkspaceScope], state: ScopeState,
                        fence: Fence | None = None) -> None:
        if not scopes:
            return
        now = time.time()
        await self.coordinator.commit(WriteSet(tuple(
            scope_rows.scope_state_put(s.workspace_scope_id, state, updated_at=now)
            for s in scopes), fence))
