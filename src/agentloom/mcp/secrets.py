"""``${VAR}`` in an MCP server's ``env`` and ``headers`` (``agentloom.secret_refs``): an unset
variable is ``McpError`` ``MCP_SECRET_MISSING``.
"""

from __future__ import annotations

from collections.abc import Mapping

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
