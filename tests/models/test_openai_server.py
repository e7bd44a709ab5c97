"""The scripted OpenAI-compatible server itself: wire format, recording, bounded shutdown."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest
from openai import AsyncOpenAI

from agentloom.testing.openai_server import (
    Comment,
    Disconnect,
    Reply,
    ScriptedOpenAIServer,
    Stall,
    Status,
    chat_turn,
    responses_turn,
)


def post(srv: ScriptedOpenAIServer, path: str, body: dict[str, Any],
         headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    url = urlsplit(srv.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    conn.request("POST", f"/v1{path}", body=json.dumps(body),
                 headers={"Content-Type": "application/json", **(headers or {})})
    return conn.getresponse()


def test_streams_chunked_sse_frames_with_comments_and_done() -> None:
    with ScriptedOpenAIServer() as srv:
        srv.script([Comment("ping"), *chat_turn("hi", usage=(1, 2))])
        response = post(srv, "/chat/completions", {"model": "m", "stream": True})
        text = response.read().decode()
    assert response.status == 200 and response.getheader("Content-Type", "").startswith("text/event-stream")
    frames = [f for f in text.split("\n\n") if f]
    assert frames[0] == ": ping" and frames[-1] == "data: [DONE]"
    chunks = [json.loads(f.removeprefix("data: ")) for f in frames[1:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "m" for c in chunks)
    assert chunks[-1] == {**chunks[-1], "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2,
                                                                 "total_tokens": 3}}


def test_responses_events_carry_their_type_and_a_sequence_number() -> None:
    with ScriptedOpenAIServer() as srv:
        srv.script(responses_turn("hey"))
        text = post(srv, "/responses", {"model": "m", "stream": True}).read().decode()
    frames = [f.split("\n") for f in text.split("\n\n") if f]
    types = [f[0].removeprefix("event: ") for f in frames]
    payloads = [json.loads(f[1].removeprefix("data: ")) for f in frames]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert [p["type"] for p in payloads] == types
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))


def test_records_every_request_body_and_header() -> None:
    with ScriptedOpenAIServer() as srv:
        srv.script(chat_turn("a"))
        post(srv, "/chat/completions", {"model": "m", "stream": True, "x": [1]},
             {"Authorization": "Bearer k", "X-Trace": "t"}).read()
        recorded = srv.requests[0]
    assert (recorded.method, recorded.path, recorded.turn) == ("POST", "/v1/chat/completions", 0)
    assert recorded.json == {"model": "m", "stream": True, "x": [1]}
    assert recorded.headers["authorization"] == "Bearer k" and recorded.headers["x-trace"] == "t"
    assert srv.pending == 0


def test_status_step_sends_its_headers_and_body() -> None:
    with ScriptedOpenAIServer() as srv:
        srv.script([Status(429, {"error": {"message": "slow"}}, {"Retry-After": "3"})], [Status(502, "bad")])
        limited = post(srv, "/chat/completions", {"stream": True})
        limited_body = json.loads(limited.read())
        gateway = post(srv, "/chat/completions", {"stream": True})
        gateway_body = gateway.read()
    assert (limited.status, limited.getheader("Retry-After")) == (429, "3")
    assert limited_body == {"error": {"message": "slow"}}
    assert (gateway.status, gateway_body) == (502, b"bad")


def test_an_unscripted_request_is_a_500_and_still_recorded() -> None:
    with ScriptedOpenAIServer() as srv:
        response = post(srv, "/chat/completions", {"stream": True})
        body = json.loads(response.read())
    assert response.status == 500 and "no turn left" in body["error"]["message"]
    assert len(srv.requests) == 1 and srv.requests[0].turn is None


def test_disconnect_cuts_the_body_mid_stream() -> None:
    with ScriptedOpenAIServer() as srv:
        srv.script([*chat_turn("partial")[:2], Disconnect()])
        response = post(srv, "/chat/completions", {"stream": True})
        with pytest.raises(http.client.IncompleteRead) as info:
            response.read()
    assert b"partial" in info.value.partial


def test_close_wakes_a_scripted_stall_and_joins() -> None:
    srv = ScriptedOpenAIServer().start()
    srv.script([Comment(), Stall(60)])
    outcome: list[object] = []

    def client() -> None:
        try:
            outcome.append(post(srv, "/chat/completions", {"stream": True}).read())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=client)
    thread.start()
    while not srv.requests:
        thread.join(0.01)
    srv.close()
    thread.join(10)
    assert not thread.is_alive() and outcome


async def test_the_sdk_reads_non_streaming_replies_and_model_listing() -> None:
    with ScriptedOpenAIServer(models=[{"id": "a", "object": "model", "created": 0, "owned_by": "me"}]) as srv:
        srv.script(chat_turn("whole", reasoning="why", tool_calls=[("c", "f", ['{"a"', ": 1}"])]),
                   [Reply({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "verbatim"}}]})])
        client = AsyncOpenAI(api_key="k", base_url=srv.base_url, max_retries=0)
        ask: Any = [{"role": "user", "content": "q"}]
        try:
            folded = await client.chat.completions.create(model="m", messages=ask)
            verbatim = await client.chat.completions.create(model="m", messages=ask)
            models = [m.id async for m in client.models.list()]
        finally:
            await client.close()
    message = folded.choices[0].message
    assert message.content == "whole" and (message.model_extra or {})["reasoning_content"] == "why"
    assert message.tool_calls is not None
    call: Any = message.tool_calls[0]
    assert call.function.arguments == '{"a": 1}'
    assert folded.choices[0].finish_reason == "tool_calls" and folded.usage is not None
    assert verbatim.choices[0].message.content == "verbatim"
    assert models == ["a"]
