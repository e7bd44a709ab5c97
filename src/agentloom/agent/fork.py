"""Forking a run (issue 38, 3): a new run that starts from one of its origin's calls.

::

    plan_fork(store, RUN, at=OP)  ── the origin's rows, read only ──►  ForkPlan
        history: the frozen messages of the model call of OP's turn (what the model saw,
                 hook edits included), + the new user message
        files:   the file tools' effective arguments before that turn, in order — or, when
                 exec / an MCP call ran before it, a copy of the origin's kept folder
    start_fork(runtime, plan)   ── Runtime.submit: the fork's run row and its seed (run data
                                   ``fork`` + ``forked_from``) in ONE commit, ``pending``
    seed_fork(kernel, live)     ── when the fork is driven (driver): its files restored into
                                   its own fresh folder, its messages returned for the loop

The fork point of a tool call is the model turn that proposed it: the model is asked again
with the history it had then (a tool call cannot be kept without its result). Nothing before
the fork point runs again: the fork's loop starts at a new model call, and the files are
rebuilt from the record (no capability is called). A SIGKILL before the submit's commit
leaves no fork; after it, a ``pending`` run that ``runs resume`` drives — its files are
restored again from scratch while the fork has committed no call of its own. The kill tests
use three named crash points (``pipeline.crashpoints``, not in its ``POINTS`` of a call's
phases): ``fork_planned`` (before the commit), ``fork_committed``, ``fork_files_restored``.

Owns: what a fork point is, the fork's seed, restoring its files. Does not own: the run's
start and drive (``agent.starts``, ``agent.claims``, ``agent.driver``), the file tools
(``workspace.service``), reading operations (``store.records``, ``pipeline.records``).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.models.codec import payload_to_request
from agentloom.models.types import Message
from agentloom.pipeline.crashpoints import reached
from agentloom.pipeline.records import OperationState
from agentloom.store import Store
from agentloom.store.records import OperationRecord, get_run, operations
from agentloom.workspace.service import WorkspaceHandle, WorkspaceService

if TYPE_CHECKING:
    from agentloom.agent.handles import LiveRun
    from agentloom.agent.runtime import Runtime
    from agentloom.kernel import Kernel
    from agentloom.refs import Principal

__all__ = ["FILE_TOOLS", "ForkError", "ForkPlan", "fork_facts", "fork_messages", "plan_fork", "seed_fork",
           "start_fork"]

FILE_TOOLS = frozenset({"fs.write", "fs.edit", "fs.patch", "fs.move", "fs.delete", "fs.mkdir"})
"""The tools whose effects a fork rebuilds from their recorded effective arguments."""
_KEY = re.compile(r"^(?P<inv>.+)/t(?P<turn>\d+)/(?P<what>model(?:#\d+)?|c\d+)$")
LOCKS = ".locks"


class ForkError(AgentLoomError):
    """A fork that cannot be made: no such run (``RUN_NOT_FOUND``), ``--at`` is no operation
    of the run (``OPERATION_NOT_FOUND``) or not a model or tool call of the run's own agent
    (``FORK_POINT_INVALID``), an empty message (``FORK_MESSAGE_EMPTY``), or exec / an MCP
    call ran before the fork point and the origin kept no folder to copy
    (``FORK_FILES_UNAVAILABLE``).
    Raised before anything is written."""

    default_code = "FORK_POINT_INVALID"
    default_category: ErrorCategory = "validation"


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkPlan:
    """What a fork of ``origin`` at ``operation_id`` starts from (see the module docstring)."""

    origin: str
    operation_id: str
    turn: int
    agent: str
    task: str
    origin_release_id: str | None
    message: str | None  # the new user message after the history
    messages: tuple[dict[str, Any], ...]
    files: tuple[dict[str, Any], ...]  # {"tool", "arguments"}, in the order they ran
    copy_from: str | None
    files_note: str

    def facts(self, release_id: str) -> dict[str, Any]:
        """The keys of the fork's run data: its seed and where it came from."""
        return {
            "forked_from": {"run_id": self.origin, "operation_id": self.operation_id,
                            "turn": self.turn, "release_id": self.origin_release_id,
                            "release_changed": self.origin_release_id != release_id},
            "fork": {"messages": list(self.messages), "message": self.message,
                     "files": list(self.files),
                     "copy_from": self.copy_from, "files_note": self.files_note}}


