"""``${VAR}`` in an MCP server's ``env`` and ``headers`` (``agentloom.secret_refs``): an unset
variable is ``McpError`` ``MCP_SECRET_MISSING``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentloom.mcp.errors import MCP_SECRET_MISSING, McpError
from agentloom.secret_refs import REDACTED, resolve_references, scrub

__all__ = ["REDACTED", "resolve_values", "scrub"]


def resolve_values(values: Mapping[str, str], *, where: str, secrets: list[str],
                   environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``values`` with every ``${NAME}`` read from ``environ`` (default ``os.environ``); each
    value read is appended to ``secrets`` (for ``scrub``).

    Raises:
        McpError: ``MCP_SECRET_MISSING`` naming the variable and ``where`` (e.g.
            ``mcp_servers.docs.headers.Authorization``) when it is unset.
    """
    return resolve_references(values, where=where, secrets=secrets, environ=environ,
                              missing=lambda message: McpError(MCP_SECRET_MISSING, message))


def scrub_value(value: Any, scrub_text: Callable[[str], str]) -> Any:
    """``value`` (JSON) with every string, keys included, scrubbed by ``scrub_text`` (a
    connection's ``scrub``): what a server sends back never carries a configured secret into
    the record or the model (issue #34, 6)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, list | tuple):
        return [scrub_value(v, scrub_text) for v in value]
    if isinstance(value, dict):
        return {scrub_text(str(k)): scrub_value(v, scrub_text) for k, v in value.items()}
    return value
