"""Issue 11, the property: whatever text or bytes come in, a run ends in a recorded terminal state.

Hypothesis draws arbitrary Unicode (lone surrogates and NUL included) and arbitrary bytes and
puts them where outside text enters a run: the model's final text (as JSON on the real OpenAI
wire, or as raw bytes inside the SSE frame), its tool-call arguments (a JSON object or any
string at all), an SDK tool's result (text or bytes), before- and after-hook patches (any op,
any pointer, any value) and file names (any bytes, in their printed ``\\xNN`` form, written,
listed, globbed and grepped). Each example is one scripted run on a real store (SQLite file,
PostgreSQL schema): the run's result is terminal, the store says the same, and every
operation it recorded has an outcome. Nothing may raise.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import fresh_store_url

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.events import TERMINAL
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.models.ports import Connection
from agentloom.store import open_store
from agentloom.testing.openai_server import Raw, ScriptedOpenAIServer, chat_turn
from agentloom.workspace._names import render_name

EXAMPLES = int(os.environ.get("AGENTLOOM_PROPERTY_EXAMPLES", "50"))
ANY_CHAR = st.characters(codec=None, exclude_categories=())  # surrogates and NUL included
ANY_TEXT = st.text(ANY_CHAR, max_size=40)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8)
POINTERS = st.sampled_from([
    "/payload", "/payload/text", "/payload/path", "/payload/content", "/result",
    "/result/content", "/result/content/0/text", "/result/metadata", "/result/artifacts",
    "/result/status", "/capability", "/run_id", "", "/", "~", "/payload/~1x",
]) | ANY_TEXT
PATCH_OP = st.fixed_dictionaries({
    "op": st.sampled_from(["add", "replace", "remove", "test", "move", "copy"]) | ANY_TEXT,
    "path": POINTERS,
}, optional={"value": JSON_VALUE, "from": POINTERS})
HOOK_REPLY = st.one_of(
    st.fixed_dictionaries({"decision": st.sampled_from(["allow", "deny"]) | ANY_TEXT},
                          optional={"reason": ANY_TEXT,
                                    "payload_patch": st.lists(PATCH_OP, max_size=3)}),
    JSON_VALUE,
)

# What the hooks answer for the current example (set before each run).
CURRENT: dict[str, Any] = {}


def before_hook(event: Any) -> Any:
    return CURRENT["before"]


def after_hook(event: Any) -> Any:
    return CURRENT["after"]


class EchoInput(StrictInput):
    text: str


class Echo(Tool[EchoInput]):
    name = "echo"
    description = "Return whatever this example says a tool returns."

    async def execute(self, args: EchoInput, ctx: ToolContext) -> Any:
        return CURRENT["result"]


def _sse(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def _raw_text_turn(data: bytes) -> list[Any]:
    """A final answer whose content is ``data`` as raw bytes inside the JSON string."""
    escaped = data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    escaped = escaped.replace(b"\r", b"\\r")
    head = b'{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    return [Raw(b"".join([
        _sse(head + b'[{"index":0,"delta":{"role":"assistant","content":"' + escaped + b'"}}]}'),
        _sse(head + b'[{"index":0,"delta":{},"finish_reason":"stop"}]}'),
        b"data: [DONE]\n\n"]))]


@st.composite
def examples(draw: st.DrawFn) -> dict[str, Any]:
    name_bytes = draw(st.binary(min_size=1, max_size=12).filter(
        lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")))
    # Mostly an object (then the whole batch runs); sometimes anything at all (then the
    # response is refused and re-sent, and the scripted re-sends end the run).
    shape = draw(st.sampled_from(["text", "text", "text", "object", "json", "any"]))
    arguments = draw({
        "text": st.builds(lambda text: json.dumps({"text": text}), ANY_TEXT),
        "object": st.builds(json.dumps, st.dictionaries(ANY_TEXT, JSON_VALUE, max_size=3)),
        "json": st.builds(json.dumps, JSON_VALUE),
        "any": ANY_TEXT,
    }[shape])
    return {
        "arguments": arguments,
        "name": draw(st.one_of(st.just(render_name(os.fsdecode(name_bytes))), ANY_TEXT)),
        "content": draw(ANY_TEXT),
        "pattern": draw(ANY_TEXT),
        "result": draw(st.one_of(ANY_TEXT, st.binary(max_size=40), JSON_VALUE)),
        "before": draw(HOOK_REPLY),
        "after": draw(HOOK_REPLY),
        "final": draw(st.one_of(ANY_TEXT.map(lambda t: ("text", t)),
                                st.binary(max_size=40).map(lambda b: ("bytes", b)))),
    }


def _script(server: ScriptedOpenAIServer, example: dict[str, Any]) -> None:
    def call(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
        return call_id, name, json.dumps(arguments)

    server.script(chat_turn("", tool_calls=[
        ("e1", "echo", example["arguments"]),
        call("w1", "fs_write", {"path": example["name"], "content": example["content"]}),
        call("l1", "fs_list", {"path": "."}),
        call("g1", "fs_glob", {"pattern": "*"}),
        call("r1", "fs_grep", {"pattern": example["pattern"]}),
    ]))
    kind, final = example["final"]
    server.script(chat_turn(final) if kind == "text" else _raw_text_turn(final))
    for _ in range(4):  # the re-sends a response the runtime refuses may cost
        server.script(chat_turn("done"))


async def _one_run(url: str, workspaces: Path, example: dict[str, Any]) -> None:
    CURRENT.clear()
    CURRENT.update(example)
    with ScriptedOpenAIServer() as server:
        _script(server, example)
        hooks = [HookSpec(hook_id="b", timing="before", match=HookMatch(capability="echo"),
                          handler=HandlerRef(ref="prop:before")),
                 HookSpec(hook_id="a", timing="after", match=HookMatch(capability="echo"),
                          handler=HandlerRef(ref="prop:after"))]
        rt = Runtime([AgentSpec(name="main", model=Connection(
            base_url=server.base_url, model="scripted-model", api_key="sk-test"),
            tools=(Echo(), "fs.write", "fs.list", "fs.glob", "fs.grep"), window=128_000)],
            store=url, hooks=hooks, workspace_root=workspaces,
            hook_functions={"prop:before": before_hook, "prop:after": after_hook})
        try:
            result = await asyncio.wait_for(rt.run("go", session="property"), 60)
            assert result.status in TERMINAL, result
            row = rt.store.get("runs", {"run_id": result.run_id})
            assert row is not None and row["status"] == result.status
            for op in rt.store.query("operations", {"run_id": result.run_id}):
                assert op["outcome"] is not None, op
        finally:
            await rt.aclose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_i11_property_arbitrary_text_and_bytes_always_end_in_a_recorded_terminal_state(
    backend: str, tmp_path: Path,
) -> None:
    url = fresh_store_url(backend, tmp_path)
    loop = asyncio.new_event_loop()

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(example=examples())
    def check(example: dict[str, Any]) -> None:
        loop.run_until_complete(_one_run(url, tmp_path / "workspaces", example))

    try:
        check()
    finally:
        loop.close()
        if backend == "postgres":
            store = open_store(url)
            store.drop_schema()  # type: ignore[attr-defined]
            store.close()
