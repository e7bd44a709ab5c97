"""The steps a scripted turn is made of (``Chunk``, ``Event``, ``Done``, ``Comment``, ``Raw``,
``Headers``, ``Stall``, ``Disconnect``, ``Status``, ``Reply``) and ``RecordedRequest``.

Owns: these values. Does not own: building common turns from them (``_builders``) or playing
them over HTTP (``_handler``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "Chunk",
    "Comment",
    "Disconnect",
    "Done",
    "Event",
    "Headers",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Stall",
    "Status",
    "Step",
    "Turn",
]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``data:`` frame: a Chat chunk mapping (missing ``id`` / ``object`` / ``created`` /
    ``model`` filled in) or a payload string sent verbatim (e.g. malformed JSON)."""

    data: Mapping[str, Any] | str


@dataclass(frozen=True, slots=True)
class Event:
    """One typed Responses event (``event: <type>`` + ``data:``; ``sequence_number`` filled)."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Done:
    """``data: [DONE]``."""


@dataclass(frozen=True, slots=True)
class Comment:
    """An SSE comment line (a keep-alive heartbeat the SDK never surfaces)."""

    text: str = "keep-alive"


@dataclass(frozen=True, slots=True)
class Raw:
    """A script step of the fake OpenAI server: send these bytes as they are (to test a
    malformed or torn stream)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Headers:
    """Send the ``200`` streaming headers now."""

    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Stall:
    """Pause ``seconds`` (woken early only when the server closes)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close the connection abruptly: no terminating chunk, no ``[DONE]``."""


@dataclass(frozen=True, slots=True)
class Status:
    """An HTTP error reply: ``code``, extra ``headers`` (e.g. ``Retry-After``), JSON ``body``
    (default: an OpenAI-style ``{"error": {...}}``) or a raw string body."""

    code: int
    body: Mapping[str, Any] | str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """A non-streaming ``200`` JSON reply, verbatim."""

    body: Mapping[str, Any]


Step: TypeAlias = Chunk | Event | Done | Comment | Raw | Headers | Stall | Disconnect | Status | Reply
Turn: TypeAlias = Sequence["Step | Mapping[str, Any]"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received: headers lower-cased, ``json`` the parsed body (or ``None``)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any
    turn: int | None