def plan_fork(store: Store, run_id: str, at: str, *, message: str | None = None) -> ForkPlan:
    """The fork of run ``run_id`` at its operation ``at`` (with ``message`` as a new user
    message after the history).

    Raises:
        ForkError: see there.
    """
    run = get_run(store, run_id)
    if run is None:
        raise ForkError(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
    ops = operations(store, run_id)
    target = next((op for op in ops if op.operation_id == at), None)
    if target is None:
        raise ForkError(f"operation {at!r} is not a call of run {run_id}; fork at one of its "
                        f"model or tool calls (agentloom runs show {run_id})",
                        code="OPERATION_NOT_FOUND")
    found = _KEY.match(target.logical_key)
    if found is None or found["inv"] != run_id:
        raise ForkError(
            f"operation {at} ({target.capability_key}, {target.logical_key}) is not a model or "
            f"tool call of run {run_id}'s own agent (a delegated agent's call, a compaction or "
            f"a workflow's call cannot be forked); fork at one of them (agentloom runs show "
            f"{run_id})")
    turn = int(found["turn"])
    model = target if found["what"].startswith("model") else _proposer(ops, run_id, turn)
    if model is None:
        raise ForkError(f"the model call that proposed operation {at} is not recorded "
                        f"(turn {turn} of run {run_id})")
    messages = _messages(store, model)
    if message is not None and not message.strip():
        raise ForkError("the fork's --message is empty", code="FORK_MESSAGE_EMPTY")
    earlier = [op for op in ops if op.created_at < model.created_at]
    files, opaque = _file_effects(store, earlier)
    copy_from: str | None = None
    note = (f"restored from the record ({len(files)} file tool call(s) before the fork point)"
            if files else "empty (no file tool wrote before the fork point)")
    if opaque:
        copy_from = run.data.get("workspace")
        what = ", ".join(sorted(set(opaque)))
        if not copy_from or not Path(copy_from).is_dir():
            raise ForkError(
                f"{what} ran before the fork point, and the record cannot rebuild what it "
                f"changed; the fork would copy run {run_id}'s kept folder, but it kept none "
                "(run it with workspace.keep: true or --session); fork at an earlier call",
                code="FORK_FILES_UNAVAILABLE")
        note = f"copied from the origin's folder ({what} ran before the fork point)"
    return ForkPlan(origin=run_id, operation_id=at, turn=turn, agent=run.agent or "main",
                    task=message if message is not None else run.task or "",
                    origin_release_id=run.release_id, message=message,
                    messages=tuple(messages),
                    files=tuple(files), copy_from=copy_from, files_note=note)


def _proposer(ops: Sequence[OperationRecord], run_id: str, turn: int) -> OperationRecord | None:
    """The model call of ``turn`` whose response proposed the turn's tool calls (its last)."""
    keys = re.compile(rf"^{re.escape(run_id)}/t{turn}/model(?:#\d+)?$")
    found = [op for op in ops if keys.match(op.logical_key) and op.stored_outcome == "succeeded"]
    return found[-1] if found else None


def _state(store: Store, op: OperationRecord) -> OperationState:
    return OperationState.from_row(op.to_row(), store)


def _messages(store: Store, model: OperationRecord) -> list[dict[str, Any]]:
    """The messages the model call was sent (its frozen payload: with every hook's edit)."""
    state = _state(store, model)
    payload = state.payload if state.attempts else state.request["proposed_arguments"]
    payload_to_request(payload)  # a model request, else ValueError naming the field
    return [dict(m) for m in payload["messages"]]


def _file_effects(store: Store, earlier: Sequence[OperationRecord]
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    """The file tools' effective arguments among ``earlier`` (those that succeeded, in
    order), and the capabilities that ran whose changes the record cannot rebuild."""
    files: list[dict[str, Any]] = []
    opaque: list[str] = []
    for op in earlier:
        key = op.capability_key
        if op.event_type == "model":
            continue
        state = _state(store, op)
        if key in FILE_TOOLS and op.stored_outcome == "succeeded":
            files.append({"tool": key, "arguments": dict(state.payload)})
        elif (key == "exec" or key.startswith("mcp.")) and state.attempts:
            opaque.append(key)
    return files, opaque


async def start_fork(runtime: Runtime, plan: ForkPlan, *,
                     principal: Principal | None = None) -> str:
    """Commit the fork as a ``pending`` run of ``runtime`` (its row and seed in one commit)
    and return its id; drive it with ``runtime.resume``."""
    reached("fork_planned")
    run_id = await runtime.submit(plan.task, agent=plan.agent, principal=principal,
                                  facts=plan.facts(runtime.release_id))
    reached("fork_committed")
    return run_id


def fork_facts(data: Mapping[str, Any]) -> dict[str, Any]:
    """What a fork says about itself (its first event, ``runs show``): ``forked_from`` and
    where its files came from (``files``); empty for a run that is not a fork."""
    origin = data.get("forked_from")
    if not isinstance(origin, Mapping):
        return {}
    fork = data.get("fork")
    note = fork.get("files_note") if isinstance(fork, Mapping) else None
    return {"forked_from": dict(origin), "files": note}


def fork_messages(data: Mapping[str, Any]) -> list[Message] | None:
    """A fork's first messages (ids ``sys`` for a leading system message, else ``f<k>``, and
    ``task`` for its new user message), or None for a run that is not a fork."""
    fork = data.get("fork")
    if not isinstance(fork, Mapping):
        return None
    request = payload_to_request({"messages": fork["messages"]})
    out = [replace(m, id="sys" if k == 0 and m.role == "system" else f"f{k}")
           for k, m in enumerate(request.messages)]
    if fork.get("message") is not None:
        out.append(Message(role="user", content=fork["message"], id="task"))
    return out


async def seed_fork(kernel: Kernel, live: LiveRun) -> list[Message] | None:
    """A fork's first messages, its files restored into its own folder first (again, from
    scratch, while the fork has committed no call); None for a run that is not a fork."""
    messages = fork_messages(live.data)
    if messages is None:
        return None
    run_id = live.lease.run_id
    scope_id = live.lease.workspace_scope_id
    if scope_id is None or operations(kernel.store, run_id, limit=1):
        return messages
    scopes = kernel.environment.scopes
    scope = scopes.get(scope_id)
    if scope.bound_path is not None:  # a fork is never started in a user's folder
        return messages
    folder = scopes.ensure_folder(scope)
    fork = live.data["fork"]
    await asyncio.to_thread(_clear, folder)
    if fork.get("copy_from"):
        await asyncio.to_thread(_copy, Path(fork["copy_from"]), folder, scopes.content_owner)
    else:
        service = kernel.environment.resolver.service
        handle = await service.open_view(folder, scope_id=scope_id)
        for effect in fork.get("files") or ():
            await _apply(service, handle, effect["tool"], effect["arguments"])
    reached("fork_files_restored")
    return messages


def _clear(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.name == LOCKS:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _copy(source: Path, folder: Path, owner: tuple[int, int] | None) -> None:
    """``source``'s files into ``folder``, given to the workspace's content owner (a runtime
    running as root whose commands run unprivileged), as the file tools' files are."""
    shutil.copytree(source, folder, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(LOCKS))
    if owner is None:
        return
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            if root == str(folder) and name == LOCKS:
                continue
            os.lchown(os.path.join(root, name), *owner)


async def _etag(service: WorkspaceService, handle: WorkspaceHandle, path: str) -> str | None:
    try:
        return (await service.read(handle, path, 0, 1)).etag
    except AgentLoomError:
        return None


async def _apply(service: WorkspaceService, handle: WorkspaceHandle, tool: str,
                 a: Mapping[str, Any]) -> None:
    """One file tool's recorded effect, applied to the fork's folder (the etags it was given
    belong to the origin's files: the fork's own are read instead)."""
    if tool == "fs.write":
        mode = a.get("mode", "create_only")
        await service.write(handle, a["path"], a["content"], mode=mode,
                            if_match=await _etag(service, handle, a["path"])
                            if mode == "replace" else None, parents=a.get("parents", True))
    elif tool == "fs.edit":
        await service.edit(handle, a["path"], a["old_text"], a["new_text"],
                           expected_matches=a.get("expected_matches", 1))
    elif tool == "fs.patch":
        await service.apply_patch(handle, a["path"], a["unified_diff"])
    elif tool == "fs.mkdir":
        await service.mkdir(handle, a["path"], parents=a.get("parents", False))
    elif tool == "fs.move":
        await service.move(handle, a["src"], a["dst"],
                           if_match=await _etag(service, handle, a["src"]))
    elif tool == "fs.delete":
        await service.delete(handle, a["path"], if_match=await _etag(service, handle, a["path"]),
                             recursive=a.get("recursive", False))
