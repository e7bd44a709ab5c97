"""Pending intents per conversation (003 A1): the port and its in-memory adapter.

A conversation — ``(owner, project, conversation)`` — has at most one *pending* intent: the last
one recognised in it, with its action, its slots so far and a *revision*. Every save gives the
conversation a new revision, higher than any it had (also after a clear), so a confirmation
bound to ``(action, revision)`` is stale as soon as a follow-up changed a slot, another intent
replaced the pending one, or it was cancelled.

Owns: ``ConversationKey``, ``PendingIntent``, the ``ConversationStore`` port and
``InMemoryConversationStore``. Does not own: a persistent store (an adapter in ``host/``), what
a confirmation token is (the command bus).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agentloom.catalog import FrozenDict, freeze_json
from agentloom.errors import RevisionConflict

from .slots import SlotProblem

__all__ = ["ConversationKey", "ConversationStore", "InMemoryConversationStore", "PendingIntent"]


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """Whose conversation: the owner (actor), the project, and the conversation id."""

    owner: str
    project: str
    conversation: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingIntent:
    """The intent a conversation is working on, at ``revision``."""

    intent: str
    action: str
    slots: Mapping[str, Any]
    missing: tuple[str, ...] = ()
    invalid: tuple[SlotProblem, ...] = ()
    revision: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", freeze_json(dict(self.slots), where="slots"))
        object.__setattr__(self, "missing", tuple(self.missing))
        object.__setattr__(self, "invalid", tuple(self.invalid))

    def binds(self, *, action: str, revision: int) -> bool:
        """Whether a confirmation bound to ``(action, revision)`` is for this pending intent."""
        return self.action == action and self.revision == revision


class ConversationStore(Protocol):
    """Where pending intents live. Implementations serialise the calls of one key."""

    async def get(self, key: ConversationKey) -> PendingIntent | None:
        """The pending intent of ``key``, if any."""
        ...

    async def save(self, key: ConversationKey, pending: PendingIntent, *,
                   expected_revision: int | None) -> PendingIntent:
        """Store ``pending`` (its ``revision`` ignored) under a new revision and return it.

        Raises:
            RevisionConflict: ``expected_revision`` (the pending revision the caller read; None:
                none was pending) is not the current one.
        """
        ...

    async def clear(self, key: ConversationKey, *, revision: int) -> bool:
        """Drop the pending intent if it is still at ``revision``; whether it was dropped."""
        ...


class InMemoryConversationStore:
    """``ConversationStore`` in a dict: one process, lost on exit."""

    def __init__(self) -> None:
        self._pending: dict[ConversationKey, PendingIntent] = {}
        self._revisions: dict[ConversationKey, int] = {}
        self._lock = threading.Lock()

    async def get(self, key: ConversationKey) -> PendingIntent | None:
        with self._lock:
            return self._pending.get(key)

    async def save(self, key: ConversationKey, pending: PendingIntent, *,
                   expected_revision: int | None) -> PendingIntent:
        with self._lock:
            current = self._pending.get(key)
            if (current.revision if current else None) != expected_revision:
                raise RevisionConflict(f"conversation {key.conversation!r} moved on to revision "
                                       f"{current.revision if current else 'none'}")
            revision = self._revisions.get(key, 0) + 1
            saved = PendingIntent(intent=pending.intent, action=pending.action,
                                  slots=FrozenDict(pending.slots), missing=pending.missing,
                                  invalid=pending.invalid, revision=revision)
            self._revisions[key] = revision
            self._pending[key] = saved
            return saved

    async def clear(self, key: ConversationKey, *, revision: int) -> bool:
        with self._lock:
            current = self._pending.get(key)
            if current is None or current.revision != revision:
                return False
            del self._pending[key]
            return True
