"""An in-process scripted model that takes one note per turn, and the ``note`` tool it calls:
runs of any number of steps without a model server (one step = one model turn + one call)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentloom import StrictInput, Tool, ToolContext
from agentloom.models.types import Finish, ModelRequest, ProviderEvent, TextDelta, ToolCallDelta


class NoteTaker:
    """Turn ``k`` (read off the history: the task, then a call and a result per turn) calls
    ``note`` with ``text(k)`` while ``k < steps(request)``, then answers ``done``. Records the
    length of every history it was sent, and every request."""

    model = "notes"

    def __init__(self, steps: Callable[[ModelRequest], int],
                 text: Callable[[int], str] = lambda k: f"line {k}") -> None:
        self.steps = steps
        self.text = text
        self.sent: list[int] = []
        self.requests: list[ModelRequest] = []  # every request, as the provider would get it

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        self.sent.append(len(request.messages))
        self.requests.append(request)
        k = (len(request.messages) - 1) // 2
        if k < self.steps(request):
            yield ToolCallDelta(index=0, id=f"c{k}", name="note",
                                arguments=json.dumps({"text": self.text(k)}))
            yield Finish("tool_calls")
        else:
            yield TextDelta("done")
            yield Finish("stop")

    async def discover(self, connection: Any = None) -> list[Any]:
        return []

    async def aclose(self) -> None:
        return None


class NoteInput(StrictInput):
    text: str


class Note(Tool[NoteInput]):
    name = "note"
    description = "Take a note."

    async def execute(self, args: NoteInput, ctx: ToolContext) -> str:
        return "noted"
