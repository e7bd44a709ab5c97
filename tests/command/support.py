"""Shared pieces of the command tests: a command bus on a real Kernel and store, commands
whose handlers count their side effects."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import CommandContext, PipelineCommandExecutor
from agentloom.command import (
    CommandBus,
    CommandHandlerRef,
    CommandNotExecuted,
    CommandRegistry,
    CommandSpec,
)
from agentloom.hooks.spec import HookSpec
from agentloom.kernel import Kernel
from agentloom.refs import Principal

ALICE = Principal(actor="alice", project="p1")
BOB = Principal(actor="bob", project="p1")

MOVE_PARAMS = {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}


@dataclass
class Effects:
    """The outside world: every side effect a handler made, in order."""

    done: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)

    def move(self, params: dict[str, Any], ctx: CommandContext) -> dict[str, Any]:
        self.done.append(("move", params, ctx.operation_id))
        return {"moved_to": params["day"]}

    async def wipe(self, params: dict[str, Any], ctx: CommandContext) -> str:
        self.done.append(("wipe", params, ctx.operation_id))
        return "wiped"

    async def charge_then_fail(self, params: dict[str, Any], ctx: CommandContext) -> None:
        self.done.append(("charge", params, ctx.operation_id))  # the effect happened ...
        raise ConnectionError("the bank hung up after the charge")  # ... then the error

    async def refuse(self, params: dict[str, Any], ctx: CommandContext) -> None:
        raise CommandNotExecuted("the account is locked; nothing was charged")

    def functions(self) -> dict[str, Callable[..., Any]]:
        return {"t:move": self.move, "t:wipe": self.wipe, "t:charge": self.charge_then_fail,
                "t:refuse": self.refuse}


def specs() -> list[CommandSpec]:
    return [
        CommandSpec(id="meeting.move", params=MOVE_PARAMS, risk="write",
                    handler=CommandHandlerRef(ref="t:move")),
        CommandSpec(id="disk.wipe", params={"type": "object", "properties": {
            "disk": {"type": "string"}}, "required": ["disk"]}, risk="dangerous",
                    handler=CommandHandlerRef(ref="t:wipe")),
        CommandSpec(id="card.charge", params={"type": "object", "properties": {
            "cents": {"type": "integer"}}}, handler=CommandHandlerRef(ref="t:charge")),
        CommandSpec(id="card.refuse", handler=CommandHandlerRef(ref="t:refuse")),
    ]


@dataclass
class Rig:
    kernel: Kernel
    bus: CommandBus
    executor: PipelineCommandExecutor
    effects: Effects


@contextlib.asynccontextmanager
async def rig(store_url: str, *, hooks: Sequence[HookSpec] = (),
              hook_functions: dict[str, Callable[..., Any]] | None = None,
              receipts: type[StoreReceiptLog] = StoreReceiptLog) -> AsyncIterator[Rig]:
    kernel = Kernel(store_url, hooks=hooks, hook_functions=hook_functions)
    effects = Effects()
    registry = CommandRegistry({s.id: s for s in specs()})
    executor = PipelineCommandExecutor(kernel, registry, functions=effects.functions())
    bus = CommandBus(registry, executor, receipts(kernel.store, kernel.coordinator))
    try:
        yield Rig(kernel, bus, executor, effects)
    finally:
        await executor.close()
        kernel.close()
