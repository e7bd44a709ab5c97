"""The collaboration state of one workflow run (spec 003 F11): mailbox, handoffs, task board
and blackboard, as rows of the store (schema v12) in every backend.

Writes are built as store ``Op``s and committed by the caller — through the commit
coordinator, fenced by the run's lease — or through ``Collaboration``, which does both and
turns a commit that did not happen into a ``StoreError`` (the persistence failure: raised,
never swallowed, so nothing reports a step done whose state was not saved).

Keys are plain strings and stay what they are: a blackboard key that looks like JSON
(``'{"a":1}'``) is that text, never decoded, and no value is encoded to make a key; a key that
is not a ``str`` is refused. Values (message bodies, payloads, task data, blackboard values)
are JSON: a map key inside one must be a string too, so what is read back equals what was
written. Two equal messages are two rows: a message is keyed by its own id, not its content.

A board task, a blackboard entry and a handoff's status are written by compare-and-set: the
write also inserts the item's next ``collab_revisions`` row, so of two writers that read the
same revision one commits and the other gets ``RevisionConflict`` (re-read, try again).

Owns: the rows of ``mailbox``, ``handoffs``, ``task_board``, ``blackboard`` and
``collab_revisions``, and their typed read-back. Does not own: ``workflow_nodes`` (the
workflow driver), the commit itself (``CommitCoordinator``), the run's lease.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from agentloom.errors import RevisionConflict, StoreError
from agentloom.ids import new_id
from agentloom.squad._collab_values import json_value, non_empty, stamp
from agentloom.store.ports import Fence, Insert, Op, Put, Store, WriteSet

__all__ = ["BLACKBOARD", "HANDOFFS", "MAILBOX", "REVISIONS", "TASK_BOARD", "BoardTask",
           "Collaboration", "Commit", "Handoff", "HandoffStatus", "Message", "accept",
           "blackboard", "blackboard_ops", "board", "board_put", "board_task", "complete",
           "handoff", "handoffs", "inbox", "json_value", "mark_read", "post"]

MAILBOX = "mailbox"
HANDOFFS = "handoffs"
TASK_BOARD = "task_board"
BLACKBOARD = "blackboard"
REVISIONS = "collab_revisions"

HandoffStatus = Literal["pending", "accepted", "completed"]
# a handoff's revision is its step: 1 handed off, 2 accepted, 3 completed
_STEP: Mapping[HandoffStatus, int] = {"pending": 1, "accepted": 2, "completed": 3}

Commit = Callable[[WriteSet], Awaitable[None]]
"""What commits a write set (``CommitCoordinator.commit``): returns once it is committed, or
raises ``FencedOut`` / ``RevisionConflict`` / ``StoreError``."""


def _revision_op(run_id: str, kind: str, item: str, revision: int, at: float) -> Insert:
    return Insert(REVISIONS, {"run_id": run_id, "kind": kind, "item": item,
                              "revision": revision, "created_at": at})


# -- mailbox ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """A message of a run's mailbox, as stored."""

    run_id: str
    message_id: str
    sender: str
    recipient: str
    body: Any
    created_at: float
    read_at: float | None = None
    read_by: str | None = None
    """The operation that marked it read (``mark_read(by=…)``), if one did."""

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Message:
        data = row["data"] or {}
        return cls(run_id=row["run_id"], message_id=row["message_id"], sender=row["sender"],
                   recipient=row["recipient"], body=data.get("body"),
                   created_at=float(row["created_at"]),
                   read_at=None if row.get("read_at") is None else float(row["read_at"]),
                   read_by=data.get("read_by"))


def post(run_id: str, *, sender: str, recipient: str, body: Any,
         message_id: str | None = None) -> Insert:
    """The write of a new message from ``sender`` to ``recipient`` (node names); a body
    equal to an earlier one is a message of its own."""
    return Insert(MAILBOX, {
        "run_id": non_empty(run_id, "run_id"), "message_id": message_id or new_id(),
        "recipient": non_empty(recipient, "recipient"), "sender": non_empty(sender, "sender"),
        "created_at": stamp(), "read_at": None,
        "data": {"body": json_value(body, where="message body")}})


def inbox(store: Store, run_id: str, recipient: str, *,
          unread_only: bool = False) -> list[Message]:
    """``recipient``'s messages in the order they were posted."""
    rows = store.query(MAILBOX, {"run_id": run_id, "recipient": recipient})
    found = sorted((Message.of_row(r) for r in rows), key=lambda m: (m.created_at, m.message_id))
    return [m for m in found if m.read_at is None] if unread_only else found


