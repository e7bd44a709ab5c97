"""The A2A client's error class and its stable codes.

::

    AgentLoomError                 (agentloom.errors)
    └── A2aError                   a remote agent whose card cannot be fetched or used

A failed *call* is never raised: the handler returns a ``ToolResult`` whose ``OperationError``
carries one of the call codes below (the state of the remote task, or what kept the call from
reaching one — see ``states`` for the state table).
"""

from __future__ import annotations

from typing import Final

from agentloom.errors import AgentLoomError, ErrorCategory, ExternalOutcome, OperationError

# -- the agent card (raised as A2aError when the runtime is built) -----------------------------
A2A_CARD_UNAVAILABLE: Final = "A2A_CARD_UNAVAILABLE"  # not fetched, not JSON, not a card
A2A_VERSION_UNSUPPORTED: Final = "A2A_VERSION_UNSUPPORTED"  # no A2A 1.0 interface (a 0.3 card)
A2A_SECRET_MISSING: Final = "A2A_SECRET_MISSING"  # a ${VAR} of headers is unset
# -- calls (inside a ToolResult) -------------------------------------------------------------
A2A_TASK_FAILED: Final = "A2A_TASK_FAILED"  # TASK_STATE_FAILED
A2A_TASK_REJECTED: Final = "A2A_TASK_REJECTED"  # TASK_STATE_REJECTED
A2A_TASK_CANCELED: Final = "A2A_TASK_CANCELED"  # TASK_STATE_CANCELED
A2A_INPUT_REQUIRED: Final = "A2A_INPUT_REQUIRED"  # TASK_STATE_INPUT_REQUIRED: the question
A2A_AUTH_REQUIRED: Final = "A2A_AUTH_REQUIRED"  # TASK_STATE_AUTH_REQUIRED
A2A_STATE_UNKNOWN: Final = "A2A_STATE_UNKNOWN"  # a state A2A 1.0 does not define, or none
A2A_CANCEL_UNANSWERED: Final = "A2A_CANCEL_UNANSWERED"  # stopped; CancelTask got no answer
A2A_PROTOCOL_ERROR: Final = "A2A_PROTOCOL_ERROR"  # the server answered with an A2A error
A2A_CONNECT_FAILED: Final = "A2A_CONNECT_FAILED"  # nothing was sent: no connection
A2A_CONNECTION_LOST: Final = "A2A_CONNECTION_LOST"  # sent, then the connection failed

_CATEGORIES: Final[dict[str, ErrorCategory]] = {
    A2A_CARD_UNAVAILABLE: "transport",
    A2A_VERSION_UNSUPPORTED: "protocol",
    A2A_SECRET_MISSING: "validation",
    A2A_TASK_FAILED: "business",
    A2A_TASK_REJECTED: "business",
    A2A_TASK_CANCELED: "cancelled",
    A2A_INPUT_REQUIRED: "business",
    A2A_AUTH_REQUIRED: "permission",
    A2A_STATE_UNKNOWN: "unknown",
    A2A_CANCEL_UNANSWERED: "unknown",
    A2A_PROTOCOL_ERROR: "protocol",
    A2A_CONNECT_FAILED: "transport",
    A2A_CONNECTION_LOST: "unknown",
}


class A2aError(AgentLoomError):
    """A remote agent whose card could not be fetched, is not an A2A 1.0 card, or whose
    headers name an unset variable; nothing was sent. ``code`` is one of the card codes."""

    default_code = A2A_CARD_UNAVAILABLE
    default_category: ErrorCategory = "transport"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, category=_CATEGORIES.get(code, "unknown"))


def call_error(code: str, message: str, *, outcome: ExternalOutcome,
               details: dict[str, object] | None = None) -> OperationError:
    """The ``OperationError`` of an A2A call with one of this module's call codes."""
    return OperationError(code=code, category=_CATEGORIES.get(code, "unknown"), message=message,
                          external_outcome=outcome, details=dict(details or {}))
