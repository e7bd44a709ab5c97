"""The compatibility shim of ``format: claude-code`` command hooks: the event in the stdin
shape a Claude Code hook script reads, and its JSON output read back as a decision.

::

    HookEvent ─► {hook_event_name, tool_name, tool_input, tool_response?, cwd, session_id,
                  tool_use_id}                                              (stdin)
    exit 0 stdout ─► hookSpecificOutput.permissionDecision allow / deny / ask (a person
                     answers; permissionDecisionReason the question), updatedInput
                     (a payload patch), PostToolUse decision: block  ─►  a decision

Exit statuses stay the command runner's (0 output, 2 deny with stderr, other a failure),
which are Claude Code's. ``transcript_path`` is not sent: AgentLoom keeps no transcript file.

Owns: both translations. Does not own: running the command (``runners.command``), the
names and fields (``tools``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from agentloom.catalog import thaw_json
from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.hooks.claude.tools import (
    ClaudeMappingError,
    claude_tool_name,
    from_claude_input,
    to_claude_input,
)
from agentloom.hooks.decision import InvalidDecision
from agentloom.hooks.event import HookEvent

FORMAT = "claude-code"
"""The ``format`` of a command handler whose program is a Claude Code hook script."""
EVENTS = {"before": "PreToolUse", "after": "PostToolUse"}
_TOP = {"continue", "stopReason", "suppressOutput", "decision", "reason", "hookSpecificOutput"}
_SPECIFIC = {"PreToolUse": {"hookEventName", "permissionDecision", "permissionDecisionReason",
                            "updatedInput"},
             "PostToolUse": {"hookEventName"}}


class ClaudeHookError(AgentLoomError):
    """A Claude Code hook answered something AgentLoom cannot honour (``defer``,
    ``continue: false``, a field with no equivalent): a hook failure naming it."""

    default_code = "HOOK_CLAUDE_UNSUPPORTED"
    default_category: ErrorCategory = "validation"


def claude_event(event: HookEvent, *, cwd: str) -> bytes:
    """The JSON a Claude Code hook script reads on stdin for ``event``.

    Raises:
        ClaudeHookError: not a tool event (Claude Code hooks see only tool calls here).
    """
    if event.event != "tool":
        raise ClaudeHookError(f"a format: claude-code hook runs on tool calls only, not on "
                              f"{event.event!r} events")
    data: dict[str, Any] = {
        "session_id": event.run_id, "hook_event_name": EVENTS[event.timing], "cwd": cwd,
        "tool_name": claude_tool_name(event.capability),
        "tool_input": to_claude_input(event.capability, thaw_json(event.payload)),
        "tool_use_id": event.operation_id}
    if event.timing == "after":
        data["tool_response"] = thaw_json(event.result)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def claude_decision(data: bytes, event: HookEvent, *, source: str,
                    scrub: Callable[[str], str]) -> dict[str, Any]:
    """The decision a Claude Code hook's stdout (exit status 0) says: empty or plain text is
    an ``allow`` (Claude Code logs plain text), a JSON object is read as Claude Code reads it.

    Raises:
        InvalidDecision: not JSON, or fields of the wrong shape (status ``invalid``).
        ClaudeHookError: an answer with no AgentLoom equivalent, named (status ``failed``).
    """
    text = data.decode("utf-8", errors="replace").strip()
    if not text.startswith("{"):
        return {"decision": "allow"}
    try:
        out = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidDecision(f"{source} is not JSON ({exc.msg} at position {exc.pos}): "
                              f"{scrub(text)[:200]!r}") from None
    name = EVENTS[event.timing]
    _known(out, _TOP, f"{source}: field")
    if out.get("continue", True) is not True:
        raise ClaudeHookError(f"{source}: continue: false (stop the whole agent) has no "
                              "AgentLoom equivalent; deny the call instead")
    specific = out.get("hookSpecificOutput", {})
    if not isinstance(specific, Mapping):
        raise InvalidDecision(f"{source}: hookSpecificOutput must be an object")
    _known(specific, _SPECIFIC[name], f"{source}: hookSpecificOutput field")
    if specific.get("hookEventName", name) != name:
        raise InvalidDecision(f"{source}: hookSpecificOutput.hookEventName is "
                              f"{specific.get('hookEventName')!r}, this is a {name} hook")
    if name == "PostToolUse":
        return _post(out, source)
    return _pre(out, specific, event, source)


def _pre(out: Mapping[str, Any], specific: Mapping[str, Any], event: HookEvent,
         source: str) -> dict[str, Any]:
    answer = specific.get("permissionDecision")
    reason = specific.get("permissionDecisionReason")
    if answer is None and "decision" in out:  # the deprecated top-level form
        answer = {"approve": "allow", "block": "deny"}.get(out["decision"], out["decision"])
        reason = out.get("reason")
    if answer == "defer":
        raise ClaudeHookError(f"{source}: permissionDecision 'defer' has no AgentLoom "
                              "equivalent; answer allow, deny or ask")
    if answer not in (None, "allow", "deny", "ask"):
        raise InvalidDecision(f"{source}: permissionDecision {answer!r} is not allow, deny or "
                              "ask")
    if reason is not None and not isinstance(reason, str):
        raise InvalidDecision(f"{source}: permissionDecisionReason must be a string")
    if answer == "deny":
        return {"decision": "deny", "reason": reason or f"{source} denied the call"}
    decision: dict[str, Any] = {"decision": "ask" if answer == "ask" else "allow"}
    if reason:
        decision["reason"] = reason
    if "updatedInput" in specific:
        decision["payload_patch"] = {"ops": _patch(event, specific["updatedInput"], source),
                                     "expected_version": event.payload_version}
    return decision


def _post(out: Mapping[str, Any], source: str) -> dict[str, Any]:
    answer = out.get("decision")
    reason = out.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise InvalidDecision(f"{source}: reason must be a string")
    if answer is None:
        return {"decision": "allow"}
    if answer != "block":
        raise InvalidDecision(f"{source}: a PostToolUse decision is 'block' or absent, not "
                              f"{answer!r}")
    return {"decision": "deny", "reason": reason or f"{source} blocked the result"}


def _patch(event: HookEvent, updated: Any, source: str) -> list[dict[str, Any]]:
    """Claude Code's ``updatedInput`` replaces the whole input: the operations that turn the
    current arguments into it, field by field."""
    current = thaw_json(event.payload)
    try:
        new = from_claude_input(event.capability, updated, current)
    except ClaudeMappingError as exc:
        raise InvalidDecision(f"{source}: {exc.error.message}") from None
    ops: list[dict[str, Any]] = [{"op": "remove", "path": _pointer(k)}
                                 for k in current if k not in new]
    for key, value in new.items():
        if key not in current:
            ops.append({"op": "add", "path": _pointer(key), "value": value})
        elif current[key] != value:
            ops.append({"op": "replace", "path": _pointer(key), "value": value})
    return ops


def _known(value: Any, allowed: set[str], what: str) -> None:
    if not isinstance(value, Mapping):
        raise InvalidDecision(f"{what.split(':')[0]} must be a JSON object")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise ClaudeHookError(f"{what} {unknown[0]!r} has no AgentLoom equivalent (understood: "
                              f"{sorted(allowed)})")


def _pointer(key: str) -> str:
    return "/payload/" + key.replace("~", "~0").replace("/", "~1")
