"""Agent sessions bound to their scope (F02), occupied by one active run at a time (000 §7.1).

A session's transcript (its turns: task and final answer per run) belongs to the scope
``(space, owner kind, owner id)`` that created it. A matching scope continues it; a
different scope never reads it (not even to say what is in it); a session whose records
carry no identity is never attributed to whoever asks next.

Occupancy: every run of a session takes the session's next turn slot (``session_turns``
row ``(session_id, seq)``) *before* its run and workspace exist, by an insert that the
store's primary key makes a compare-and-set across processes and workers (SQLite and
PostgreSQL alike): of two starts that saw the same free slot one commits, the other gets a
conflict and looks again. A slot whose run has not ended holds the session (``holder``);
its run closes the slot in the commit that ends it (``close_op``), so the next run sees the
whole turn. Only the turns of runs that succeeded are history.

Owns: whose a session is to read, who holds a session, taking a slot. Does not own: the
rows and their ops (``store.sessions``), the runs themselves (``agent.runtime``), their leases
(``agent.leases``), workspaces (``workspace.scope``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from agentloom.agent.leases import holder_gone, is_interrupted
from agentloom.errors import AgentLoomError, RevisionConflict
from agentloom.models.types import Message
from agentloom.refs import OwnerRef
from agentloom.store import Store, WriteSet
from agentloom.store import sessions as repo
from agentloom.store.ports import Op
from agentloom.store.runs import get_run

__all__ = ["SessionError", "SessionHolder", "SessionView", "close_op", "holder", "occupy",
           "open_session", "release_op", "turn_op"]

START_GRACE_S = 60.0
"""How long a slot whose run does not exist yet (its start is between taking the slot and
creating the run) holds the session when its starter cannot be seen to be gone."""
MAX_TAKE_TRIES = 20

HolderState = Literal["running", "interrupted", "starting"]


class SessionError(AgentLoomError):
    """A session used by an owner (actor + project) other than the one it belongs to
    (``SESSION_SCOPE_MISMATCH``), or whose rows carry no owner (``SESSION_IDENTITY_UNKNOWN``);
    raised before any of its turns is read."""

    default_code = "SESSION_SCOPE_MISMATCH"


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session as one run sees it: the turns it continues from (``seen``: its own slot, so
    every turn before it), their messages, and the row to insert when the session is new.
    Fixed at the run's start so a resume sees the same prefix."""

    session_id: str
    seen: int  # the run's slot: it continues from the turns before it
    history: tuple[Message, ...]
    create: Op | None  # the row to insert when the session is new


@dataclass(frozen=True, slots=True)
class SessionHolder:
    """The run that occupies a session: ``running`` (a live process drives it),
    ``interrupted`` (it has not ended but nothing drives it: ``agent.leases``) or
    ``starting`` (it took the slot and its run is being created)."""

    session_id: str
    run_id: str
    state: HolderState

    def refusal(self) -> str:
        """What a second run of the session is told (``SESSION_BUSY``)."""
        s, r = self.session_id, self.run_id
        if self.state == "interrupted":
            return (f"session {s!r} is held by run {r}, which was interrupted (nothing drives "
                    "it any more) and has not ended; a session has one active run at a time. "
                    f"Continue it (agentloom runs resume {r}) or stop it (agentloom runs stop "
                    f"{r}), then start again; --wait does not wait for an interrupted run")
        doing = "is starting" if self.state == "starting" else "is still running"
        return (f"session {s!r} is in use by run {r}, which {doing}; a session has one active "
                f"run at a time. Wait for it (agentloom run --session {s} --wait; Python: "
                f"wait=True), or stop it first (agentloom runs stop {r})")


