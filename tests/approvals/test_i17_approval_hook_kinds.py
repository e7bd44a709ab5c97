"""Issue 17 and 000 §5.2: ``ask`` from every hook kind — a ``command`` hook's JSON
``{"decision": "ask", "reason": …}`` and a Claude Code hook script's ``permissionDecision:
"ask"`` (``format: claude-code``), run in the sandbox (each backend this machine has), on
SQLite — and the shim's reading of it."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from tests.hooks.test_command_hooks import backend, command, make  # noqa: F401  (fixtures)

from agentloom.approvals import ApprovalPending, get_approval
from agentloom.hooks import HookEvent
from agentloom.hooks.claude import claude_decision
from agentloom.hooks.decision import parse_decision
from agentloom.hooks.spec import HandlerRef, HookSpec

CLAUDE_ASK = json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse", "permissionDecision": "ask",
    "permissionDecisionReason": "Echo this to the user?"}})


def claude_command(hook_id: str, line: str, *, project: Path) -> HookSpec:
    return HookSpec(hook_id=hook_id, timing="before",
                    handler=HandlerRef(kind="command", command=line, format="claude-code",
                                       project_dir=str(project)))


async def test_i17_approval_a_command_hook_answering_ask_makes_the_call_wait(
    make: Any,  # noqa: F811
) -> None:
    answer = json.dumps({"decision": "ask", "reason": "Really echo it?"})
    h = await make(lambda p: [command("gate", f"echo '{answer}'", project=p)])

    with pytest.raises(ApprovalPending) as waiting:
        await h.call("hi", logical_key="k1")

    assert waiting.value.question == "Really echo it?"
    assert h.tool.calls == []
    record = get_approval(h.kernel.store, waiting.value.operation_id)
    assert record is not None and (record.status, record.asked_by) == ("pending", ("gate",))
    row = h.rows(waiting.value.operation_id)["gate"]
    assert (row["status"], row["decision"]) == ("succeeded", "ask")


async def test_i17_approval_a_claude_code_hook_answering_ask_makes_the_call_wait(
    make: Any,  # noqa: F811
) -> None:
    h = await make(lambda p: [claude_command("claude", f"echo '{CLAUDE_ASK}'", project=p)])

    with pytest.raises(ApprovalPending) as waiting:
        await h.call("hi", logical_key="k1")

    assert waiting.value.question == "Echo this to the user?"
    assert h.tool.calls == []
    row = h.rows(waiting.value.operation_id)["claude"]
    assert (row["status"], row["decision"]) == ("succeeded", "ask")


def event(timing: str = "before") -> HookEvent:
    return HookEvent.from_mapping({
        "timing": timing, "event": "tool", "capability": "exec", "exposed_name": "exec",
        "role": "main", "run_id": "r", "operation_id": "op", "purpose": None,
        "payload": MappingProxyType({"shell_script": "ls"}), "payload_version": 0,
        "proposed_payload": MappingProxyType({"shell_script": "ls"}),
        **({"result": {"status": "succeeded", "content": []}} if timing == "after" else {})})


def test_s5_2_the_shim_reads_permission_decision_ask_as_ask_with_its_question() -> None:
    decision = claude_decision(CLAUDE_ASK.encode(), event(), source="hook h", scrub=str)
    parsed = parse_decision(decision)
    assert (parsed.decision, parsed.reason) == ("ask", "Echo this to the user?")


def test_s5_2_the_shim_reads_ask_with_updated_input_as_an_ask_with_its_patch() -> None:
    out = json.dumps({"hookSpecificOutput": {"permissionDecision": "ask",
                                             "updatedInput": {"command": "ls -l"}}})
    parsed = parse_decision(claude_decision(out.encode(), event(), source="h", scrub=str))
    assert parsed.decision == "ask" and parsed.reason is None
    assert parsed.payload_patch is not None
