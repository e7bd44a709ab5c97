"""Agent sessions bound to their scope (F02).

A session's transcript (its turns: task and final answer per run) belongs to the scope
``(space, owner kind, owner id)`` that created it. A matching scope continues it; a
different scope never reads it (not even to say what is in it); a session whose records
carry no identity is never attributed to whoever asks next.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from agentloom.errors import AgentLoomError
from agentloom.models.types import Message
from agentloom.refs import OwnerRef
from agentloom.store import Insert, Store
from agentloom.store.ports import Op

__all__ = ["SessionError", "SessionView", "open_session", "turn_op"]


class SessionError(AgentLoomError):
    """A session used by an owner (actor + project) other than the one it belongs to
    (``SESSION_SCOPE_MISMATCH``), or whose rows carry no owner (``SESSION_IDENTITY_UNKNOWN``);
    raised before any of its turns is read."""

    default_code = "SESSION_SCOPE_MISMATCH"


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session as one run sees it: the turns it continues from (``seen``), their messages, and
    the row to insert when the session is new. Fixed at the run's start so a resume sees the
    same prefix."""

    session_id: str
    seen: int  # turns this run continues from
    history: tuple[Message, ...]
    create: Op | None  # the row to insert when the session is new


def open_session(store: Store, session_id: str, owner: OwnerRef, *, seen: int | None = None
                 ) -> SessionView:
    """The session as ``owner`` may see it (``seen`` fixes the prefix on resume).

    Raises:
        SessionError: the session belongs to another scope, or has no identity.
    """
    row = store.get("sessions", {"session_id": session_id})
    if row is None:
        return SessionView(session_id, 0, (), Insert("sessions", {
            "session_id": session_id, "owner_kind": owner.kind, "owner_id": owner.id,
            "space_id": owner.space_id, "created_at": time.time(), "data": {}}))
    if row["owner_kind"] is None or row["owner_id"] is None or row["space_id"] is None:
        raise SessionError(
            f"session {session_id!r} has records without an owner identity; they are not "
            f"attributed to {owner.kind}:{owner.id} (space {owner.space_id}); use another "
            "session id", code="SESSION_IDENTITY_UNKNOWN")
    if (row["owner_kind"], row["owner_id"], row["space_id"]) != (owner.kind, owner.id,
                                                                  owner.space_id):
        raise SessionError(
            f"session {session_id!r} belongs to another scope than {owner.kind}:{owner.id} "
            f"(space {owner.space_id}); it cannot be read or continued from here")
    turns = store.query("session_turns", {"session_id": session_id}, order_by=("seq",))
    if seen is not None:
        turns = [t for t in turns if t["seq"] < seen]
    history: list[Message] = []
    for t in turns:
        history.append(Message(role="user", content=t["data"]["task"]))
        history.append(Message(role="assistant", content=t["data"].get("output") or ""))
    return SessionView(session_id, len(turns), tuple(history), None)


def turn_op(session_id: str, seq: int, *, run_id: str, task: str, output: str | None) -> Op:
    return Insert("session_turns", {"session_id": session_id, "seq": seq, "run_id": run_id,
                                    "created_at": time.time(),
                                    "data": {"task": task, "output": output}})