def open_session(store: Store, session_id: str, owner: OwnerRef, *, seen: int | None = None
                 ) -> SessionView:
    """The session as ``owner`` may see it: the history before slot ``seen`` (a resume, or a
    run that took its slot), else before the next free slot.

    Raises:
        SessionError: the session belongs to another scope, or has no identity.
    """
    session = repo.get_session(store, session_id)
    if session is None:
        return SessionView(session_id, 0, (), repo.new_session_op(session_id, owner,
                                                                  created_at=time.time()))
    if not session.identified:
        raise SessionError(
            f"session {session_id!r} has records without an owner identity; they are not "
            f"attributed to {owner.kind}:{owner.id} (space {owner.space_id}); use another "
            "session id", code="SESSION_IDENTITY_UNKNOWN")
    if not session.belongs_to(owner):
        raise SessionError(
            f"session {session_id!r} belongs to another scope than {owner.kind}:{owner.id} "
            f"(space {owner.space_id}); it cannot be read or continued from here")
    turns = repo.session_turns(store, session_id)
    if seen is None:
        seen = turns[-1].seq + 1 if turns else 0
    history: list[Message] = []
    for t in turns:
        if t.seq < seen and t.status == "succeeded":
            history.append(Message(role="user", content=t.data["task"]))
            history.append(Message(role="assistant", content=t.data.get("output") or ""))
    return SessionView(session_id, seen, tuple(history), None)


def holder(store: Store, session_id: str, now: float | None = None) -> SessionHolder | None:
    """The run occupying the session, or ``None`` when it is free: the run of its last slot,
    while that run has not ended."""
    slot = repo.last_turn(store, session_id)
    if slot is None or slot.status != "running":
        return None
    now = time.time() if now is None else now
    run_id = slot.run_id
    run = get_run(store, run_id, lenient=True)
    if run is None:  # between taking the slot and creating the run, or its start died there
        # a running slot was inserted (``slot_op``): it always has its ``created_at``
        taken_at = slot.created_at or 0.0
        if holder_gone(slot.worker) or now - taken_at > START_GRACE_S:
            return None
        return SessionHolder(session_id, run_id, "starting")
    if not run.running:
        return None
    return SessionHolder(session_id, run_id,
                         "interrupted" if is_interrupted(run, store.now()) else "running")


async def occupy(store: Store, commit: Callable[[WriteSet], Awaitable[None]], session_id: str,
                 owner: OwnerRef, *, run_id: str, task: str, worker: str
                 ) -> SessionView | SessionHolder:
    """Take the session for ``run_id`` (creating the session when it is new): its view from
    the slot it took, or the ``SessionHolder`` that occupies it (nothing was written).

    Raises:
        SessionError: the session belongs to another scope, or has no identity.
    """
    for _ in range(MAX_TAKE_TRIES):
        view = open_session(store, session_id, owner)
        if view.create is not None:
            try:  # the session exists before its first run does
                await commit(WriteSet((view.create,)))
            except RevisionConflict:  # created meanwhile: open it again (scope checked)
                continue
        busy = holder(store, session_id)
        if busy is not None:
            return busy
        try:  # the compare-and-set: one start takes this slot, any other conflicts
            await commit(WriteSet((repo.slot_op(session_id, view.seen, run_id=run_id,
                                                task=task, worker=worker,
                                                created_at=time.time()),)))
        except RevisionConflict:
            continue  # another run took it first: look at who holds the session now
        return open_session(store, session_id, owner, seen=view.seen)
    raise RevisionConflict(f"session {session_id!r}: its next slot kept being taken")


def close_op(session_id: str, seq: int, *, run_id: str, task: str, status: str,
             output: str | None) -> Op:
    """The run's end on its slot (committed with the run's end): the session is free."""
    return repo.close_op(session_id, seq, run_id=run_id, task=task, status=status,
                         output=output)


def release_op(session_id: str, seq: int, *, run_id: str, task: str) -> Op:
    """A slot whose run could not be started gives the session back (``not_started``)."""
    return close_op(session_id, seq, run_id=run_id, task=task, status="not_started",
                    output=None)


def turn_op(session_id: str, seq: int, *, run_id: str, task: str, output: str | None) -> Op:
    """A succeeded run's turn, for a run started before turn slots (it took none)."""
    return repo.turn_op(session_id, seq, run_id=run_id, task=task, output=output,
                        created_at=time.time())
