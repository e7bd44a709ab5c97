"""The collaboration tools an agent node calls (issue 37; 003 F11): ``collab.post`` /
``collab.read`` (the run's mailbox), ``collab.handoff`` / ``collab.accept`` (handoffs),
``collab.claim`` / ``collab.update`` (the task board).

::

    agent node's call ──► bus ──► pipeline (recorded, hooked) ──► _CollabHandler
        context.node ─► squad.live.driving(run) ─► the run's store, commit path, lease
        ops (squad.collab) ─► WriteSet fenced by the run's lease ─► CommitCoordinator

Each call is scoped to the workflow run of its node (``AttemptContext.node``): the calling
node is the sender, the reader, the one handing off, accepting or claiming. A call not made
for a workflow node (or for a run this process does not drive) fails ``NOT_IN_WORKFLOW``.

Recovery: a write is keyed by the call's operation id (a message ``m-<op>``, a handoff
``h-<op>``) or records it (a read mark's ``read_by``, an acceptance's and a board write's
``by``); the handler is ``recoverable``, so a call cut off after its write is run again and
finds that write instead of making a second one, and a call whose result was delivered is
replayed by the pipeline from its stored envelope.

Failure codes (a failed call, never an exception): ``NOT_IN_WORKFLOW``, ``UNKNOWN_NODE`` (a
``to`` that is not a node of the workflow), ``HANDOFF_NOT_FOUND``, ``HANDOFF_NOT_YOURS`` (a
handoff to another node), ``HANDOFF_TAKEN`` (not pending any more: another acceptor won),
``TASK_TAKEN`` (claimed by another node), ``REVISION_CONFLICT`` (``expect_revision`` is not
the task's revision), ``INVALID_ARGUMENT`` (a body or data that is not JSON).

Owns: the handlers and their ``(spec, handler)`` pairs. Does not own: the rows
(``squad.collab``), which names an agent may list (``squad.workflow_tools``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentloom.agent.programs import ProgramRun
from agentloom.agent.spec import AgentTool
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import RevisionConflict
from agentloom.pipeline import crashpoints
from agentloom.refs import NodeRef
from agentloom.results import ToolResult
from agentloom.squad import collab
from agentloom.squad._collab_schemas import DESCRIPTIONS, SCHEMAS
from agentloom.squad.live import driving
from agentloom.store.ports import Fence, Op, WriteSet

__all__ = ["ANY_NODE", "COLLAB_TOOLS", "CRASH_POINT", "collab_tool", "in_workflow"]

COLLAB_TOOLS: tuple[str, ...] = tuple(SCHEMAS)
ANY_NODE = "*"
"""``collab.handoff``'s ``to`` for a handoff any node of the run may accept."""
CRASH_POINT = "collab_committed"
"""The crash point (``pipeline.crashpoints``) just after a collaboration write committed,
before the call's result is saved."""


def _fail(code: str, message: str, category: Any = "validation") -> ToolResult:
    return ToolResult.failure(message, category=category, code=code)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a collaboration call acts: its workflow run, its node, its operation."""

    run: ProgramRun
    node: NodeRef
    operation_id: str

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def store(self) -> Any:
        return self.run.kernel.store

    def nodes(self) -> tuple[str, ...]:
        """The workflow's node names, as the run recorded its definition."""
        described = self.run.data.get("workflow") or {}
        return tuple(str(n["node"]) for n in described.get("nodes", ()))

    def unknown_node(self, name: str, *, allow_any: bool = False) -> ToolResult | None:
        known = self.nodes()
        if name in known or (allow_any and name == ANY_NODE):
            return None
        extra = f" or {ANY_NODE!r} (any node)" if allow_any else ""
        return _fail("UNKNOWN_NODE", f"{name!r} is not a node of this workflow; its nodes: "
                     f"{', '.join(known)}{extra}")

    def by(self) -> dict[str, Any]:
        return {"node": self.node.name, "attempt": self.node.attempt,
                "operation_id": self.operation_id}

    async def commit(self, ops: Sequence[Op], label: str) -> None:
        """Commit ``ops`` through the run's commit path, fenced by its lease."""
        if ops:
            fence = Fence(self.run.run_id, self.run.lease_epoch)
            await self.run.kernel.pipeline.commits.coordinator.commit(
                WriteSet(tuple(ops), fence, label=label))
            crashpoints.reached(CRASH_POINT)


def in_workflow(name: str, context: AttemptContext) -> Scope | ToolResult:
    """The scope of a call of tool ``name``, or its ``NOT_IN_WORKFLOW`` failure."""
    node = context.node
    run = driving(node.workflow_run_id) if node is not None else None
    if node is None or run is None:
        return _fail("NOT_IN_WORKFLOW", f"{name} is a workflow tool: it works only in a call a "
                     "workflow node makes (an agent node of a running workflow); this call "
                     "is made outside any workflow run", category="business")
    return Scope(run, node, context.operation_id)


