"""``${VAR}`` in a server's ``env`` and ``headers``: read from the environment at connection time.

The resolved values live only in memory for the start of one connection: they are never
stored, logged or shown. The configuration (and the snapshot a run records of it) keeps the
``${VAR}`` text; errors name the variable, never its value. ``scrub`` removes resolved values
from any text that leaves the connection (a server's error message may echo a header).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from agentloom.mcp.errors import MCP_SECRET_MISSING, McpError

__all__ = ["resolve_values", "scrub"]

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
REDACTED = "[redacted]"
_MIN_SCRUBBED = 4  # shorter values would blank out ordinary words


def resolve_values(values: Mapping[str, str], *, where: str, secrets: list[str],
                   environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``values`` with every ``${NAME}`` replaced by ``$NAME`` from ``environ`` (default:
    ``os.environ``); each value read is appended to ``secrets`` (for ``scrub``).

    Raises:
        McpError: ``MCP_SECRET_MISSING`` naming the variable and ``where`` (e.g.
            ``mcp_servers.docs.headers.Authorization``) when it is unset.
    """
    source = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key, value in values.items():
        def lookup(match: re.Match[str], key: str = key) -> str:
            name = match[1]
            if name not in source:
                raise McpError(MCP_SECRET_MISSING, (
                    f"{where}.{key} refers to ${{{name}}}, which is not set in AgentLoom's "
                    f"environment; export {name} before starting"))
            secrets.append(source[name])
            return source[name]
        out[key] = _REFERENCE.sub(lookup, value)
    return out


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``[redacted]``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= _MIN_SCRUBBED:
            text = text.replace(secret, REDACTED)
    return text
