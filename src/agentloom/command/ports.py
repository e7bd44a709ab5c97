"""What the command bus needs from outside, as ports (DESIGN §2: ``command/`` imports only
the core; the adapters live in ``agent/``).

* ``CommandExecutor`` runs one command as one recorded pipeline operation (hooks apply) and
  says what happened (``Execution``); it also reads back what it recorded for a command
  operation (``recorded``), which is how an ``unknown`` receipt is reconciled;
* ``ReceiptLog`` keeps receipts and consumes confirmations exactly once;
* ``Authoriser`` says whether a principal may run a command.

Owns: these Protocols and their values. Does not own: any implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agentloom.command.receipts import Receipt
from agentloom.command.spec import CommandSpec
from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.refs import Principal

__all__ = ["AllowAll", "Authoriser", "CommandExecutor", "CommandNotExecuted", "Execution",
           "ReceiptLog", "Recorded"]


class CommandNotExecuted(AgentLoomError):
    """Raised by a command handler that did nothing (a precondition failed before any side
    effect): the one handler error that yields ``rejected``. Any other exception means the
    command may have taken effect: ``unknown`` (003 F10)."""

    default_code = "COMMAND_NOT_EXECUTED"
    default_category: ErrorCategory = "validation"


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution:
    """What one execution came to: ``succeeded`` (``result`` is the handler's JSON value),
    ``not_executed`` (certainly nothing ran: a pre-hook denied it, or the handler raised
    ``CommandNotExecuted``) or ``unknown`` (it may have run). ``pipeline_operation_id`` names
    the recorded operation, when one was made."""

    outcome: Literal["succeeded", "not_executed", "unknown"]
    result: Any = None
    reason: str | None = None
    error: Mapping[str, Any] | None = None
    pipeline_operation_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorded:
    """What an executor recorded of a command operation: for whom, which command with which
    params, and how far it got (``outcome`` ``None``: not finished)."""

    command: str
    principal: Principal
    params: Mapping[str, Any] = field(default_factory=dict)
    execution: Execution | None = None


class CommandExecutor(Protocol):
    """Runs commands through the recorded pipeline (adapter: ``agent.commands``)."""

    async def execute(self, spec: CommandSpec, params: Mapping[str, Any], *,
                      operation_id: str, principal: Principal) -> Execution:
        """Run ``spec`` with ``params`` once, as the pipeline operation of ``operation_id``.
        An exception means the outcome is unknown (the bus reports ``unknown``)."""
        ...

    def recorded(self, operation_id: str, principal: Principal) -> Recorded | None:
        """What was recorded of ``principal``'s command operation ``operation_id`` (None:
        nothing — or nothing of ``principal``'s)."""
        ...


class ReceiptLog(Protocol):
    """Where receipts are kept (adapter: ``agent.command_receipts``, the store's
    ``command_receipts`` and ``command_confirmations`` tables)."""

    async def save(self, receipt: Receipt) -> None:
        """Write ``receipt`` (insert or replace the one of its operation id)."""
        ...

    async def consume(self, operation_id: str) -> bool:
        """Consume the confirmation of ``operation_id``: True the first time, False ever
        after (atomically, also across processes)."""
        ...

    def get(self, operation_id: str) -> Receipt | None: ...


class Authoriser(Protocol):
    """Whether ``principal`` may run ``spec``: ``None`` allows, a string is why not."""

    def refuse(self, principal: Principal, spec: CommandSpec) -> str | None: ...


class AllowAll:
    """Every principal may run every command (the local default)."""

    def refuse(self, principal: Principal, spec: CommandSpec) -> str | None:
        return None
