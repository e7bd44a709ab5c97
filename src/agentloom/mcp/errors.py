"""The MCP client's error class and its stable codes.

::

    AgentLoomError                 (agentloom.errors)
    └── McpError                   a server that cannot be started, reached or used

A failed *call* is never raised: the handler returns a ``ToolResult`` whose ``OperationError``
carries one of the call codes below. ``isError: true`` (the tool ran and said it failed) and a
JSON-RPC error (the protocol refused the request) are distinct codes, and neither is a
transport fault.
"""

from __future__ import annotations

from typing import Final

from agentloom.errors import AgentLoomError, ErrorCategory, ExternalOutcome, OperationError

# -- connection (raised as McpError; a call that needed the connection fails with it) ---------
MCP_CONNECT_FAILED: Final = "MCP_CONNECT_FAILED"  # the process / URL could not be reached
MCP_VERSION_UNSUPPORTED: Final = "MCP_VERSION_UNSUPPORTED"  # not the configured profile
MCP_SECRET_MISSING: Final = "MCP_SECRET_MISSING"  # a ${VAR} of env / headers is unset
MCP_TOOL_NOT_LISTED: Final = "MCP_TOOL_NOT_LISTED"  # an agent names a tool the server lacks
MCP_AUTH_REQUIRED: Final = "MCP_AUTH_REQUIRED"  # HTTP 401: `agentloom mcp login` (also a call)
MCP_LOGIN_FAILED: Final = "MCP_LOGIN_FAILED"  # the OAuth flow of `agentloom mcp login` failed
MCP_STEP_TIMEOUT: Final = "MCP_STEP_TIMEOUT"  # initialize / a listing outlived timeout_s
MCP_SERVER_EXITED: Final = "MCP_SERVER_EXITED"  # died again after its one reopen in the run
AUTH_REQUIRED_JSONRPC: Final = -32040
"""The JSON-RPC error code a 401 answer becomes on an OAuth-aware connection (``oauth``)."""
# -- calls (inside a ToolResult) -------------------------------------------------------------
MCP_TOOL_ERROR: Final = "MCP_TOOL_ERROR"  # isError: true — a result, not a fault
MCP_PROTOCOL_ERROR: Final = "MCP_PROTOCOL_ERROR"  # a JSON-RPC error answered the request
MCP_OUTPUT_INVALID: Final = "MCP_OUTPUT_INVALID"  # structuredContent against outputSchema
MCP_CALL_TIMEOUT: Final = "MCP_CALL_TIMEOUT"  # timeout_s passed; notifications/cancelled sent
MCP_CONNECTION_LOST: Final = "MCP_CONNECTION_LOST"  # the session ended during the call
MCP_INPUT_REQUIRED: Final = "MCP_INPUT_REQUIRED"  # 2026-07-28 input_required: never answered

_CATEGORIES: Final[dict[str, ErrorCategory]] = {
    MCP_INPUT_REQUIRED: "protocol",
    MCP_CONNECT_FAILED: "transport",
    MCP_VERSION_UNSUPPORTED: "protocol",
    MCP_SECRET_MISSING: "validation",
    MCP_TOOL_NOT_LISTED: "not_found",
    MCP_AUTH_REQUIRED: "permission",
    MCP_LOGIN_FAILED: "permission",
    MCP_STEP_TIMEOUT: "timeout",
    MCP_SERVER_EXITED: "transport",
    MCP_TOOL_ERROR: "business",
    MCP_PROTOCOL_ERROR: "protocol",
    MCP_OUTPUT_INVALID: "protocol",
    MCP_CALL_TIMEOUT: "timeout",
    MCP_CONNECTION_LOST: "transport",
}


class McpError(AgentLoomError):
    """An MCP server that could not be started, reached, or spoken to with the configured
    profile; nothing was called. ``code`` is one of this module's connection codes."""

    default_code = MCP_CONNECT_FAILED
    default_category: ErrorCategory = "transport"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, category=_CATEGORIES.get(code, "unknown"))


def call_error(code: str, message: str, *, outcome: ExternalOutcome,
               details: dict[str, object] | None = None) -> OperationError:
    """The ``OperationError`` of a failed MCP call with one of this module's call codes."""
    return OperationError(code=code, category=_CATEGORIES.get(code, "unknown"), message=message,
                          external_outcome=outcome, details=dict(details or {}))
