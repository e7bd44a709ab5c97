"""Claude Code's ``.mcp.json`` (and Claude Desktop's config) → ``mcp_servers:`` entries.

::

    {"mcpServers": {"git":  {"command": "uvx", "args": ["mcp-server-git"],
                             "env": {"TOKEN": "${TOKEN:-none}"}},
                    "docs": {"type": "http", "url": "https://…/mcp",
                             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}
      ─►  mcp_servers:
            git:  {transport: stdio, command: uvx, args: [mcp-server-git],
                   env: {TOKEN: "${TOKEN:-none}"}}
            docs: {transport: http, url: "https://…/mcp",
                   headers: {Authorization: "Bearer ${DOCS_TOKEN}"}}

``${VAR}`` and ``${VAR:-default}`` stay as they are in ``env`` and ``headers`` (read when the
server is connected, never stored). Everything with no exact AgentLoom equivalent is refused
with an error naming it, never dropped: the legacy ``sse`` transport (000 §6.2: no fallback to
HTTP+SSE), a key other than ``type``, ``command``, ``args``, ``env``, ``url``, ``headers``, and
``${...}`` in ``command``, ``args`` or ``url`` (Claude Code expands those when it starts the
server; AgentLoom keeps a reference only where it can keep the value out of every record).

What changes for a server imported this way (docs/mcp.md, "Claude Code's .mcp.json"): a stdio
server gets only its declared ``env`` (plus ``PATH`` / ``HOME``), not the parent's whole
environment, and runs in the run's sandbox, network off — ``warnings`` says so for a command
that downloads its package on first start (``npx``, ``uvx``, …).

Owns: reading the file and translating each entry. Does not own: writing a config file
(``agentloom.cli.mcp``), connecting (``agentloom.mcp.connection``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agentloom.config.mcp import McpServerConfig
from agentloom.config.model import NAME, NAME_RULE
from agentloom.errors import AgentLoomError, ErrorCategory

__all__ = ["ImportedServers", "McpImportError", "import_mcp_json"]

_KEYS = ("type", "command", "args", "env", "url", "headers")
_STDIO_KEYS = frozenset({"type", "command", "args", "env"})
_HTTP_KEYS = frozenset({"type", "url", "headers"})
_DOWNLOADERS = frozenset({"npx", "uvx", "bunx", "pipx", "pnpx"})
_SERVER: TypeAdapter[Any] = TypeAdapter(McpServerConfig)


class McpImportError(AgentLoomError):
    """A ``.mcp.json``, or an entry of it, that cannot be imported (the message names it)."""

    default_code = "CLAUDE_IMPORT"
    default_category: ErrorCategory = "validation"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedServers:
    """The servers as ``mcp_servers`` entries (in the file's order), and what a user should
    know about them (one line each)."""

    servers: dict[str, dict[str, Any]]
    warnings: tuple[str, ...] = ()


def import_mcp_json(path: Path) -> ImportedServers:
    """The ``mcp_servers`` entries of the ``mcpServers`` object in the JSON file at ``path``.

    Raises:
        McpImportError: unreadable JSON, no ``mcpServers`` object, or an entry with no exact
            AgentLoom equivalent (every problem of the file, one per line).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise McpImportError(f"{path}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise McpImportError(f"{path}: no \"mcpServers\" object; a .mcp.json is "
                             '{"mcpServers": {"NAME": {"command": …} | {"type": "http", "url": …}}}')
    servers: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    warnings: list[str] = []
    for name, entry in data["mcpServers"].items():
        where = f"mcpServers.{name}"
        try:
            servers[name] = _entry(name, entry, where)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        command = servers[name].get("command")
        if command is not None and Path(command).name in _DOWNLOADERS:
            warnings.append(
                f"{where}: {command} fetches its package when the server starts, and a stdio "
                "server's sandbox has no network unless its entry says `network: true` (or "
                "install the package beforehand)")
    if not servers and not problems:
        raise McpImportError(f"{path}: \"mcpServers\" is empty; nothing to import")
    if problems:
        raise McpImportError(f"{path}: cannot import:\n  " + "\n  ".join(problems))
    return ImportedServers(servers=servers, warnings=tuple(warnings))


def _entry(name: str, entry: Any, where: str) -> dict[str, Any]:
    """One ``mcpServers`` entry as an ``mcp_servers`` entry (checked as the config checks it)."""
    if not NAME.match(name):
        raise ValueError(NAME_RULE)
    if not isinstance(entry, Mapping):
        raise ValueError("an entry is an object with \"command\" (stdio) or \"type\" and \"url\"")
    kind = entry.get("type", "stdio" if "command" in entry else None)
    if kind == "sse":
        raise ValueError("\"type\": \"sse\" is the legacy HTTP+SSE transport, which AgentLoom "
                         "does not speak (no fallback, 000 §6.2); use the server's Streamable "
                         "HTTP endpoint with \"type\": \"http\"")
    if kind not in ("stdio", "http"):
        raise ValueError(f"\"type\" must be \"stdio\" or \"http\" (got {kind!r}); an entry "
                         "without \"type\" needs \"command\"")
    allowed = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
    other = [key for key in entry if key not in allowed]
    if other:
        raise ValueError(
            f"{', '.join(map(repr, other))} cannot be imported for a {kind} server (it takes "
            f"{', '.join(k for k in _KEYS if k in allowed)}); AgentLoom's own options "
            "(timeout_s, mounts, network, protocol, oauth) go in its mcp_servers entry")
    out: dict[str, Any] = {"transport": kind}
    for key in _KEYS:
        if key in entry and key != "type":
            out[key] = entry[key]
    for key in ("command", "url"):
        if isinstance(out.get(key), str) and "${" in out[key]:
            raise ValueError(f"{key} {out[key]!r} refers to a variable; AgentLoom reads ${{VAR}} "
                             "only in env and headers: write the value itself")
    for i, arg in enumerate(out.get("args") or ()):
        if isinstance(arg, str) and "${" in arg:
            raise ValueError(f"args[{i}] {arg!r} refers to a variable; AgentLoom reads "
                             "${VAR} only in env and headers (never stored): write the value "
                             "itself, or have the server read it from env")
    try:
        _SERVER.validate_python(out)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"] if not str(p).startswith("<"))
        raise ValueError(f"{at + ': ' if at else ''}{first['msg']}") from None
    return out
