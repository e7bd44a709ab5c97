"""Receipts: what became of one submitted command, in exactly four states (003 F10).

* ``rejected`` — nothing ran: unknown command, not authorised, invalid params, a refused or
  declined confirmation, a pre-hook's deny, or a handler that said so explicitly
  (``CommandNotExecuted``);
* ``accepted`` — queued: it waits for its confirmation (``confirmation`` carries the one-time
  token, only in the receipt handed to the submitter — the stored one keeps its digest);
* ``committed`` — it ran and ``result`` is what the handler returned;
* ``unknown`` — it may have run: a handler error after it started, a lost Attempt, or a
  receipt that could not be written after success. It **keeps its operation id**, is
  reconciled (``CommandBus.receipt``), never replayed.

Owns: the ``Receipt`` value and its JSON form. Does not own: where receipts are kept (a
``ReceiptLog``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentloom.catalog import freeze_json, thaw_json
from agentloom.refs import Principal

__all__ = ["RECEIPT_STATES", "Receipt", "ReceiptState"]

_COLUMNS = ("operation_id", "actor", "project", "command", "state", "created_at", "updated_at")

ReceiptState = Literal["rejected", "accepted", "committed", "unknown"]
RECEIPT_STATES: tuple[str, ...] = ("rejected", "accepted", "committed", "unknown")


@dataclass(frozen=True, slots=True, kw_only=True)
class Receipt:
    """One command's receipt. ``operation_id`` is the command operation's id (always set,
    also for ``unknown``); ``pipeline_operation_id`` names the recorded pipeline operation
    that ran it (``runs``' operations, with its hooks and Attempt), when it got that far.
    ``error`` is ``{"code", "message"}`` when something went wrong; ``reason`` a short
    human account. ``params`` are what was (or would be) run, read-only."""

    state: ReceiptState
    operation_id: str
    command: str
    principal: Principal
    params: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    reason: str | None = None
    error: Mapping[str, Any] | None = None
    pipeline_operation_id: str | None = None
    confirmation: str | None = None
    # an ``accepted`` receipt waiting for its confirmation: the token's digest, when it
    # expires, and what else the token is bound to (a conversation's action and revision)
    token_digest: str | None = None
    expires_at: float | None = None
    binding: Mapping[str, Any] | None = None
    created_at: float = 0.0
    updated_at: float = 0.0

    def __post_init__(self) -> None:
        if self.state not in RECEIPT_STATES:
            raise ValueError(f"receipt state {self.state!r} is not one of {RECEIPT_STATES}")
        if not self.operation_id:
            raise ValueError("a receipt always keeps its operation id")
        object.__setattr__(self, "params", freeze_json(self.params, where="receipt params"))
        object.__setattr__(self, "result", freeze_json(self.result, where="receipt result"))
        if self.error is not None:
            object.__setattr__(self, "error", freeze_json(self.error, where="receipt error"))
        if self.binding is not None:
            object.__setattr__(self, "binding", freeze_json(self.binding, where="receipt binding"))

    def to_dict(self) -> dict[str, Any]:
        """The receipt as the CLI prints it (``--json``)."""
        out: dict[str, Any] = {
            "state": self.state, "operation_id": self.operation_id, "result": thaw_json(self.result),
            "command": self.command, "reason": self.reason,
            "error": thaw_json(self.error) if self.error is not None else None,
            "pipeline_operation_id": self.pipeline_operation_id,
            "actor": self.principal.actor, "project": self.principal.project,
            "params": thaw_json(self.params),
            "created_at": self.created_at, "updated_at": self.updated_at,
        }
        if self.confirmation is not None:
            out["confirmation"] = self.confirmation
        return out

    def record(self) -> dict[str, Any]:
        """What the store keeps besides its columns (``operation_id``, ``actor``,
        ``project``, ``command``, ``state``, ``created_at``, ``updated_at``) — never the
        confirmation token itself. Frozen values are JSON as they are (no copy)."""
        return {"params": self.params, "result": self.result, "reason": self.reason,
                "error": self.error, "pipeline_operation_id": self.pipeline_operation_id,
                "token_digest": self.token_digest, "expires_at": self.expires_at,
                "binding": self.binding}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Receipt:
        """The receipt of a stored row (its columns plus ``record()`` in ``data``)."""
        return cls.from_dict({**row["data"], **{k: row[k] for k in _COLUMNS}})

    def stored(self) -> Receipt:
        """This receipt without its confirmation token (what is written to the store)."""
        return replace(self, confirmation=None) if self.confirmation is not None else self

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Receipt:
        return cls(state=data["state"], operation_id=data["operation_id"],
                   command=data["command"],
                   principal=Principal(actor=data["actor"], project=data["project"]),
                   params=data.get("params") or {}, result=data.get("result"),
                   reason=data.get("reason"), error=data.get("error"),
                   pipeline_operation_id=data.get("pipeline_operation_id"),
                   token_digest=data.get("token_digest"), expires_at=data.get("expires_at"),
                   binding=data.get("binding"),
                   created_at=float(data.get("created_at") or 0.0),
                   updated_at=float(data.get("updated_at") or 0.0))
