"""Claude Code ``settings.json`` hooks → AgentLoom hook configuration (``agents.<a>.hooks``).

::

    {"hooks": {"PreToolUse": [{"matcher": "Write|Edit",
                               "hooks": [{"type": "command", "command": "…", "timeout": 5}]}]}}
      ─►  - {hook_id: claude.PreToolUse[0].hooks[0].fs.write, timing: before,
             match: {capability: fs.write},
             handler: {kind: command, format: claude-code, command: "…", timeout_s: 5}}
          - {… .fs.edit, match: {capability: fs.edit}, …}

Only ``PreToolUse`` / ``PostToolUse`` with ``type: command`` hooks convert. Every other event,
hook type, hook field and a matcher that no capability glob says exactly is refused with an
error naming it — never silently dropped (other events may be skipped only when asked, and are
then listed). A script answering ``permissionDecision: "ask"`` hands the call to a person
(the run waits for ``agentloom runs approve``; issue 17).

Owns: reading the settings' ``hooks`` and translating them. Does not own: writing a config
file (``agentloom.cli.hooks``), the run-time shim (``shim``).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloom.hooks.claude.shim import FORMAT
from agentloom.hooks.claude.tools import ClaudeMappingError, capability_of

TIMINGS: Mapping[str, str] = {"PreToolUse": "before", "PostToolUse": "after"}
DEFAULT_TIMEOUT_S = 600.0
"""Claude Code's timeout of a command hook that gives none."""
_PLAIN = re.compile(r"[A-Za-z0-9_\-, |]*")
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_MCP_SERVER = re.compile(r"\^?mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__\.\*\$?")
_GROUP_KEYS = {"matcher", "hooks"}
_COMMAND_KEYS = {"type", "command", "args", "timeout"}
MAX_SCRIPT_BYTES = 1 << 20


class ClaudeImportError(ClaudeMappingError):
    """A settings file, or a part of it, that cannot be imported (the message names it)."""

    default_code = "CLAUDE_IMPORT"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedHooks:
    """The hooks as ``agents.<agent>.hooks`` entries, and the events skipped on request."""

    hooks: tuple[dict[str, Any], ...]
    skipped: tuple[str, ...] = ()


def import_settings(path: Path, *, skip_unsupported: bool = False) -> ImportedHooks:
    """The AgentLoom hooks of the Claude Code settings file at ``path``. The project folder
    (``$CLAUDE_PROJECT_DIR``) is the folder holding ``.claude/``, else the file's folder.

    Raises:
        ClaudeImportError: unreadable JSON, or something with no exact AgentLoom equivalent.
    """
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ClaudeImportError(f"{path}: cannot read it as JSON ({exc})") from None
    if not isinstance(settings, Mapping):
        raise ClaudeImportError(f"{path}: a settings file is a JSON object")
    if settings.get("disableAllHooks") is True:
        raise ClaudeImportError(f"{path}: disableAllHooks is true; nothing to import")
    events = settings.get("hooks", {})
    if not isinstance(events, Mapping):
        raise ClaudeImportError(f"{path}: hooks must be an object of events")
    other = tuple(str(e) for e in events if e not in TIMINGS)
    if other and not skip_unsupported:
        raise ClaudeImportError(
            f"{path}: hook events with no AgentLoom equivalent yet: {', '.join(other)} (only "
            "PreToolUse and PostToolUse convert); remove them or pass --skip-unsupported")
    return ImportedHooks(hooks=import_events(events, project=project_dir(path)), skipped=other)


def import_events(events: Mapping[str, Any], *, project: Path,
                  id_prefix: str = "claude.") -> tuple[dict[str, Any], ...]:
    """The AgentLoom hooks of a Claude Code ``hooks`` object (``{"<Event>": [groups]}``, as
    in a settings file or a skill's front matter), whose scripts are under ``project``; each
    ``hook_id`` is ``<id_prefix><Event>[<i>].hooks[<j>]`` (``.<glob>`` added when a matcher
    names several tools). Events other than ``PreToolUse`` / ``PostToolUse`` are left out:
    the caller refuses or lists them.

    Raises:
        ClaudeImportError: something with no exact AgentLoom equivalent.
    """
    hooks: list[dict[str, Any]] = []
    for event, groups in events.items():
        if event in TIMINGS:
            hooks.extend(_event_hooks(str(event), groups, project, id_prefix))
    return tuple(hooks)


