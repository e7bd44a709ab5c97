"""The transcript's long-result hint names only a ``result_ref`` that ``result_read`` can
read (issue #11), whatever preview limit the context is configured with: a result the
context kept whole is shown whole, a cut one names its stored ref and where the rest starts.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests.pipeline.support import Harness, harness

from agentloom.agent.transcript import PREVIEW_LIMIT, tool_message
from agentloom.models.types import ToolCall
from agentloom.results import JsonBlock, ToolResult

REF = re.compile(r"res:[^'\s\]]+")
HINT = re.compile(r"result_ref '([^']+)' from offset (\d+)\]$")


@pytest.fixture
async def make(store_url: str) -> AsyncIterator[Callable[..., Any]]:
    made: list[Harness] = []

    async def factory() -> Harness:
        made.append(await harness(store_url))
        return made[-1]

    yield factory
    for h in made:
        h.kernel.close()


def lines(chars: int) -> str:
    return "".join(f"line {n:05d} ✓\n" for n in range(chars // 13))


@pytest.mark.parametrize("chars", [22_000, 60_000], ids=["under-the-preview-limit",
                                                         "over-the-preview-limit"])
async def test_i11_with_a_preview_limit_above_16384_the_hint_names_only_a_ref_that_reads(
    make: Callable[..., Any], chars: int
) -> None:
    h = await make()
    h.kernel.context.preview_limit = 40_000  # above the transcript's cut (16,384 characters)
    text = lines(chars)
    assert len(text) > PREVIEW_LIMIT
    h.tool.behaviour = lambda args, ctx: ToolResult.success(text)
    envelope = await h.call({"text": "x"})

    content = str(tool_message(ToolCall(id="c1", name="demo_echo", arguments="{}"),
                               envelope).content)

    for ref in REF.findall(content):  # every ref the model is shown reads
        read = await h.kernel.bus.request("result_read", {"result_ref": ref}, h.ctx)
        assert read.succeeded, (ref, read.error)
    if content == text:
        return  # kept whole by the context: shown whole, no ref
    found = HINT.search(content)
    assert found is not None, content[-300:]
    offset = int(found.group(2))
    assert text.encode()[:offset].decode() == content[: content.index("\n[truncated: ")]
    rest = await h.kernel.bus.request(
        "result_read", {"result_ref": found.group(1), "offset": offset, "limit": 65536}, h.ctx)
    assert rest.succeeded and rest.result is not None
    page = rest.result.content[0]
    assert isinstance(page, JsonBlock)
    assert page.data["text"] == text.encode()[offset:].decode()  # the rest, exactly
