"""Issue 21: a command exposed as a tool (``command.<id>``) — an agent's call goes through the
command bus (receipt, confirmation), never around it; a dangerous one only gets ``accepted``
and the model never sees the token."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agentloom.agent.commands import command_tool
from agentloom.command import CommandRegistry

from .support import ALICE, rig, specs


async def test_i21_an_exposed_command_is_a_tool_whose_result_is_the_receipt(
        durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        registry = CommandRegistry({s.id: replace(s, expose_as_tool=True) for s in specs()})
        r.bus.registry = registry
        pairs = [command_tool(r.bus, name, ALICE, release_id="agent-rel")
                 for name in ("meeting.move", "disk.wipe")]
        r.kernel.publish("agent-rel", pairs, roles={"main": [p[0].capability_key for p in pairs]})
        lease = await r.kernel.start_run(workspace=False)
        ctx = r.kernel.invocation_context(lease, release_id="agent-rel")
        moved = await r.kernel.bus.request("command_meeting_move", {"day": "friday"}, ctx)
        assert moved.outcome == "succeeded" and moved.result is not None, moved.describe()
        receipt = moved.result.content[0].data  # type: ignore[union-attr]
        assert (receipt["state"], receipt["result"]) == ("committed", {"moved_to": "friday"})
        wiped = await r.kernel.bus.request("command_disk_wipe", {"disk": "d1"}, ctx)
        assert wiped.outcome == "succeeded" and wiped.result is not None
        queued = wiped.result.content[0].data  # type: ignore[union-attr]
        assert queued["state"] == "accepted" and "confirmation" not in queued
        assert "token" not in (queued["result"] or {})
        assert [e[0] for e in r.effects.done] == ["move"]
        await r.kernel.end_run(lease)


def test_i21_a_command_not_exposed_is_refused_as_a_tool() -> None:
    registry = CommandRegistry({s.id: s for s in specs()})

    class Bus:
        pass

    bus = Bus()
    bus.registry = registry  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="expose_as_tool"):
        command_tool(bus, "meeting.move", ALICE, release_id="r")  # type: ignore[arg-type]