def project_dir(path: Path) -> Path:
    """The Claude Code project folder of the settings file at ``path``."""
    folder = path.resolve().parent
    return folder.parent if folder.name == ".claude" else folder


def _event_hooks(event: str, groups: Any, project: Path,
                 id_prefix: str) -> list[dict[str, Any]]:
    if not isinstance(groups, list):
        raise ClaudeImportError(f"hooks.{event} must be a list of matcher groups")
    out: list[dict[str, Any]] = []
    for i, group in enumerate(groups):
        where = f"hooks.{event}[{i}]"
        if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
            raise ClaudeImportError(f"{where} must be an object with a hooks list")
        _only(group, _GROUP_KEYS, where)
        globs = capability_globs(group.get("matcher"), where=f"{where}.matcher")
        for j, hook in enumerate(group["hooks"]):
            handler = _handler(hook, f"{where}.hooks[{j}]", project, event)
            hook_id = f"{id_prefix}{event}[{i}].hooks[{j}]"
            for glob in globs:
                entry: dict[str, Any] = {
                    "hook_id": hook_id if len(globs) == 1 else f"{hook_id}.{glob}",
                    "timing": TIMINGS[event], "event": "tool"}
                if glob != "*":
                    entry["match"] = {"capability": glob}
                entry["handler"] = copy.deepcopy(handler)  # no shared lists (YAML aliases)
                out.append(entry)
    return out


def capability_globs(matcher: Any, *, where: str = "matcher") -> tuple[str, ...]:
    """The capability globs a Claude Code tool ``matcher`` says exactly (``("*",)``: every
    tool): names, ``|`` / ``,`` lists of names, ``^(A|B)$``, ``^Name$``, ``mcp__s__.*``.

    Raises:
        ClaudeImportError: a regex with no exact glob, or a tool without an equivalent.
    """
    if matcher is None or matcher in ("", "*"):
        return ("*",)
    if not isinstance(matcher, str):
        raise ClaudeImportError(f"{where} must be a string, not {matcher!r}")
    if _PLAIN.fullmatch(matcher):  # Claude Code: exact names, not a regex
        names = [n.strip() for n in re.split(r"[|,]", matcher) if n.strip()]
    elif (server := _MCP_SERVER.fullmatch(matcher)) is not None:
        return (f"mcp.{server[1]}.*",)
    elif (anchored := re.fullmatch(r"\^\(?([A-Za-z0-9_|-]+)\)?\$", matcher)) is not None:
        names = anchored[1].split("|")
    else:
        raise ClaudeImportError(
            f"{where} {matcher!r} is a regex with no exact AgentLoom capability glob (an "
            "unanchored regex matches inside names too); write tool names (Write|Edit), "
            "^(Write|Edit)$ or mcp__<server>__.*")
    if not names or not all(_NAME.fullmatch(n) for n in names):
        raise ClaudeImportError(f"{where} {matcher!r} is not a list of tool names")
    try:
        return tuple(dict.fromkeys(capability_of(n) for n in names))
    except ClaudeMappingError as exc:
        raise ClaudeImportError(f"{where} {matcher!r}: {exc.error.message}") from None


def _handler(hook: Any, where: str, project: Path, event: str) -> dict[str, Any]:
    if not isinstance(hook, Mapping):
        raise ClaudeImportError(f"{where} must be an object")
    kind = hook.get("type")
    if kind != "command":
        raise ClaudeImportError(f"{where}: hook type {kind!r} is not supported (only type: "
                                "command converts, to kind: command)")
    _only(hook, _COMMAND_KEYS, where)
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ClaudeImportError(f"{where}.command must be a non-empty string")
    timeout = hook.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ClaudeImportError(f"{where}.timeout must be a positive number of seconds")
    handler: dict[str, Any] = {"kind": "command", "format": FORMAT}
    args = hook.get("args")
    if args is None:
        handler["command"] = command
    elif isinstance(args, list) and all(isinstance(a, str) for a in args):
        handler["argv"] = [command, *args]
    else:
        raise ClaudeImportError(f"{where}.args must be a list of strings")
    handler["timeout_s"] = float(timeout)
    return handler


def _only(value: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise ClaudeImportError(f"{where}: field {unknown[0]!r} is not supported (understood: "
                                f"{sorted(allowed)})")