def mark_read(store: Store, run_id: str, message_ids: Iterable[str], *,
              recipient: str | None = None, by: str | None = None) -> list[Op]:
    """The writes marking ``message_ids`` read now; one read before keeps its first time.
    ``by``: the operation reading them, kept with each (a recovered read finds its own).

    Raises:
        ValueError: a message the run's mailbox does not hold, or (``recipient`` given) one
            sent to someone else.
    """
    ops: list[Op] = []
    at = stamp()
    for message_id in dict.fromkeys(message_ids):
        row = store.get(MAILBOX, {"run_id": run_id, "message_id": message_id})
        if row is None:
            raise ValueError(f"run {run_id} has no message {message_id!r}")
        if recipient is not None and row["recipient"] != recipient:
            raise ValueError(f"message {message_id!r} of run {run_id} is for "
                             f"{row['recipient']!r}, not {recipient!r}")
        if row["read_at"] is None:
            marked: dict[str, Any] = {"run_id": run_id, "message_id": message_id,
                                      "read_at": at}
            if by is not None:
                marked["data"] = {**(row["data"] or {}), "read_by": by}
            ops.append(Put(MAILBOX, marked))
    return ops


# -- handoffs ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class Handoff:
    """Work handed from one node to another: ``pending`` → ``accepted`` → ``completed``."""

    run_id: str
    handoff_id: str
    from_node: str
    to_node: str
    status: HandoffStatus
    payload: Any
    result: Any
    created_at: float
    updated_at: float
    accepted_by: Mapping[str, Any] | None = None
    """Who accepted it (``accept(by=…)``: e.g. the node and its call's operation), if told."""

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Handoff:
        data = row["data"] or {}
        return cls(run_id=row["run_id"], handoff_id=row["handoff_id"],
                   from_node=row["from_node"], to_node=row["to_node"], status=row["status"],
                   payload=data.get("payload"), result=data.get("result"),
                   created_at=float(row["created_at"]), updated_at=float(row["updated_at"]),
                   accepted_by=data.get("accepted_by"))

    def row(self) -> dict[str, Any]:
        data: dict[str, Any] = {"payload": self.payload, "result": self.result}
        if self.accepted_by is not None:
            data["accepted_by"] = dict(self.accepted_by)
        return {"run_id": self.run_id, "handoff_id": self.handoff_id,
                "from_node": self.from_node, "to_node": self.to_node, "status": self.status,
                "created_at": self.created_at, "updated_at": self.updated_at, "data": data}


def handoff(run_id: str, *, from_node: str, to_node: str, payload: Any,
            handoff_id: str | None = None) -> Insert:
    """The write of a new ``pending`` handoff from ``from_node`` to ``to_node``."""
    at = stamp()
    return Insert(HANDOFFS, Handoff(
        run_id=non_empty(run_id, "run_id"), handoff_id=handoff_id or new_id(),
        from_node=non_empty(from_node, "from_node"), to_node=non_empty(to_node, "to_node"),
        status="pending", payload=json_value(payload, where="handoff payload"), result=None,
        created_at=at, updated_at=at).row())


def _transition(store: Store, run_id: str, handoff_id: str, before: HandoffStatus,
                after: HandoffStatus, result: Any = None,
                by: Mapping[str, Any] | None = None) -> list[Op]:
    row = store.get(HANDOFFS, {"run_id": run_id, "handoff_id": handoff_id})
    if row is None:
        raise ValueError(f"run {run_id} has no handoff {handoff_id!r}")
    current = Handoff.of_row(row)
    if current.status != before:
        raise RevisionConflict(f"handoff {handoff_id} of run {run_id} is {current.status}, "
                               f"not {before}: it cannot become {after}")
    at = stamp()
    moved = replace(current, status=after, updated_at=at,
                    result=current.result if result is None else result,
                    accepted_by=current.accepted_by if by is None
                    else json_value(by, where="handoff acceptor"))
    return [_revision_op(run_id, "handoff", handoff_id, _STEP[after], at),
            Put(HANDOFFS, moved.row())]


def accept(store: Store, run_id: str, handoff_id: str, *,
           by: Mapping[str, Any] | None = None) -> list[Op]:
    """The writes accepting a ``pending`` handoff (of two acceptors, one commits); ``by``
    (JSON) is kept as its ``accepted_by``.

    Raises:
        ValueError: no such handoff.
        RevisionConflict: it is not ``pending`` (any more).
    """
    return _transition(store, run_id, handoff_id, "pending", "accepted", by=by)


def complete(store: Store, run_id: str, handoff_id: str, *, result: Any = None) -> list[Op]:
    """The writes completing an ``accepted`` handoff with ``result`` (JSON).

    Raises:
        ValueError: no such handoff, or a result that is not JSON.
        RevisionConflict: it is not ``accepted``.
    """
    value = json_value(result, where="handoff result")
    return _transition(store, run_id, handoff_id, "accepted", "completed", value)


