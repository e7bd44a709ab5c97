"""From a call's trusted context to its workspace: the scope, its folder, a handle.

The scope comes only from ``AttemptContext.workspace_scope_id`` (set by the runtime);
it must belong to the calling run, and only a still-registered scope is writable.
``ScopedFiles`` is the file service bound to that one handle: the ``ctx.files`` a
developer's tool gets. It takes no owner, session, scope or host path from its caller. The
handle carries the scope's inputs folder (``inputs.inputs_folder``): a workflow node's granted
files, read at ``/inputs/...``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Sequence

from agentloom.attempts import AttemptContext
from agentloom.workspace.files import Deleted, FileSlice, FileVersion
from agentloom.workspace.inputs import inputs_folder
from agentloom.workspace.paths import WorkspaceError
from agentloom.workspace.scope import WorkspaceScope, WorkspaceStore
from agentloom.workspace.service import WorkspaceHandle, WorkspaceService


class WorkspaceResolver:
    """From a call's trusted context to its workspace scope, folder and file service.

    The scope comes only from ``AttemptContext.workspace_scope_id``, must belong to the calling
    run, and is writable only while it is registered. Takes no owner, scope or host path from
    the caller."""

    def __init__(self, scopes: WorkspaceStore, service: WorkspaceService) -> None:
        self.scopes = scopes
        self.service = service

    def scope_for(self, context: AttemptContext) -> WorkspaceScope:
        ref = context.workspace_scope_id
        if ref is None:
            raise WorkspaceError("WORKSPACE_UNAVAILABLE",
                                 "this call has no workspace: the run was started without one")
        scope = self.scopes.get(ref)
        if scope.run_id != context.run_id:
            raise WorkspaceError("PATH_ESCAPE", "this workspace belongs to another run")
        if scope.state == "deleted":
            raise WorkspaceError("WORKSPACE_UNAVAILABLE", "this workspace was deleted")
        return scope

    async def handle_for(self, context: AttemptContext) -> WorkspaceHandle:
        return await self._open(self.scope_for(context))

    async def _open(self, scope: WorkspaceScope) -> WorkspaceHandle:
        folder = self.scopes.ensure_folder(scope)
        if scope.bound_path is not None:
            # A folder of the user's: the locks live outside it, and what the tools create in
            # it belongs to whoever owns the folder (not to the sandbox uid).
            st = os.stat(folder)
            return await self.service.open_view(
                folder, scope_id=scope.workspace_scope_id, writable=scope.state == "registered",
                lock_dir=self.scopes.lock_dir(scope),
                content_owner=(st.st_uid, st.st_gid) if os.geteuid() == 0 else None)
        return await self.service.open_view(folder, scope_id=scope.workspace_scope_id,
                                            writable=scope.state == "registered",
                                            inputs=inputs_folder(self.scopes.root, scope))

    async def files_for(self, context: AttemptContext) -> ScopedFiles:
        """The call's files. The scope is checked now (a call without a usable one is
        refused before its tool runs); its folder is opened on the first file operation, so
        a tool that touches no file pays nothing for it."""
        scope = self.scope_for(context)
        writable = scope.state == "registered"
        return ScopedFiles(self.service, functools.partial(self._open, scope),
                           writable=lambda: writable)

    def files_checked_on_use(self, context: AttemptContext) -> ScopedFiles:
        """The call's files with the scope checked on the first file operation, not before:
        for a tool with no side effect (``Tool.rerunnable``), which loses nothing when it is
        refused half-way — and most such tools touch no file, so they never pay for it."""
        async def opener() -> WorkspaceHandle:
            return await self._open(self.scope_for(context))

        return ScopedFiles(self.service, opener,
                           writable=lambda: self.scope_for(context).state == "registered")


class ScopedFiles:
    """The workspace file service bound to one call's scope (``ctx.files``): ``opener`` opens
    the scope's folder on the first file operation; ``writable`` says, until then, whether
    the scope may be written."""

    def __init__(self, service: WorkspaceService,
                 opener: Callable[[], Awaitable[WorkspaceHandle]], *,
                 writable: Callable[[], bool]) -> None:
        self._service = service
        self._opener = opener
        self._opened: WorkspaceHandle | None = None
        self._writable = writable

    @property
    def writable(self) -> bool:
        if self._opened is not None:
            return self._opened.writable
        return self._writable()

    async def _h(self) -> WorkspaceHandle:
        if self._opened is None:
            self._opened = await self._opener()
        return self._opened

    async def read(self, path: str, offset: int = 0, limit: int | None = None) -> FileSlice:
        return await self._service.read(await self._h(), path, offset, limit)

    async def write(self, path: str, content: str, *, mode: str = "create_only",
                    if_match: str | None = None, parents: bool = True) -> FileVersion:
        return await self._service.write(await self._h(), path, content, mode=mode,  # type: ignore[arg-type]
                                         if_match=if_match, parents=parents)

    async def edit(self, path: str, old_text: str, new_text: str, *, expected_matches: int = 1,
                   if_match: str | None = None) -> FileVersion:
        return await self._service.edit(await self._h(), path, old_text, new_text,
                                        expected_matches=expected_matches, if_match=if_match)

    async def apply_patch(self, path: str, unified_diff: str, *,
                          if_match: str | None = None) -> FileVersion:
        return await self._service.apply_patch(await self._h(), path, unified_diff,
                                               if_match=if_match)

    async def delete(self, path: str, *, if_match: str | None = None,
                     recursive: bool = False) -> Deleted:
        return await self._service.delete(await self._h(), path, if_match=if_match,
                                          recursive=recursive)

    async def glob(self, pattern: str, *, root: str = ".", limit: int = 500) -> Sequence[str]:
        return (await self._service.glob(await self._h(), pattern, root=root, limit=limit)).paths
