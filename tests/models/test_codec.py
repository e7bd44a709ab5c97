"""One model codec (#13 item 4): a model request reaches the adapter typed, the store keeps its
JSON payload with the same keys, a hook's change is decoded, each history message is encoded
once, and one rule refuses a broken response wherever it is checked.

Through a real kernel (memory store), bus, pipeline and hooks; only the provider is a fake
adapter that keeps the requests it is given."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.models_gateway.support import Gateway, gateway, model_hook, request

from agentloom.models.aggregate import Aggregator
from agentloom.models.calls import (
    MODEL_RESPONSE_INVALID,
    RESPONSE_INVALID_CODES,
    broken_call,
    check_response,
)
from agentloom.models.codec import encode_request, request_to_payload
from agentloom.models.errors import ModelAttemptError
from agentloom.models.gateway import ModelCallFailed
from agentloom.models.ports import AttemptInfo
from agentloom.models.types import (
    Finish,
    Message,
    ModelDescriptor,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)


class Recording:
    """An adapter that keeps every request it is given and answers each with ``events``."""

    def __init__(self, *events: ProviderEvent) -> None:
        self.requests: list[ModelRequest] = []
        self.events = events or (TextDelta("it is sunny"), Finish("stop"))

    async def stream_once(self, request: ModelRequest, attempt: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        self.requests.append(request)
        for event in self.events:
            yield event

    async def discover(self, connection: Any = None) -> list[ModelDescriptor]:
        return []

    async def aclose(self) -> None:
        pass


async def made(tmp_path: Path, model: Recording, **kwargs: Any) -> Gateway:
    return await gateway("memory://", tmp_path, {"main": model}, **kwargs)


async def closed(g: Gateway) -> None:
    await g.kernel.models.aclose()
    g.kernel.close()


async def test_13_4_the_adapter_gets_the_callers_request_and_the_store_keeps_its_json_payload(
    tmp_path: Path,
) -> None:
    model = Recording()
    g = await made(tmp_path, model)
    try:
        sent = request()
        response = await g.generate(sent)
        (op,) = g.operations()
    finally:
        await closed(g)
    assert model.requests[0] is sent  # typed all the way: never decoded from the payload
    assert response.text == "it is sunny"
    assert op["data"]["request"]["proposed_arguments"] == {  # the keys of every stored run
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{"name": "get_weather", "description": "Weather for a city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                  "required": ["city"]}}],
        "output_format": "text", "think": None, "max_output_tokens": None,
    }
    assert op["data"]["raw"]["content"][0]["data"]["text"] == "it is sunny"


async def test_13_4_a_before_hook_change_reaches_the_adapter_decoded(tmp_path: Path) -> None:
    def patch(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/payload/messages/0/content", "value": "And in Oslo?"}]}

    model = Recording()
    g = await made(tmp_path, model, hooks=[model_hook("pre", patch)])
    try:
        sent = request()
        await g.generate(sent)
    finally:
        await closed(g)
    (got,) = model.requests
    assert got is not sent
    assert got == dataclasses.replace(sent, messages=(Message(role="user", content="And in Oslo?"),))


async def test_13_4_an_after_hook_change_is_what_the_caller_gets(tmp_path: Path) -> None:
    def redact(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/content/0/data/text", "value": "[redacted]"}]}

    g = await made(tmp_path, Recording(), hooks=[model_hook("post", redact, timing="after")])
    try:
        response = await g.generate()
    finally:
        await closed(g)
    assert (response.text, response.finish_reason) == ("[redacted]", "stop")


def test_13_4_each_message_is_encoded_once_and_its_memo_is_invisible() -> None:
    task = Message(role="user", content="hi")
    first, ok_first = encode_request(ModelRequest(messages=(task,)))
    turn = ModelRequest(messages=(task, Message(role="assistant", content="hello")),
                        tools=request().tools, max_output_tokens=64)
    second, ok_second = encode_request(turn)

    assert ok_first and ok_second
    assert second["messages"][0] is first["messages"][0]  # the same encoding, not a new one
    assert first == request_to_payload(ModelRequest(messages=(task,)))
    assert second == request_to_payload(turn)
    assert task == Message(role="user", content="hi") and "_payload" not in repr(task)
    changed = dataclasses.replace(task, content="bye")
    assert encode_request(ModelRequest(messages=(changed,)))[0]["messages"] == [
        {"role": "user", "content": "bye"}]


def test_13_4_a_message_the_schema_refuses_leaves_the_payload_to_the_full_check() -> None:
    robot = Message(role="robot", content="x")  # type: ignore[arg-type]
    assert encode_request(ModelRequest(messages=(robot,)))[1] is False
    assert encode_request(ModelRequest(messages=()))[1] is False  # minItems: 1
    again = ModelRequest(messages=(Message(role="user", content="x"), robot))
    assert encode_request(again)[1] is False  # the part's verdict is kept with its encoding


def test_13_4_one_rule_for_a_broken_response_with_one_code() -> None:
    twice = (ToolCall(id="c", name="f", arguments="{}", index=0),
             ToolCall(id="c", name="f", arguments="{}", index=1))
    nameless = (ToolCall(id="c", name="", arguments="{}", index=0),)
    unnamed_id = (ToolCall(id="", name="f", arguments="{}", index=0),)
    assert broken_call(twice) == (twice[1], "tool call #1 (f) has a missing or repeated id: "
                                  "it repeats the id 'c' of another tool call")
    assert broken_call(nameless) == (nameless[0], "tool call #0 has no tool name")
    assert broken_call(unnamed_id) == (unnamed_id[0],
                                       "tool call #0 (f) has a missing or repeated id: it has none")
    assert broken_call(twice[:1]) is None and broken_call(()) is None
    assert check_response(ModelResponse(text="", tool_calls=twice)) == broken_call(twice)[1]  # type: ignore[index]

    aggregator = Aggregator()  # the Attempt applies the same rule to what it assembled
    for event in (ToolCallDelta(0, id="c", name="f"), ToolCallDelta(1, id="c", name="f"),
                  Finish("tool_calls")):
        aggregator.feed(event)
    with pytest.raises(ModelAttemptError) as caught:
        aggregator.response()
    assert (caught.value.error.code, caught.value.error.category) == (MODEL_RESPONSE_INVALID, "protocol")
    assert broken_call(twice)[1] in caught.value.error.message  # type: ignore[index]
    assert caught.value.error.details == {"tool_call_index": 1}
    # a run stored before the codes were merged replays its corrective turn the same way
    assert {"MODEL_RESPONSE_INVALID", "MODEL_INVALID_RESPONSE"} == RESPONSE_INVALID_CODES


async def test_13_4_the_gateway_refuses_an_effective_response_by_the_same_rule(tmp_path: Path) -> None:
    def unname(event: Any) -> dict[str, Any]:
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": "/result/content/0/data/tool_calls/0/name", "value": ""}]}

    model = Recording(ToolCallDelta(0, id="call_1", name="get_weather", arguments="{}"),
                      Finish("tool_calls"))
    g = await made(tmp_path, model, hooks=[model_hook("post", unname, timing="after")])
    try:
        with pytest.raises(ModelCallFailed) as caught:
            await g.generate()
    finally:
        await closed(g)
    assert caught.value.error.code == MODEL_RESPONSE_INVALID
    assert caught.value.error.message == ("the effective model response is invalid: "
                                          "tool call #0 has no tool name")
