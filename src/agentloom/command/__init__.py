"""Commands: known actions with params, risk and a handler, run once with an honest receipt
(issue 21; 003 F07 F09 F10). A pure library: it imports only the core; what it needs from
elsewhere is a port (``ports``), implemented in ``agentloom.agent.commands`` (execution through
the recorded pipeline) and ``agentloom.agent.command_receipts`` (the store's tables).

::

    message ─► Admitter ─► Recognizing (intent) ─► start ─► CommandBus ─► CommandExecutor
                        │                                   │  (pipeline: hooks, Attempt)
                        ├► clarify (missing / invalid)      └► ReceiptLog: rejected | accepted
                        └► agent (no intent)                               | committed | unknown

Owns: ``CommandSpec`` / ``CommandRegistry`` (snapshots: copies in and out), the ``CommandBus``
(authorise, validate, confirm once, execute, receipt), ``Receipt`` and ``Admission``.
Does not own: recognition (``agentloom.intent``), the pipeline, storage, the CLI.
"""

from typing import Any

from agentloom.command.admission import Admission, Admitter, Decision, Recognizing
from agentloom.command.bus import CommandBus, ReceiptNotFound
from agentloom.command.ports import (
    AllowAll,
    Authoriser,
    CommandExecutor,
    CommandNotExecuted,
    Execution,
    ReceiptLog,
    Recorded,
)
from agentloom.command.receipts import RECEIPT_STATES, Receipt, ReceiptState
from agentloom.command.spec import (
    COMMAND_RUN_PREFIX,
    COMMAND_TOOL_PREFIX,
    CommandHandlerRef,
    CommandRegistry,
    CommandSpec,
    Risk,
    command_run_key,
    command_tool_key,
)

__all__ = [
    "COMMAND_RUN_PREFIX",
    "COMMAND_TOOL_PREFIX",
    "RECEIPT_STATES",
    "Admission",
    "Admitter",
    "AllowAll",
    "Authoriser",
    "CommandBus",
    "CommandExecutor",
    "CommandHandlerRef",
    "CommandNotExecuted",
    "CommandRegistry",
    "CommandSpec",
    "Decision",
    "Execution",
    "Receipt",
    "ReceiptLog",
    "ReceiptNotFound",
    "ReceiptState",
    "Recognizing",
    "Recorded",
    "Risk",
    "command_run_key",
    "command_tool_key",
]


def __getattr__(name: str) -> Any:
    if name == "HandlerRef":  # its name until issue #35 (a second class of that name was hooks')
        import warnings

        warnings.warn(f"{__name__}.HandlerRef is deprecated: it is {__name__}.CommandHandlerRef",
                      DeprecationWarning, stacklevel=2)
        return CommandHandlerRef
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
