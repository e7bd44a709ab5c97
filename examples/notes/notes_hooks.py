"""The example's hook: before every fs.write, move the target under notes/."""

from __future__ import annotations

from typing import Any

from agentloom import HookDecision


def keep_notes_in_folder(event: dict[str, Any]) -> HookDecision:
    path = str(event["payload"]["path"])
    if path.startswith("notes/"):
        return HookDecision.allow()
    # the tool runs with the rewritten path, and the model is told so in its next turn
    return HookDecision("allow", payload_patch=[
        {"op": "replace", "path": "/payload/path", "value": f"notes/{path}"}])
