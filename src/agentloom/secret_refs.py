"""``${VAR}`` references in configured values (an MCP server's ``env`` and ``headers``, a
remote A2A agent's ``headers``): read from the environment when a connection starts.
``${VAR:-default}`` reads ``default`` where ``VAR`` is unset or empty (the shell's and Claude
Code's ``.mcp.json`` form); a default is configuration text, not a secret.

The values read live only in memory for that connection: they are never stored, logged or
shown. The configuration (and the snapshot a run records of it) keeps the ``${VAR}`` text;
errors name the variable, never its value. ``masked`` is what a record keeps of values that
must not be stored as written (an HTTP hook's headers): a literal is ``[redacted]``.
``scrub`` removes the values read from any text
that leaves the connection (a server's error message may echo a header).

Owns: finding and replacing references, scrubbing. Does not own: which error a missing
variable is (each caller names its own: ``mcp.secrets``, ``a2a.card``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping

__all__ = ["REDACTED", "masked", "resolve_references", "scrub"]

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
REDACTED = "[redacted]"
_MIN_SCRUBBED = 4  # shorter values would blank out ordinary words


def resolve_references(values: Mapping[str, str], *, where: str, secrets: list[str],
                       missing: Callable[[str], Exception],
                       environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``values`` with every ``${NAME}`` replaced by ``$NAME`` from ``environ`` (default:
    ``os.environ``), and every ``${NAME:-default}`` by ``$NAME`` or, where it is unset or
    empty, ``default``; each value read from ``environ`` is appended to ``secrets`` (for
    ``scrub``).

    Raises:
        Exception: ``missing(message)`` when a variable without a default is unset; the
            message names it and ``where.<key>`` (e.g. ``mcp_servers.docs.headers.Authorization``).
    """
    source = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key, value in values.items():
        def lookup(match: re.Match[str], key: str = key) -> str:
            name, default = match[1], match[2]
            if default is not None and not source.get(name):
                return default
            if name not in source:
                raise missing(f"{where}.{key} refers to ${{{name}}}, which is not set in "
                              f"AgentLoom's environment; export {name} before starting")
            secrets.append(source[name])
            return source[name]
        out[key] = _REFERENCE.sub(lookup, value)
    return out


def masked(values: Mapping[str, str]) -> dict[str, str]:
    """``values`` as a record may keep them: a value that holds a ``${VAR}`` reference is kept
    as written (the secret lives in the variable), any other value is ``[redacted]``."""
    return {key: value if _REFERENCE.search(value) else REDACTED for key, value in values.items()}


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``[redacted]``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= _MIN_SCRUBBED:
            text = text.replace(secret, REDACTED)
    return text