def handoffs(store: Store, run_id: str) -> list[Handoff]:
    """The run's handoffs in the order they were made."""
    found = [Handoff.of_row(r) for r in store.query(HANDOFFS, {"run_id": run_id})]
    return sorted(found, key=lambda h: (h.created_at, h.handoff_id))


# -- task board -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class BoardTask:
    """A task of a run's board at ``revision`` (1 for its first write)."""

    run_id: str
    task_id: str
    status: str
    assignee: str | None
    revision: int
    updated_at: float
    data: Any
    by: Mapping[str, Any] | None = None
    """Who wrote this revision (``board_put(by=…)``), if told."""

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> BoardTask:
        stored = row["data"] or {}
        return cls(run_id=row["run_id"], task_id=row["task_id"], status=row["status"],
                   assignee=row["assignee"], revision=int(row["revision"]),
                   updated_at=float(row["updated_at"]), data=stored.get("data"),
                   by=stored.get("by"))


def board_task(store: Store, run_id: str, task_id: str) -> BoardTask | None:
    row = store.get(TASK_BOARD, {"run_id": run_id, "task_id": task_id})
    return None if row is None else BoardTask.of_row(row)


def board_put(store: Store, run_id: str, task_id: str, *, status: str,
              assignee: str | None = None, data: Any = None,
              expect_revision: int | None = None,
              by: Mapping[str, Any] | None = None) -> list[Op]:
    """The writes of ``task_id`` at its next revision (``by``, JSON: who writes it, kept
    with this revision). ``expect_revision`` is the revision the
    writer read (0: the task must not exist yet); ``None`` writes over whatever is there — still
    one revision per write, so a concurrent writer is refused, never lost.

    Raises:
        RevisionConflict: the task is not at ``expect_revision`` (a commit of these writes
            raises it too when another writer took the revision first).
        ValueError: an empty ``task_id`` or ``status``, data that is not JSON.
    """
    if expect_revision is not None and expect_revision < 0:
        raise ValueError(f"expect_revision must be 0 or more, got {expect_revision}")
    non_empty(task_id, "task_id")
    value = json_value(data, where=f"data of task {task_id!r}")
    current = board_task(store, run_id, task_id)
    revision = 0 if current is None else current.revision
    if expect_revision is not None and expect_revision != revision:
        raise RevisionConflict(f"task {task_id} of run {run_id} is at revision {revision}, "
                               f"the write expected {expect_revision}: re-read and try again")
    stored: dict[str, Any] = {"data": value}
    if by is not None:
        stored["by"] = json_value(by, where=f"writer of task {task_id!r}")
    at = stamp()
    return [_revision_op(run_id, "task", task_id, revision + 1, at),
            Put(TASK_BOARD, {"run_id": run_id, "task_id": task_id,
                             "status": non_empty(status, "status"), "assignee": assignee,
                             "revision": revision + 1, "updated_at": at,
                             "data": stored})]


def board(store: Store, run_id: str) -> list[BoardTask]:
    """The run's tasks, by task id."""
    found = [BoardTask.of_row(r) for r in store.query(TASK_BOARD, {"run_id": run_id})]
    return sorted(found, key=lambda t: t.task_id)


# -- blackboard -------------------------------------------------------------------------------

def blackboard_ops(store: Store, run_id: str, patches: Mapping[str, Any]) -> list[Op]:
    """The writes setting each key of ``patches`` to its value, each at its next revision.

    Raises:
        ValueError: a key that is not a non-empty ``str`` (a map, list, tuple or number is
            never turned into a key), or a value that is not JSON.
    """
    if not isinstance(patches, Mapping):
        raise ValueError(f"blackboard patches must be a map of string keys, got "
                         f"{type(patches).__name__}")
    checked: dict[str, Any] = {}
    for key, value in patches.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"blackboard key {key!r} ({type(key).__name__}) is refused: a key "
                             "is a non-empty string, kept as written (no JSON text as a key)")
        checked[key] = json_value(value, where=f"blackboard[{key!r}]")
    at = stamp()
    ops: list[Op] = []
    for key, value in checked.items():
        row = store.get(BLACKBOARD, {"run_id": run_id, "entry_key": key})
        revision = 1 + (0 if row is None else int(row["revision"]))
        ops += [_revision_op(run_id, "entry", key, revision, at),
                Put(BLACKBOARD, {"run_id": run_id, "entry_key": key, "revision": revision,
                                 "updated_at": at, "data": {"value": value}})]
    return ops


