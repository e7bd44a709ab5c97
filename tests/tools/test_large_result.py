"""A large result of an SDK tool is stored once (issue #11): the raw result, the effective
result, the Attempt row and the context's ``result_ref`` all name one blob, which
``result_read`` reads back a page at a time; the model sees a preview and the ref.

Every count here is taken from the real database — the SQLite file or the PostgreSQL
schema — with its own driver, over every column of every table.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from tests.conftest import PG_BASE
from tests.pipeline.support import Harness, harness, hook

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.transcript import tool_message
from agentloom.context.blobs import CHUNK_SIZE
from agentloom.kernel import Kernel
from agentloom.models.types import (
    Finish,
    Message,
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from agentloom.pipeline.records import stored_envelope
from agentloom.pipeline.retry import RetryPolicy
from agentloom.results import (
    JsonBlock,
    OperationResult,
    ToolResult,
    parse_result_ref,
    rendered_json,
    result_ref,
)

WAIT_S = 60.0
SIZE = 12 * CHUNK_SIZE  # several chunks and several chunk write sets; still a fast test
SLACK = 256 * 1024  # what else a run stores: previews, requests, context records, events
MARKER = "<<marker 5b0e9c1d: stored exactly once>>"
HINT = re.compile(r"result_ref '([^']+)' from offset (\d+)\]")


def big_text(size: int = SIZE) -> str:
    """About ``size`` UTF-8 bytes of multi-byte text (so chunks cut characters in two) with
    ``MARKER`` once, inside one chunk, past every preview."""
    unit = "".join(f"row {n:06d} ünïcödé ✓ {'x' * (n % 23)}\n" for n in range(4000))
    body = unit * (size // len(unit.encode()) + 1)
    cut = len(body) // 2
    head = body[:cut]
    offset = len(head.encode())
    if offset // CHUNK_SIZE != (offset + len(MARKER)) // CHUNK_SIZE:
        head += " " * len(MARKER)  # keep the marker inside one chunk
    text = head + MARKER + body[cut:]
    assert text.count(MARKER) == 1
    return text


# -- the real database, read with its own driver ---------------------------------------------

@dataclass(frozen=True)
class Stored:
    total: int  # bytes of every text and binary value in every table
    by_table: dict[str, int]
    markers: int  # values holding MARKER


def stored_in(url: str) -> Stored:
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            return _count({name: conn.execute(f"SELECT * FROM {name}").fetchall()
                           for name in names})
        finally:
            conn.close()
    import psycopg

    schema = dict(parse_qsl(urlsplit(url).query))["schema"]
    with psycopg.connect(PG_BASE) as pg:
        names = [r[0] for r in pg.execute("SELECT table_name FROM information_schema.tables "
                                          "WHERE table_schema = %s", (schema,))]
        return _count({name: pg.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()
                       for name in names})


def _count(tables: dict[str, list[Any]]) -> Stored:
    by_table: dict[str, int] = {}
    markers = 0
    needle = MARKER.encode()
    for name, rows in tables.items():
        size = 0
        for row in rows:
            for value in row:
                if isinstance(value, str):
                    value = value.encode()
                if isinstance(value, bytes | memoryview):
                    data = bytes(value)
                    size += len(data)
                    markers += data.count(needle)
        by_table[name] = size
    return Stored(sum(by_table.values()), by_table, markers)


def assert_stored_once(url: str, size: int) -> Stored:
    stored = stored_in(url)
    assert stored.markers == 1, stored
    assert size <= stored.by_table["blob_chunks"] < size + CHUNK_SIZE, stored
    assert stored.total < size + SLACK, stored  # nothing else holds a copy, not even a part
    return stored


# -- an agent run: the tool, and a model that reads the pages the hint names ----------------

class LargeInput(StrictInput):
    size: int


class LargeText(Tool[LargeInput]):
    name = "large.text"
    description = "Return a large text."
    input_type = LargeInput

    def __init__(self, text: str) -> None:
        self.text = text

    async def execute(self, args: LargeInput, ctx: ToolContext) -> str:
        return self.text


class PageReader:
    """An in-process model: turn 1 calls ``large_text``; turn 2 reads the ``result_ref``
    off the tool message it was sent and asks ``result_read`` for ``pages`` (one batch);
    turn 3 answers."""

    model = "page-reader"

    def __init__(self, pages: list[tuple[int, int]]) -> None:
        self.pages = pages
        self.seen: str | None = None  # the large tool message, as the model got it

    async def stream_once(self, request: ModelRequest, attempt: Any
                          ) -> AsyncIterator[ProviderEvent]:
        tools = [m for m in request.messages if m.role == "tool"]
        if not tools:
            yield ToolCallDelta(index=0, id="c0", name="large_text",
                                arguments=json.dumps({"size": SIZE}))
            yield Finish("tool_calls")
        elif len(tools) == 1:
            self.seen = str(tools[0].content)
            found = HINT.search(self.seen)
            if found is None:
                yield TextDelta("no result_ref")
                yield Finish("stop")
                return
            for i, (offset, limit) in enumerate(self.pages):
                yield ToolCallDelta(index=i, id=f"r{i}", name="result_read", arguments=json.dumps(
                    {"result_ref": found.group(1), "offset": offset, "limit": limit}))
            yield Finish("tool_calls")
        else:
            yield TextDelta("done")
            yield Finish("stop")

    async def discover(self, connection: Any = None) -> list[Any]:
        return []

    async def aclose(self) -> None:
        return None


@pytest.fixture
async def runtimes(tmp_path: Path) -> AsyncIterator[Callable[..., Runtime]]:
    made: list[Runtime] = []

    def factory(agent: AgentSpec, *, store: str) -> Runtime:
        made.append(Runtime([agent], store=store, workspace_root=tmp_path / "ws"))
        return made[-1]

    yield factory
    for rt in made:
        await rt.aclose()


async def test_i11_a_large_sdk_tool_result_is_stored_once_and_result_read_returns_its_pages(
    durable_store_url: str, runtimes: Callable[..., Runtime]
) -> None:
    text = big_text()
    data = text.encode()
    marker_at = data.index(MARKER.encode())
    # pages across a chunk boundary and up to the end; none holds the marker (a page read is
    # the read's own result, stored as such)
    pages = [(0, 4096), (marker_at - 5000, 4096), (CHUNK_SIZE - 7, 20), (len(data) - 1000, 65536)]
    model = PageReader(pages)
    rt = runtimes(AgentSpec(name="main", model=model, tools=(LargeText(text),), window=128_000),
                  store=durable_store_url)

    result = await asyncio.wait_for(rt.run("get the large text"), WAIT_S)

    assert result.status == "succeeded", result.error
    assert_stored_once(durable_store_url, len(data))
    # the model saw a preview and the ref, and where the rest starts
    assert model.seen is not None
    found = HINT.search(model.seen)
    assert found is not None, model.seen[-300:]
    ops = rt.kernel.operations(result.run_id)
    (tool_op,) = [op for op in ops if op["capability_key"] == "large.text"]
    assert found.group(1) == result_ref(tool_op["operation_id"])
    shown = model.seen[: model.seen.index("\n[truncated: ")]
    assert text.startswith(shown) and int(found.group(2)) == len(shown.encode())
    # result_read returns exactly those bytes of the stored text
    reads = {}
    for op in ops:
        if op["capability_key"] == "result.read":
            envelope = stored_envelope(op, rt.store)
            assert envelope is not None and envelope.succeeded, envelope
            assert envelope.result is not None
            block = envelope.result.content[0]
            assert isinstance(block, JsonBlock)
            reads[block.data["offset"]] = block.data
    assert sorted(reads) == sorted(offset for offset, _ in pages)
    for offset, limit in pages:
        page = reads[offset]
        assert page["size"] == len(data)
        assert page["text"] == data[offset:offset + limit].decode("utf-8", errors="replace")
        end = min(offset + limit, len(data))
        assert page["next_offset"] == (end if end < len(data) else None)
    # and the stored call still reads back whole (the envelope a replay returns)
    envelope = stored_envelope(tool_op, rt.store)
    assert envelope is not None and envelope.result is not None
    assert envelope.result.text() == text and envelope.result_ref == found.group(1)


# -- the pipeline: after-hooks, recovery, JSON results ---------------------------------------

@pytest.fixture
async def harnesses() -> AsyncIterator[Callable[..., Any]]:
    made: list[Kernel] = []

    async def factory(url: str, *args: Any, **kwargs: Any) -> Harness:
        h = await harness(url, *args, **kwargs)
        made.append(h.kernel)
        return h

    yield factory
    for kernel in made:
        kernel.close()


def returning(result: ToolResult) -> Callable[[dict[str, Any], Any], ToolResult]:
    def behaviour(args: dict[str, Any], ctx: Any) -> ToolResult:
        return result

    return behaviour


async def test_i11_an_after_hook_sees_the_whole_large_result_and_its_patch_keeps_one_copy(
    durable_store_url: str, harnesses: Callable[..., Any]
) -> None:
    text = big_text()
    seen: list[str] = []

    def label(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(event["result"]["content"][0]["text"])
        return {"decision": "allow", "payload_patch": [
            {"op": "add", "path": "/result/metadata/labelled", "value": True}]}

    h = await harnesses(durable_store_url, [hook("label", label, timing="after",
                                                 capability="demo.echo")])
    h.tool.behaviour = returning(ToolResult.success(text))

    result = await h.call({"text": "x"})

    assert result.succeeded and seen == [text]
    assert result.result is not None and result.result.metadata == {"labelled": True}
    assert result.result.text() == text and result.raw is not None and result.raw.metadata == {}
    assert_stored_once(durable_store_url, len(text.encode()))
    (row,) = [op for op in h.ops() if op["capability_key"] == "demo.echo"]
    again = stored_envelope(row, h.kernel.store)
    assert again is not None and again.result is not None
    assert again.result.text() == text and again.result.metadata == {"labelled": True}


async def test_i11_a_large_result_cut_off_in_its_after_hook_is_recovered_from_its_blob(
    durable_store_url: str, harnesses: Callable[..., Any]
) -> None:
    text = big_text()
    entered = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def hang(event: dict[str, Any]) -> dict[str, Any]:
        loop.call_soon_threadsafe(entered.set)  # the hook runs in an event loop of its own
        await asyncio.Event().wait()  # the process "dies" here: the task is cancelled
        raise AssertionError("unreachable")

    spec = hook("hang", hang, timing="after", capability="demo.echo", timeout_s=60.0)
    h = await harnesses(durable_store_url, [spec])
    h.tool.behaviour = returning(ToolResult.success(text))
    call = asyncio.ensure_future(h.call({"text": "x"}))
    await asyncio.wait_for(entered.wait(), WAIT_S)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    h.kernel.close()

    # another process takes the run over and finishes the call from its raw result
    later = await harnesses(durable_store_url, [spec], tool=h.tool)
    lease = later.kernel.claim(h.lease.run_id)
    ctx = later.kernel.invocation_context(lease, release_id="rel", retry=RetryPolicy())
    (recovered,) = await later.kernel.recover(ctx)

    assert recovered.succeeded and len(h.tool.calls) == 1  # post-processing only
    assert recovered.result is not None and recovered.result.text() == text
    assert recovered.result_ref == result_ref(recovered.operation_id)
    assert_stored_once(durable_store_url, len(text.encode()))
    read = await later.kernel.bus.request("result_read", {
        "result_ref": recovered.result_ref, "offset": 3 * CHUNK_SIZE - 5, "limit": 10}, ctx)
    assert read.succeeded and read.result is not None
    page = read.result.content[0]
    assert isinstance(page, JsonBlock)
    assert page.data["text"] == text.encode()[3 * CHUNK_SIZE - 5:3 * CHUNK_SIZE + 5].decode(
        "utf-8", errors="replace")


async def test_i11_a_large_json_result_is_stored_once_as_the_text_result_read_reads(
    durable_store_url: str, harnesses: Callable[..., Any]
) -> None:
    value = {"rows": big_text(SIZE // 2).splitlines(), "n": 1}
    h = await harnesses(durable_store_url)
    h.tool.behaviour = returning(ToolResult.success(value))

    result = await h.call({"text": "x"})

    assert result.succeeded and result.result_ref == result_ref(result.operation_id)
    rendered = rendered_json(value).encode()
    assert_stored_once(durable_store_url, len(rendered))
    read = await h.kernel.bus.request("result_read", {
        "result_ref": result.result_ref, "offset": 0, "limit": 100}, h.ctx)
    assert read.succeeded and read.result is not None
    page = read.result.content[0]
    assert isinstance(page, JsonBlock) and page.data["text"] == rendered[:100].decode(errors="replace")
    (row,) = [op for op in h.ops() if op["capability_key"] == "demo.echo"]
    again = stored_envelope(row, h.kernel.store)
    assert again is not None and again.result is not None
    assert again.result.content == (JsonBlock(value),)


# -- one helper for the ref format ------------------------------------------------------------

def test_i11_result_refs_are_made_and_parsed_by_one_helper() -> None:
    assert result_ref("op-1") == "res:op-1"
    assert result_ref("op-1", "stdout") == "res:op-1:stdout"
    assert parse_result_ref("res:op-1") == ("op-1", None)
    assert parse_result_ref("res:op-1:stdout") == ("op-1", "stdout")
    for bad in ("op-1", "/etc/passwd", "res:", "res::x", "res:op-1:", "file-blob:x"):
        assert parse_result_ref(bad) is None, bad
    with pytest.raises(ValueError):
        result_ref("a:b")


def test_i11_a_cut_tool_message_names_the_stored_ref_and_the_byte_offset_of_the_rest() -> None:
    text = "é" * 20_000
    ref = result_ref("op-9")
    envelope = OperationResult(operation_id="op-9", capability="t", outcome="succeeded",
                               result=ToolResult.success(text), attempts=1, result_ref=ref)
    message: Message = tool_message(ToolCall(id="c", name="t", arguments="{}"), envelope)
    found = HINT.search(str(message.content))
    assert found is not None and found.group(1) == ref
    assert int(found.group(2)) == len(str(message.content).split("\n[")[0].encode())
