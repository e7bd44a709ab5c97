"""The handlers of agentloom.yaml's commands (docs/commands.md#the-handler)."""

from __future__ import annotations

from typing import Any

from agentloom.command import CommandNotExecuted


def move(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Move the meeting (here: say so); ``ctx.operation_id`` is the idempotency key."""
    return {"moved_to": params["day"], "operation_id": ctx.operation_id}


async def cancel(params: dict[str, Any], ctx: Any) -> str:
    if params["order"] <= 0:
        raise CommandNotExecuted("no such order; nothing was cancelled")
    return f"order {params['order']} cancelled"