def blackboard(store: Store, run_id: str) -> dict[str, Any]:
    """The run's blackboard: each entry's key (as written) and value, keys sorted."""
    rows = sorted(store.query(BLACKBOARD, {"run_id": run_id}), key=lambda r: r["entry_key"])
    return {r["entry_key"]: (r["data"] or {}).get("value") for r in rows}


# -- the facade -------------------------------------------------------------------------------

class Collaboration:
    """The collaboration state of one run, read from ``store`` and written through ``commit``
    (``CommitCoordinator.commit``), each write fenced by ``fence`` when given (the run's lease:
    a writer that lost it commits nothing).

    Every write returns only once committed. A commit that did not happen raises
    ``StoreError`` — the store's own, or one wrapping whatever else the commit raised —
    and nothing of that write is in the store; ``FencedOut`` and ``RevisionConflict`` are
    raised as they are.
    """

    def __init__(self, store: Store, commit: Commit, fence: Fence | None = None, *,
                 run_id: str | None = None, retries: int = 3) -> None:
        if run_id is None and fence is None:
            raise ValueError("Collaboration needs the run: a fence or a run_id")
        if run_id is not None and fence is not None and run_id != fence.run_id:
            raise ValueError(f"run_id {run_id!r} is not the fenced run {fence.run_id!r}")
        self.store = store
        self.fence = fence
        self.run_id: str = fence.run_id if fence is not None else str(run_id)
        self._commit_ws = commit
        self._retries = retries

    async def _commit(self, ops: Sequence[Op], label: str) -> None:
        if not ops:
            return
        ws = WriteSet(tuple(ops), self.fence, label=label)
        try:
            await self._commit_ws(ws)
        except StoreError:  # FencedOut, RevisionConflict and the store's own failures
            raise
        except Exception as exc:
            raise StoreError(f"the {label} of run {self.run_id} was not persisted: "
                             f"{type(exc).__name__}: {exc}") from exc

    async def post(self, *, sender: str, recipient: str, body: Any) -> Message:
        op = post(self.run_id, sender=sender, recipient=recipient, body=body)
        await self._commit([op], "mailbox post")
        return Message.of_row(op.row)

    def inbox(self, recipient: str, *, unread_only: bool = False) -> list[Message]:
        return inbox(self.store, self.run_id, recipient, unread_only=unread_only)

    async def mark_read(self, message_ids: Iterable[str], *,
                        recipient: str | None = None) -> int:
        """Mark messages read; returns how many were unread."""
        ops = mark_read(self.store, self.run_id, message_ids, recipient=recipient)
        await self._commit(ops, "mailbox read mark")
        return len(ops)

    async def handoff(self, *, from_node: str, to_node: str, payload: Any) -> Handoff:
        op = handoff(self.run_id, from_node=from_node, to_node=to_node, payload=payload)
        await self._commit([op], "handoff")
        return Handoff.of_row(op.row)

    async def accept(self, handoff_id: str) -> Handoff:
        ops = accept(self.store, self.run_id, handoff_id)
        await self._commit(ops, "handoff acceptance")
        return Handoff.of_row(ops[-1].row)

    async def complete(self, handoff_id: str, *, result: Any = None) -> Handoff:
        ops = complete(self.store, self.run_id, handoff_id, result=result)
        await self._commit(ops, "handoff completion")
        return Handoff.of_row(ops[-1].row)

    def handoffs(self) -> list[Handoff]:
        return handoffs(self.store, self.run_id)

    async def board_put(self, task_id: str, *, status: str, assignee: str | None = None,
                        data: Any = None, expect_revision: int | None = None) -> BoardTask:
        ops = board_put(self.store, self.run_id, task_id, status=status, assignee=assignee,
                        data=data, expect_revision=expect_revision)
        await self._commit(ops, "task board write")
        return BoardTask.of_row(ops[-1].row)

    def board(self) -> list[BoardTask]:
        return board(self.store, self.run_id)

    async def patch_blackboard(self, patches: Mapping[str, Any]) -> dict[str, int]:
        """Set blackboard entries (the last writer wins: a write that lost a revision to a
        concurrent one is re-read and made again, up to ``retries`` times); returns each
        key's new revision."""
        for attempt in range(self._retries + 1):
            ops = blackboard_ops(self.store, self.run_id, patches)
            try:
                await self._commit(ops, "blackboard patch")
            except RevisionConflict:
                if attempt == self._retries:
                    raise
                continue
            return {op.row["entry_key"]: op.row["revision"] for op in ops
                    if op.table == BLACKBOARD}
        raise AssertionError("unreachable")  # pragma: no cover

    def blackboard(self) -> dict[str, Any]:
        return blackboard(self.store, self.run_id)
