"""``GET /v1/runs/{run_id}/workspace[/{path}]``: the files of a run's workspace, read-only.

The folder is the run's own workspace scope (``workspace.scope``: found by its run id in the
store, never from a path the caller gives); a file is opened beneath it with the workspace
layer's resolution (``workspace.paths``: ``parse_path`` + ``Beneath``: openat2
``RESOLVE_BENEATH`` or the no-symlink walk), so ``..``, an absolute path or a symlink out of
it is refused, never read. Answers name relative paths only, never the host folder. The walk of
the folder and the read of a file run in a worker thread, never on the event loop that answers
every other request.

Owns: listing and reading a run's workspace over HTTP. Does not own the workspace's layout or
its path rules (``workspace``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentloom.agent.runtime import Runtime
from agentloom.host.access import owned_run
from agentloom.host.problems import Problem
from agentloom.refs import Principal
from agentloom.workspace.paths import (
    LOCK_DIR,
    TEMP_PREFIX,
    Beneath,
    WorkspaceError,
    parse_path,
    refuse_reserved,
)

__all__ = ["MALFORMED", "MAX_FILE_BYTES", "list_workspace", "read_workspace_file", "run_folder"]

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_FILES = 10_000
# A path that is not a path is a bad request; a well-formed one with no regular file beneath
# the root there (missing, a folder, a symlink, outside, reserved) is a 404.
MALFORMED = frozenset({"INVALID_PATH", "PATH_TOO_LONG", "NAME_TOO_LONG"})


def run_folder(runtime: Runtime, run_id: str) -> Path:
    """The host folder of the run's workspace; a 404 problem when it has none (any more)."""
    scopes = runtime.kernel.environment.scopes
    found = scopes.scopes_for_run(run_id)
    own = [s for s in found if s.invocation_id == run_id] or found
    if not own:
        raise Problem(404, "WORKSPACE_UNAVAILABLE", f"run {run_id!r} has no workspace yet "
                      "(a queued run gets one when a worker takes it)")
    scope = own[0]
    # a run's own folder is made when first used: a live run that wrote nothing has it empty
    folder = scopes.ensure_folder(scope) if scope.state == "registered" else scopes.path(scope)
    if scope.state == "deleted" or not folder.is_dir():
        raise Problem(404, "WORKSPACE_UNAVAILABLE", f"the workspace of run {run_id!r} was "
                      "deleted when the run ended (workspace: {keep: true} keeps it)")
    return folder


def _listing(folder: Path) -> list[dict[str, Any]]:
    """Regular files beneath ``folder`` (relative POSIX paths, sorted); symlinks, the lock
    folder and temporary files are left out."""
    files: list[dict[str, Any]] = []
    for here, dirs, names in os.walk(folder, followlinks=False):
        rel_dir = Path(here).relative_to(folder)
        if rel_dir == Path("."):
            dirs[:] = [d for d in dirs if d != LOCK_DIR]
        dirs[:] = sorted(d for d in dirs if not d.startswith(TEMP_PREFIX))
        for name in names:
            if name.startswith(TEMP_PREFIX):
                continue
            st = os.lstat(Path(here) / name)
            if stat.S_ISREG(st.st_mode):
                files.append({"path": (rel_dir / name).as_posix(), "size": st.st_size,
                              "modified_at": st.st_mtime})
            if len(files) >= MAX_FILES:
                return sorted(files, key=lambda f: f["path"])
    return sorted(files, key=lambda f: f["path"])


async def list_workspace(request: Request, runtime: Runtime,
                         principal: Principal) -> JSONResponse:
    """``GET /v1/runs/{run_id}/workspace``: ``{"run_id", "files": [{path, size,
    modified_at}]}``."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    files = await to_thread.run_sync(lambda: _listing(run_folder(runtime, run.run_id)))
    return JSONResponse({"run_id": run.run_id, "files": files})


def _read(folder: Path, raw: str) -> bytes:
    """The bytes of ``raw`` beneath ``folder``; ``WorkspaceError`` for a path that is not
    a regular file beneath it."""
    rel = parse_path(raw)
    refuse_reserved(rel)
    if rel.is_root:
        raise WorkspaceError("IS_A_DIRECTORY", "'.' is the workspace folder, not a file")
    with Beneath(folder) as beneath:
        fd = beneath.open(rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            beneath.check_device(st, rel)
            if not stat.S_ISREG(st.st_mode):
                raise WorkspaceError("NOT_A_FILE", f"{rel.display} is not a regular file")
            if st.st_size > MAX_FILE_BYTES:
                raise Problem(413, "FILE_TOO_LARGE", f"{rel.display} is {st.st_size} bytes; "
                              f"this API serves files up to {MAX_FILE_BYTES} bytes")
            with os.fdopen(fd, "rb", closefd=False) as f:
                return f.read()
        finally:
            os.close(fd)


async def read_workspace_file(request: Request, runtime: Runtime,
                              principal: Principal) -> Response:
    """``GET /v1/runs/{run_id}/workspace/{path}``: one file's bytes."""
    run = owned_run(runtime.store, request.path_params["run_id"], principal)
    folder = await to_thread.run_sync(run_folder, runtime, run.run_id)
    raw = request.path_params["path"]
    if not raw:  # ``…/workspace/`` (also what a client makes of ``…/workspace/.``)
        raise Problem(404, "FILE_NOT_FOUND", "no file at an empty path; GET "
                      f"/v1/runs/{run.run_id}/workspace lists the files")
    try:
        data = await to_thread.run_sync(_read, folder, raw)
    except WorkspaceError as exc:
        if exc.code == "IO_ERROR":  # the host's failure, not the request's: a logged 500
            raise RuntimeError(f"reading {raw!r} of run {run.run_id!r} failed") from exc
        status = 400 if exc.code in MALFORMED else 404
        raise Problem(status, exc.code, exc.error.message) from None
    return Response(data, media_type="application/octet-stream")
