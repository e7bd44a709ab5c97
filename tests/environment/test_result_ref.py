"""A truncated result names the exact ``result_ref`` the model passes to ``result_read``
(issue #11, point 7), end to end: a run whose model reads the ref off the text it is sent."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.sandbox.conftest import BACKENDS, require_backend, searchable

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.models.types import (
    Finish,
    Message,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCallDelta,
)
from agentloom.pipeline.records import stored_envelope

WAIT_S = 60.0
EXEC_HINT = re.compile(r"result_read\(result_ref='([^']+)'\)")
TRANSCRIPT_HINT = re.compile(r"read the rest with result_read and result_ref '([^']+)'")


class FollowsTheRef:
    """An in-process model: its first turn makes ``first_call``; its second finds
    ``hint`` in the tool message it was sent and calls ``result_read`` with exactly the ref
    it names; its third answers with what ``result_read`` returned."""

    model = "follows-the-ref"

    def __init__(self, first_call: tuple[str, dict[str, Any]], hint: re.Pattern[str]) -> None:
        self.first_call = first_call
        self.hint = hint
        self.seen: list[str] = []  # the tool messages' text, as the model got it
        self.ref: str | None = None

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        tools: list[Message] = [m for m in request.messages if m.role == "tool"]
        if not tools:
            name, arguments = self.first_call
            yield ToolCallDelta(index=0, id="c1", name=name, arguments=json.dumps(arguments))
            yield Finish("tool_calls")
        elif len(tools) == 1:
            self.seen.append(str(tools[0].content))
            found = self.hint.search(self.seen[0])
            if found is None:
                yield TextDelta("no result_ref to read")
                yield Finish("stop")
                return
            self.ref = found.group(1)
            yield ToolCallDelta(index=0, id="c2", name="result_read",
                                arguments=json.dumps({"result_ref": self.ref, "limit": 64}))
            yield Finish("tool_calls")
        else:
            self.seen.append(str(tools[1].content))
            yield TextDelta(self.seen[1])
            yield Finish("stop")

    async def discover(self, connection: Any = None) -> list[Any]:
        return []

    async def aclose(self) -> None:
        return None


@pytest.fixture(params=BACKENDS)
def exec_backend(request: pytest.FixtureRequest) -> str:
    """Each confining backend this machine has (the others skip with their reason)."""
    require_backend(request.param)
    return str(request.param)


@pytest.fixture
async def runtime_factory(tmp_path: Path) -> AsyncIterator[Callable[..., Runtime]]:
    made: list[Runtime] = []
    searchable(tmp_path)  # as root, bubblewrap reaches the work folder by path as the sandbox uid

    def factory(agent: AgentSpec, *, store: str, **kwargs: Any) -> Runtime:
        made.append(Runtime([agent], store=store, workspace_root=tmp_path / "ws", **kwargs))
        return made[-1]

    yield factory
    for rt in made:
        await rt.aclose()


def read_back(rt: Runtime, run_id: str) -> dict[str, Any]:
    """The body ``result_read`` returned in the run (it must have succeeded)."""
    (op,) = [op for op in rt.kernel.operations(run_id) if op["capability_key"] == "result.read"]
    envelope = stored_envelope(op, rt.store)
    assert envelope is not None and envelope.succeeded, envelope
    assert envelope.result is not None
    body: dict[str, Any] = envelope.result.content[0].data  # type: ignore[union-attr]
    return body


async def test_i11_7_truncated_exec_output_names_the_result_ref_the_model_passes_to_result_read(
    store_url: str, exec_backend: str, runtime_factory: Callable[..., Runtime]
) -> None:
    model = FollowsTheRef(("exec", {"argv": ["seq", "1", "200000"]}), EXEC_HINT)
    rt = runtime_factory(AgentSpec(name="main", model=model, tools=("exec",), window=128_000),
                         store=store_url, sandbox_backend=exec_backend)

    result = await asyncio.wait_for(rt.run("count to 200000"), WAIT_S)

    assert result.status == "succeeded", result.error
    shown = json.loads(model.seen[0])  # the exec result exactly as the model was sent it
    assert shown["truncated"] is True and shown["sandbox_mode"] == exec_backend
    assert model.ref is not None and model.ref == shown["stdout_ref"]
    assert "stderr_ref" not in shown  # nothing was written to stderr, nothing stored
    body = read_back(rt, result.run_id)
    assert body["text"].startswith("1\n2\n3\n4\n5\n")
    assert body["size"] == len("".join(f"{n}\n" for n in range(1, 200001)))
    assert json.loads(str(result.output))["text"] == body["text"]


class LongInput(StrictInput):
    chars: int


class LongText(Tool[LongInput]):
    name = "long.text"
    description = "Return a long text."
    input_type = LongInput

    async def execute(self, args: LongInput, ctx: ToolContext) -> str:
        return "".join(f"line {n}\n" for n in range(args.chars // 8))


async def test_i11_7_a_long_tool_result_cut_for_the_model_names_a_result_ref_that_reads(
    store_url: str, runtime_factory: Callable[..., Runtime]
) -> None:
    model = FollowsTheRef(("long_text", {"chars": 80_000}), TRANSCRIPT_HINT)
    rt = runtime_factory(AgentSpec(name="main", model=model, tools=(LongText(),), window=128_000),
                         store=store_url)

    result = await asyncio.wait_for(rt.run("get a long text"), WAIT_S)

    assert result.status == "succeeded", result.error
    assert model.ref is not None, model.seen[0][-300:]
    assert read_back(rt, result.run_id)["text"].startswith("line 0\nline 1\n")