# -- the tools ----------------------------------------------------------------------------------

def _message(m: collab.Message) -> dict[str, Any]:
    return {"message_id": m.message_id, "from": m.sender, "body": m.body,
            "created_at": m.created_at}


async def _post(scope: Scope, args: Mapping[str, Any]) -> ToolResult:
    to = str(args["to"])
    bad = scope.unknown_node(to)
    if bad is not None:
        return bad
    message_id = f"m-{scope.operation_id}"
    if scope.store.get(collab.MAILBOX, {"run_id": scope.run_id, "message_id": message_id}) \
            is None:  # else: this call posted it before it was cut off
        op = collab.post(scope.run_id, sender=scope.node.name, recipient=to,
                         body=args["body"], message_id=message_id)
        await scope.commit([op], "collab.post")
    return ToolResult.success({"message_id": message_id, "to": to})


async def _read(scope: Scope, args: Mapping[str, Any]) -> ToolResult:
    unread_only = bool(args.get("unread_only", True))
    mark = bool(args.get("mark_read", True))
    found = collab.inbox(scope.store, scope.run_id, scope.node.name)
    # a recovered read: the messages this call marked read before it was cut off are its own
    shown = [m for m in found if not unread_only or m.read_at is None
             or m.read_by == scope.operation_id]
    if mark:
        ops = collab.mark_read(scope.store, scope.run_id, [m.message_id for m in shown],
                               recipient=scope.node.name, by=scope.operation_id)
        await scope.commit(ops, "collab.read")
    return ToolResult.success({"messages": [_message(m) for m in shown]})


async def _handoff(scope: Scope, args: Mapping[str, Any]) -> ToolResult:
    to = str(args["to"])
    bad = scope.unknown_node(to, allow_any=True)
    if bad is not None:
        return bad
    handoff_id = f"h-{scope.operation_id}"
    if scope.store.get(collab.HANDOFFS, {"run_id": scope.run_id, "handoff_id": handoff_id}) \
            is None:
        op = collab.handoff(scope.run_id, from_node=scope.node.name, to_node=to,
                            payload=args["payload"], handoff_id=handoff_id)
        await scope.commit([op], "collab.handoff")
    return ToolResult.success({"handoff_id": handoff_id, "to": to, "status": "pending"})


def _accepted(h: collab.Handoff) -> ToolResult:
    return ToolResult.success({"handoff_id": h.handoff_id, "from": h.from_node,
                               "payload": h.payload, "status": h.status})


def _pick(scope: Scope) -> collab.Handoff | None:
    """The handoff a ``collab.accept`` without ``handoff_id`` takes: the one this call
    accepted before it was cut off, else the oldest pending one to this node or to any, else
    the newest one to it another node took (the call then fails ``HANDOFF_TAKEN``)."""
    found = collab.handoffs(scope.store, scope.run_id)
    for h in found:
        if (h.accepted_by or {}).get("operation_id") == scope.operation_id:
            return h
    mine = [h for h in found if h.to_node in (ANY_NODE, scope.node.name)]
    return next((h for h in mine if h.status == "pending"), mine[-1] if mine else None)


async def _accept(scope: Scope, args: Mapping[str, Any]) -> ToolResult:
    if args.get("handoff_id") is None:
        picked = _pick(scope)
        if picked is None:
            return _fail("HANDOFF_NOT_FOUND", f"no handoff is pending for node "
                         f"{scope.node.name!r} in this workflow run", category="not_found")
        handoff_id = picked.handoff_id
    else:
        handoff_id = str(args["handoff_id"])
    row = scope.store.get(collab.HANDOFFS, {"run_id": scope.run_id, "handoff_id": handoff_id})
    if row is None:
        return _fail("HANDOFF_NOT_FOUND", f"this workflow run has no handoff {handoff_id!r}",
                     category="not_found")
    current = collab.Handoff.of_row(row)
    if (current.accepted_by or {}).get("operation_id") == scope.operation_id:
        return _accepted(current)  # this call accepted it before it was cut off
    if current.to_node not in (ANY_NODE, scope.node.name):
        return _fail("HANDOFF_NOT_YOURS", f"handoff {handoff_id!r} is for node "
                     f"{current.to_node!r}, not {scope.node.name!r}", category="permission")
    if current.status != "pending":
        return _taken(current)
    try:
        ops = collab.accept(scope.store, scope.run_id, handoff_id, by=scope.by())
        await scope.commit(ops, "collab.accept")
    except RevisionConflict:  # another acceptor committed first
        return _taken(collab.Handoff.of_row(scope.store.get(
            collab.HANDOFFS, {"run_id": scope.run_id, "handoff_id": handoff_id}) or row))
    return _accepted(collab.Handoff.of_row(ops[-1].row))


