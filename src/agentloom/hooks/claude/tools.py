"""Claude Code tool names and ``tool_input`` fields ↔ AgentLoom capability keys and arguments.

Both directions are exact for the names in the tables below; an argument of a built-in tool
without a Claude Code field keeps its AgentLoom name (``fs.write``'s ``mode`` stays ``mode``),
and a tool without a Claude Code equivalent keeps its capability key and its arguments::

    fs.write {path, content, mode}  ─►  Write {file_path, content, mode}
    exec {argv: [ls, -l]}           ─►  Bash {command: "ls -l"}   (back: shlex-split to argv)
    mcp.git.status {…}              ─►  mcp__git__status {…}      (arguments unchanged)

Owns: the name tables and the two conversions. Does not own: reading settings files
(``settings``) or a hook's output (``shim``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from agentloom.errors import AgentLoomError, ErrorCategory

TOOL_NAMES: Mapping[str, str] = {
    "Read": "fs.read", "Write": "fs.write", "Edit": "fs.edit", "Bash": "exec",
    "Glob": "fs.glob", "Grep": "fs.grep"}
"""Claude Code's tool name → AgentLoom's capability key."""
CLAUDE_NAMES: Mapping[str, str] = {key: name for name, key in TOOL_NAMES.items()}

FIELDS: Mapping[str, Mapping[str, str]] = {
    "fs.read": {"path": "file_path", "offset": "offset", "limit": "limit"},
    "fs.write": {"path": "file_path", "content": "content"},
    "fs.edit": {"path": "file_path", "old_text": "old_string", "new_text": "new_string"},
    "fs.glob": {"pattern": "pattern", "root": "path"},
    "fs.grep": {"pattern": "pattern"},
    "exec": {"shell_script": "command", "argv": "command", "timeout_s": "timeout"},
}
"""Per capability: AgentLoom argument → Claude Code ``tool_input`` field. ``exec``'s ``argv``
becomes ``command`` joined with ``shlex.join``; ``timeout_s`` (seconds) is Claude Code's
``timeout`` in milliseconds."""

KEPT: Mapping[str, frozenset[str]] = {
    "fs.read": frozenset(), "fs.write": frozenset({"mode", "if_match", "parents"}),
    "fs.edit": frozenset({"expected_matches", "if_match"}), "fs.glob": frozenset({"limit"}),
    "fs.grep": frozenset({"paths", "literal", "limit"}), "exec": frozenset({"cwd", "env_patch"}),
}
"""Per capability of ``FIELDS``: its other arguments (no Claude Code field), kept by name —
the rest of the tool's input schema (pinned against it by tests)."""
_MCP_NAME = re.compile(r"mcp__(?P<server>[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__(?P<tool>.+)")


class ClaudeMappingError(AgentLoomError):
    """A Claude Code name or field AgentLoom cannot map exactly (the message names it)."""

    default_code = "CLAUDE_MAPPING"
    default_category: ErrorCategory = "validation"


def capability_of(tool_name: str) -> str:
    """The capability key of Claude Code's tool ``tool_name``.

    Raises:
        ClaudeMappingError: a Claude Code tool with no AgentLoom equivalent.
    """
    if tool_name in TOOL_NAMES:
        return TOOL_NAMES[tool_name]
    if (found := _MCP_NAME.fullmatch(tool_name)) is not None:
        return f"mcp.{found['server']}.{found['tool']}"
    known = ", ".join([*TOOL_NAMES, "mcp__<server>__<tool>"])
    raise ClaudeMappingError(f"Claude Code tool {tool_name!r} has no AgentLoom equivalent "
                             f"(known: {known})")


def claude_tool_name(capability: str) -> str:
    """The name a Claude Code hook script knows ``capability`` by (its key when none)."""
    if capability in CLAUDE_NAMES:
        return CLAUDE_NAMES[capability]
    parts = capability.split(".", 2)
    if len(parts) == 3 and parts[0] == "mcp":
        return f"mcp__{parts[1]}__{parts[2]}"
    return capability


def to_claude_input(capability: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` as Claude Code's ``tool_input`` for ``capability``."""
    fields = FIELDS.get(capability, {})
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        if name == "argv" and capability == "exec":
            out["command"] = shlex.join(str(v) for v in value)
        elif name == "timeout_s" and capability == "exec":
            out["timeout"] = _ms(value)
        else:
            out[fields.get(name, name)] = value
    return out


def from_claude_input(capability: str, tool_input: Any,
                      current: Mapping[str, Any]) -> dict[str, Any]:
    """Claude Code's ``updatedInput`` (the whole new input) as ``capability``'s arguments;
    ``current`` (the arguments the hook saw) says whether ``exec`` ran ``argv`` or a script.

    Raises:
        ClaudeMappingError: not an object, or a field that is neither a Claude Code field of
            this tool nor an AgentLoom argument without one (the message names it).
    """
    if not isinstance(tool_input, Mapping):
        raise ClaudeMappingError(f"updatedInput must be an object, not {type(tool_input).__name__}")
    fields = FIELDS.get(capability)
    if fields is None:  # no Claude Code equivalent: names unchanged
        return dict(tool_input)
    back = {claude: name for name, claude in fields.items()}
    kept = KEPT[capability]
    out: dict[str, Any] = {}
    for field, value in tool_input.items():
        if capability == "exec" and field == "command":
            out.update(_exec_command(value, argv="argv" in current))
        elif capability == "exec" and field == "timeout":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ClaudeMappingError(f"updatedInput.timeout must be milliseconds, not "
                                         f"{value!r}")
            out["timeout_s"] = value / 1000
        elif field in back:
            out[back[field]] = value
        elif field in kept:
            out[field] = value
        else:
            allowed = sorted(set(back) | kept)
            raise ClaudeMappingError(
                f"updatedInput field {field!r} is not a field of Claude Code's "
                f"{claude_tool_name(capability)} as AgentLoom maps it (allowed: {allowed})")
    return out


def _exec_command(value: Any, *, argv: bool) -> dict[str, Any]:
    if not isinstance(value, str) or not value:
        raise ClaudeMappingError(f"updatedInput.command must be a non-empty string, not {value!r}")
    if not argv:
        return {"shell_script": value}
    try:
        return {"argv": shlex.split(value)}
    except ValueError as exc:
        raise ClaudeMappingError(f"updatedInput.command {value!r} is not a word list for "
                                 f"argv ({exc})") from None


def _ms(seconds: Any) -> Any:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return seconds
    ms = seconds * 1000
    return int(ms) if float(ms).is_integer() else ms
