"""000 §5.2.5: a model before-hook's patch is checked against the model's window. A patch whose
added fixed material (a system note, a user message: what compaction never shortens) cannot fit
the window is dropped as invalid (``HOOK_PATCH_OVER_WINDOW``, ``patch_error`` recorded, a
``hook.warning``), and the call goes on with the unpatched request; a patch that fits is applied.

Real parts: a kernel on a real store, the model gateway, the real OpenAI SDK against the
scripted OpenAI-wire server, python hooks. The window is the one the agent loop sets around its
model calls (``agentloom.limits.call_window``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.models_gateway.support import API_KEY, Gateway, gateway, model_hook, request

from agentloom.hooks.patch import HOOK_PATCH_OVER_WINDOW
from agentloom.limits import call_window, current_window
from agentloom.models.connect import connection_for
from agentloom.models.types import Message, ModelRequest, ToolCall
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

WINDOW = 2_000  # tokens; with 200 reserved for output the input may use 1,800 (~5,400 chars)
OUTPUT_RESERVE = 200
TOO_LONG = "policy " * 1_500  # ~10,500 characters: far beyond the input limit
FITS = "Answer in one short sentence."


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
async def made(store_url: str, tmp_path: Path) -> AsyncIterator[list[Gateway]]:
    kept: list[Gateway] = []
    yield kept
    for g in kept:
        await g.kernel.models.aclose()
        g.kernel.close()


def _append(note: str) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/payload/messages/-",
             "value": {"role": "system", "content": note}}]


async def _gateway(store_url: str, tmp_path: Path, server: ScriptedOpenAIServer, note: str,
                   made: list[Gateway], ops: list[dict[str, Any]] | None = None) -> Gateway:
    def append_note(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": ops if ops is not None else _append(note)}

    provider = connection_for("openai", model="gpt-5", base_url=server.base_url, api_key=API_KEY)
    g = await gateway(store_url, tmp_path, {"main": provider},
                      hooks=[model_hook("add-note", append_note)])
    made.append(g)
    return g


def _calls(call_id: str) -> Message:
    return Message(role="assistant", content="",
                   tool_calls=(ToolCall(id=call_id, name="get_weather", arguments="{}"),))


def _hook_row(g: Gateway) -> dict[str, Any]:
    (op,) = g.operations()
    (row,) = g.kernel.store.query("hook_invocations", {"operation_id": op["operation_id"]})
    data: dict[str, Any] = row["data"]
    return data


async def test_s5_2_a_model_patch_whose_fixed_material_exceeds_the_window_is_dropped(
    store_url: str, tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway],
) -> None:
    server.script(chat_turn("Sunny."))
    g = await _gateway(store_url, tmp_path, server, TOO_LONG, made)

    with call_window(WINDOW, OUTPUT_RESERVE):
        response = await g.generate()

    assert response.text == "Sunny."  # the call went on, unpatched
    (sent,) = server.model_requests
    assert sent.json["messages"] == [{"role": "user", "content": request().messages[0].content}]
    data = _hook_row(g)
    assert data["patch_error"]["code"] == HOOK_PATCH_OVER_WINDOW
    assert f"{WINDOW - OUTPUT_RESERVE} the window leaves" in data["patch_error"]["message"]
    assert data["changes"] is None
    warnings = [p for kind, p in g.observed if kind == "hook.warning"]
    assert [(w["hook_id"], w["code"]) for w in warnings] == [("add-note", HOOK_PATCH_OVER_WINDOW)]
    (op,) = g.operations()
    assert op["outcome"] == "succeeded"
    assert current_window() is None  # the window is only known inside the call's block


async def test_s5_2_a_model_patch_that_fits_the_window_is_applied(
    store_url: str, tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway],
) -> None:
    server.script(chat_turn("Sunny."))
    g = await _gateway(store_url, tmp_path, server, FITS, made)

    with call_window(WINDOW, OUTPUT_RESERVE):
        response = await g.generate()

    assert response.text == "Sunny."
    (sent,) = server.model_requests
    assert sent.json["messages"][-1] == {"role": "system", "content": FITS}
    data = _hook_row(g)
    assert "patch_error" not in data
    assert data["changes"] is not None
    assert not [p for kind, p in g.observed if kind == "hook.warning"]


async def test_s5_2_a_model_patch_growing_only_what_compaction_replaces_is_applied(
    store_url: str, tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway],
) -> None:
    # An older tool result is not fixed material: a compaction summary replaces it, so a
    # patch that makes it long is not refused by the window check (000 §5.2.5).
    history = ModelRequest(messages=(
        Message(role="user", content="look up alpha and beta"),
        _calls("c1"),
        Message(role="tool", tool_call_id="c1", name="get_weather", content="short"),
        _calls("c2"),
        Message(role="tool", tool_call_id="c2", name="get_weather", content="short"),
    ), tools=request().tools)
    server.script(chat_turn("Sunny."))
    g = await _gateway(store_url, tmp_path, server, "", made, ops=[
        {"op": "replace", "path": "/payload/messages/2/content", "value": TOO_LONG}])

    with call_window(WINDOW, OUTPUT_RESERVE):
        await g.generate(history)

    (sent,) = server.model_requests
    assert sent.json["messages"][2]["content"] == TOO_LONG
    assert "patch_error" not in _hook_row(g)


async def test_s5_2_without_a_known_window_a_model_patch_is_not_window_checked(
    store_url: str, tmp_path: Path, server: ScriptedOpenAIServer, made: list[Gateway],
) -> None:
    server.script(chat_turn("Sunny."))
    g = await _gateway(store_url, tmp_path, server, TOO_LONG, made)

    await g.generate()  # no window set: nothing to check against (000 §4.8 is the caller's)

    (sent,) = server.model_requests
    assert sent.json["messages"][-1] == {"role": "system", "content": TOO_LONG}
    assert "patch_error" not in _hook_row(g)


def test_s5_2_call_window_is_known_only_inside_its_block() -> None:
    with call_window(WINDOW, OUTPUT_RESERVE) as w:
        assert current_window() == w and w.input_limit == WINDOW - OUTPUT_RESERVE
    assert current_window() is None
