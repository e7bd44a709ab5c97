"""The ``sessions`` and ``session_turns`` repository: a session (the scope it belongs to) and its
turn slots, as frozen records; their reads and the ops that write them.

::

    store.get("sessions", …)          ──► SessionRecord.from_row ──► get_session(store, id)
    store.query("sessions", owner)    ──► SessionRecord          ──► owner_sessions(store, owner)
    store.query("session_turns", …)   ──► TurnRecord.from_row    ──► session_turns / last_turn
    Insert("sessions", row)           ◄── new_session_op(…)       (before the session's first run)
    Insert("session_turns", row)      ◄── slot_op(…)              (a start takes its slot)
                                      ◄── turn_op(…)              (a run started before slots)
    Put("session_turns", row)         ◄── close_op(…)             (the run's end frees the slot)

A turn slot is keyed by ``(session_id, seq)``: its insert is the compare-and-set that makes a
session's runs take turns (of two starts that saw the same free slot one commits, the other
conflicts). A slot's ``data`` holds the run's ``task``, its ``output`` once it succeeded, its
``status`` (``running`` while the slot is held) and the ``worker`` that took it.

Owns: ``SessionRecord``, ``TurnRecord``, the reads and the op builders. Does not own: whose
session it is to read, who holds it, when a slot is taken or closed (``agent.sessions``,
``agent.endings``), nor committing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.refs import OwnerRef
from agentloom.store.ports import Insert, Put, Store

__all__ = ["SessionRecord", "TurnRecord", "close_op", "get_session", "last_turn",
           "new_session_op", "owner_sessions", "session_turns", "slot_op", "turn_op"]

SESSIONS = "sessions"
TURNS = "session_turns"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """One ``sessions`` row: the scope ``(owner_kind, owner_id, space_id)`` that created it
    (each None in a row stored without an identity)."""

    session_id: str
    owner_kind: str | None
    owner_id: str | None
    space_id: str | None
    created_at: float | None
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SessionRecord:
        return cls(session_id=row["session_id"], owner_kind=row.get("owner_kind"),
                   owner_id=row.get("owner_id"), space_id=row.get("space_id"),
                   created_at=row.get("created_at"), data=row.get("data") or {})

    @property
    def identified(self) -> bool:
        """Whether the row says whose session it is (kind, id and space all stored)."""
        return None not in (self.owner_kind, self.owner_id, self.space_id)

    def belongs_to(self, owner: OwnerRef) -> bool:
        """Whether the session is ``owner``'s (the same kind, id and space)."""
        return (self.owner_kind, self.owner_id, self.space_id) == (owner.kind, owner.id,
                                                                   owner.space_id)

    def to_row(self) -> dict[str, Any]:
        """The row again, as ``Store.get`` returns it."""
        return {"session_id": self.session_id, "owner_kind": self.owner_kind,
                "owner_id": self.owner_id, "space_id": self.space_id,
                "created_at": self.created_at, "data": dict(self.data)}


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecord:
    """One ``session_turns`` row: slot ``seq`` of the session, taken by ``run_id``."""

    session_id: str
    seq: int
    run_id: str
    created_at: float | None
    data: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TurnRecord:
        return cls(session_id=row["session_id"], seq=int(row["seq"]), run_id=str(row["run_id"]),
                   created_at=row.get("created_at"), data=row.get("data") or {})

    @property
    def status(self) -> str:
        """``running`` while the slot is held, then its run's end (``succeeded``, …) or
        ``not_started``. A turn stored before slots existed is a succeeded run's."""
        return str(self.data.get("status", "succeeded"))

    @property
    def worker(self) -> str | None:
        """The worker that took the slot (the holder whose start may have died)."""
        return self.data.get("worker")

    def to_row(self) -> dict[str, Any]:
        """The row again, as ``Store.get`` returns it."""
        return {"session_id": self.session_id, "seq": self.seq, "run_id": self.run_id,
                "created_at": self.created_at, "data": dict(self.data)}


# -- reads ------------------------------------------------------------------------------------


def get_session(store: Store, session_id: str) -> SessionRecord | None:
    """The session, or None when none of that id was created."""
    row = store.get(SESSIONS, {"session_id": session_id})
    return None if row is None else SessionRecord.from_row(row)


def owner_sessions(store: Store, owner: OwnerRef) -> list[SessionRecord]:
    """The sessions of ``owner`` (its kind and id, in every space), in the store's order."""
    return [SessionRecord.from_row(r) for r in store.query(
        SESSIONS, {"owner_kind": owner.kind, "owner_id": owner.id})]


def session_turns(store: Store, session_id: str) -> list[TurnRecord]:
    """Every turn slot of the session, by ``seq``."""
    return [TurnRecord.from_row(r)
            for r in store.query(TURNS, {"session_id": session_id}, order_by=("seq",))]


def last_turn(store: Store, session_id: str) -> TurnRecord | None:
    """The session's last turn slot (the highest ``seq``), or None before its first."""
    rows = store.query(TURNS, {"session_id": session_id}, order_by=("seq",), descending=True,
                       limit=1)
    return TurnRecord.from_row(rows[0]) if rows else None


# -- writes (ops for the caller to commit) ---------------------------------------------------


def new_session_op(session_id: str, owner: OwnerRef, *, created_at: float) -> Insert:
    """The ``Insert`` of a new session of ``owner`` (a concurrent creation conflicts)."""
    return Insert(SESSIONS, {"session_id": session_id, "owner_kind": owner.kind,
                             "owner_id": owner.id, "space_id": owner.space_id,
                             "created_at": created_at, "data": {}})


def slot_op(session_id: str, seq: int, *, run_id: str, task: str, worker: str,
            created_at: float) -> Insert:
    """The ``Insert`` taking slot ``seq`` for ``run_id`` (``running``): the compare-and-set of
    a session's occupancy — a second insert of the same slot is a ``RevisionConflict``."""
    return Insert(TURNS, {"session_id": session_id, "seq": seq, "run_id": run_id,
                          "created_at": created_at,
                          "data": {"task": task, "output": None, "status": "running",
                                   "worker": worker}})


def close_op(session_id: str, seq: int, *, run_id: str, task: str, status: str,
             output: str | None) -> Put:
    """The ``Put`` of the run's end on its slot (``status``; ``output`` of a succeeded run):
    the session is free."""
    return Put(TURNS, {"session_id": session_id, "seq": seq, "run_id": run_id,
                       "data": {"task": task, "output": output, "status": status}})


def turn_op(session_id: str, seq: int, *, run_id: str, task: str, output: str | None,
            created_at: float) -> Insert:
    """The ``Insert`` of a succeeded run's turn at ``seq``, for a run that took no slot."""
    return Insert(TURNS, {"session_id": session_id, "seq": seq, "run_id": run_id,
                          "created_at": created_at, "data": {"task": task, "output": output}})