def _taken(h: collab.Handoff) -> ToolResult:
    who = (h.accepted_by or {}).get("node", "another node")
    return _fail("HANDOFF_TAKEN", f"handoff {h.handoff_id!r} is {h.status}: {who!r} accepted "
                 "it first", category="conflict")


def _task(t: collab.BoardTask) -> dict[str, Any]:
    return {"task_id": t.task_id, "status": t.status, "assignee": t.assignee,
            "revision": t.revision, "data": t.data}


def _mine(scope: Scope, task: collab.BoardTask | None) -> bool:
    return task is not None and (task.by or {}).get("operation_id") == scope.operation_id


def _board_task(scope: Scope, task_id: str, *, taken: str = ""
                ) -> tuple[collab.BoardTask | None, ToolResult | None]:
    """``task_id`` as stored, and the answer when the call need not write: this very call
    wrote it already (recovered after a crash: its own revision), or another node holds it
    (``TASK_TAKEN``; ``taken`` ends the message)."""
    current = collab.board_task(scope.store, scope.run_id, task_id)
    if current is not None and _mine(scope, current):
        return current, ToolResult.success(_task(current))
    if current is not None and current.assignee not in (None, scope.node.name):
        return current, _fail("TASK_TAKEN", f"task {task_id!r} is claimed by "
                              f"{current.assignee!r}{taken}", category="conflict")
    return current, None


async def _claim(scope: Scope, args: Mapping[str, Any]) -> ToolResult:
    task_id = str(args["task_id"])
    current, answer = _board_task(scope, task_id)
    if answer is not None:
        return answer
    return await _board_write(scope, task_id, status="claimed",
                              data=None if current is None else current.data,
                              expect=0 if current is None else current.revision,
                              label="collab.claim")


async def _update(scope: Scope, args: Mapping[str, Any]) -> ToolResult:
    task_id = str(args["task_id"])
    current, answer = _board_task(scope, task_id, taken="; only it may update it")
    if answer is not None:
        return answer
    revision = 0 if current is None else current.revision
    expect = args.get("expect_revision")
    if expect is not None and int(expect) != revision:
        return _fail("REVISION_CONFLICT", f"task {task_id!r} is at revision {revision}, not "
                     f"{expect}: read it again", category="conflict")
    status = str(args.get("status") or (current.status if current else "open"))
    data = args.get("data", current.data if current else None)
    return await _board_write(scope, task_id, status=status, data=data, expect=revision,
                              label="collab.update",
                              assignee=None if current is None else current.assignee)


async def _board_write(scope: Scope, task_id: str, *, status: str, data: Any, expect: int,
                       label: str, assignee: str | None = "") -> ToolResult:
    try:
        ops = collab.board_put(scope.store, scope.run_id, task_id, status=status,
                               assignee=scope.node.name if assignee == "" else assignee,
                               data=data, expect_revision=expect, by=scope.by())
        await scope.commit(ops, label)
    except RevisionConflict as exc:  # another writer took the revision first
        return _fail("REVISION_CONFLICT", f"task {task_id!r} changed meanwhile: {exc}",
                     category="conflict")
    except ValueError as exc:
        return _fail("INVALID_ARGUMENT", str(exc))
    return ToolResult.success(_task(collab.BoardTask.of_row(ops[-1].row)))


_Run = Callable[[Scope, Mapping[str, Any]], Awaitable[ToolResult]]
_HANDLERS: dict[str, _Run] = {
    "collab.post": _post, "collab.read": _read, "collab.handoff": _handoff,
    "collab.accept": _accept, "collab.claim": _claim, "collab.update": _update}


class _CollabHandler:
    """One collaboration tool; see the module docstring for recovery."""

    rerunnable = False
    recoverable = True  # its write is keyed by its operation: run again, it finds it

    def __init__(self, name: str) -> None:
        self.name = name
        self._run = _HANDLERS[name]

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        scope = in_workflow(self.name, context)
        if isinstance(scope, ToolResult):
            return scope
        try:
            return await self._run(scope, request.arguments)
        except ValueError as exc:  # a body, payload or data that is not JSON
            return _fail("INVALID_ARGUMENT", f"{self.name}: {exc}")


def collab_tool(name: str, release_id: str) -> AgentTool:
    """``(spec, handler)`` of collaboration tool ``name`` (one of ``COLLAB_TOOLS``)."""
    return (CapabilitySpec(
        resource_version_id=release_id, capability_key=name, kind="builtin",
        exposed_name=legal_exposed_name(name), description=DESCRIPTIONS[name],
        input_schema=SCHEMAS[name], handler_ref=f"workflow:{name}"), _CollabHandler(name))
