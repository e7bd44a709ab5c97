"""Issue 36 (6), acceptance 2: each new preset's Chat endpoint replayed through the real OpenAI
SDK against the scripted server — tool calls, usage, errors, the request body and the
``Authorization`` header a preset sends (or, keyless, does not).

No provider is reachable from here: every stream shape replayed below is written from that
provider's public documentation (Anthropic's OpenAI SDK compatibility page, Google's Gemini
OpenAI compatibility page, OpenRouter's streaming / errors / reasoning pages, Ollama's OpenAI
compatibility page, vLLM's OpenAI-compatible server page, LM Studio's OpenAI compatibility and
REST v0 pages), not recorded from a live endpoint. Where a shape is only known from third-party
reports the preset file's ``notes.unverified`` says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from agentloom.models.adapters import OpenAIChatAdapter
from agentloom.models.aggregate import complete_once
from agentloom.models.connect import connection_for
from agentloom.models.errors import ModelAttemptError
from agentloom.models.ports import AttemptInfo, Connection
from agentloom.models.presets import load_preset
from agentloom.models.types import Message, ModelRequest, ModelResponse, ThinkParams, ToolCall, ToolDef, Usage
from agentloom.testing.openai_server import (
    Chunk,
    Comment,
    Done,
    RecordedRequest,
    ScriptedOpenAIServer,
    Status,
    Step,
    chat_delta,
    chat_finish,
    chat_role,
    chat_text,
    chat_tool_call,
    chat_usage,
)

WEATHER = ToolDef(
    name="get_weather", description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def ask(**kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="Weather in Paris and Rome?"),),
                        tools=(WEATHER,), **kwargs)


def attempt() -> AttemptInfo:
    return AttemptInfo(first_output_timeout_s=5.0, deadline=time.time() + 30.0)


def connect(preset: str, model: str, server: ScriptedOpenAIServer, env: Mapping[str, str],
            **kwargs: Any) -> Connection:
    base_url = kwargs.pop("base_url", server.base_url)
    return connection_for(preset, model=model, base_url=base_url, environ=env, **kwargs)


async def play(connection: Connection, request: ModelRequest) -> ModelResponse:
    adapter = OpenAIChatAdapter(connection)
    try:
        return await complete_once(adapter, request, attempt())
    finally:
        await adapter.aclose()


async def fails(connection: Connection, request: ModelRequest) -> ModelAttemptError:
    with pytest.raises(ModelAttemptError) as info:
        await play(connection, request)
    return info.value


def usage_chunk(prompt: int, completion: int, **extra: Any) -> Chunk:
    return Chunk({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                           "total_tokens": prompt + completion, **extra}})


def whole_calls(*calls: tuple[str, str, str], finish: str | None = None) -> Chunk:
    """Several complete tool calls in one chunk (Gemini, Ollama stream them whole)."""
    entries = [{"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": args}}
               for i, (cid, name, args) in enumerate(calls)]
    return Chunk({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": entries},
                               "finish_reason": finish}]})


PARIS_ROME = (ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}', index=0),
              ToolCall(id="c2", name="get_weather", arguments='{"city": "Rome"}', index=1))


def body(request: RecordedRequest) -> dict[str, Any]:
    assert isinstance(request.json, dict)
    return request.json


# -- anthropic --------------------------------------------------------------------------------

ANTHROPIC_ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}


def streamed_calls() -> Sequence[Step]:
    """Tool calls as OpenAI streams them: id and name first, then argument fragments."""
    return [
        chat_tool_call(0, id="c1", name="get_weather", arguments=""),
        chat_tool_call(0, arguments='{"city": '), chat_tool_call(0, arguments='"Paris"}'),
        chat_tool_call(1, id="c2", name="get_weather", arguments=""),
        chat_tool_call(1, arguments='{"city": "Rome"}'),
    ]


async def test_i36_6_anthropic_streams_parallel_tool_calls_usage_and_the_thinking_switch(
    server: ScriptedOpenAIServer,
) -> None:
    server.script([chat_role(), *streamed_calls(), chat_finish("tool_calls"),
                   usage_chunk(120, 40), Done()])
    connection = connect("anthropic", "claude-sonnet-4-5", server, ANTHROPIC_ENV)
    response = await play(connection, ask(think=ThinkParams(enabled=True), max_output_tokens=4096))
    assert response.tool_calls == PARIS_ROME and response.finish_reason == "tool_calls"
    assert response.usage == Usage(input_tokens=120, output_tokens=40, total_tokens=160)
    sent = server.model_requests[0]
    assert sent.headers["authorization"] == "Bearer sk-ant-test-0123456789"
    assert sent.path == "/v1/chat/completions"
    assert body(sent)["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body(sent)["stream_options"] == {"include_usage": True}
    assert body(sent)["max_completion_tokens"] == 4096
    assert "reasoning_effort" not in body(sent) and "response_format" not in body(sent)


async def test_i36_6_anthropic_overloaded_is_retried_like_a_rate_limit(server: ScriptedOpenAIServer) -> None:
    server.script([Status(529, {"type": "error", "error": {"type": "overloaded_error",
                                                           "message": "Overloaded"}})])
    err = await fails(connect("anthropic", "claude-sonnet-4-5", server, ANTHROPIC_ENV), ask())
    assert (err.error.category, err.error.details["status"]) == ("rate_limit", 529)
    assert "Overloaded" in err.error.message


def test_i36_6_anthropic_refuses_what_its_layer_ignores() -> None:
    preset = load_preset("anthropic")
    for capability in ("json_object", "json_schema", "think_effort", "reasoning"):
        assert not preset.supports(capability, model="claude-opus-4-1")
    assert preset.descriptor("claude-opus-4-1").window == 200_000  # type: ignore[union-attr]


# -- gemini -----------------------------------------------------------------------------------

GEMINI_ENV = {"GEMINI_API_KEY": "AIza-test-0123456789"}


async def test_i36_6_gemini_streams_whole_tool_calls_and_maps_effort(server: ScriptedOpenAIServer) -> None:
    # Streaming, the compatibility layer ends a tool-call turn with finish_reason "stop" (its
    # non-streaming answer says "tool_calls"): the calls are kept, and the loop goes by them.
    server.script([
        whole_calls(("c1", "get_weather", '{"city": "Paris"}'), ("c2", "get_weather", '{"city": "Rome"}')),
        chat_finish("stop"),
        usage_chunk(80, 20, completion_tokens_details={"reasoning_tokens": 12}),
        Done(),
    ])
    connection = connect("gemini", "gemini-2.5-flash", server, GEMINI_ENV)
    response = await play(connection, ask(think=ThinkParams(effort="minimal")))
    assert response.tool_calls == PARIS_ROME and response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=80, output_tokens=20, total_tokens=100, reasoning_tokens=12)
    sent = body(server.model_requests[0])
    assert sent["reasoning_effort"] == "low"  # minimal is sent as low
    assert sent["stream_options"] == {"include_usage": True}
    assert server.model_requests[0].headers["authorization"] == "Bearer AIza-test-0123456789"
    assert load_preset("gemini").descriptor("gemini-2.5-pro").window == 1_048_576  # type: ignore[union-attr]


async def test_i36_6_gemini_list_shaped_error_body_is_classified_by_status(
    server: ScriptedOpenAIServer,
) -> None:
    error = [{"error": {"code": 400, "message": "Invalid JSON payload received.",
                        "status": "INVALID_ARGUMENT"}}]
    server.script([Status(400, json.dumps(error))])
    err = await fails(connect("gemini", "gemini-2.5-flash", server, GEMINI_ENV), ask())
    assert (err.error.code, err.error.category) == ("MODEL_REQUEST_INVALID", "validation")


# -- openrouter -------------------------------------------------------------------------------

OPENROUTER_ENV = {"OPENROUTER_API_KEY": "sk-or-v1-test-0123456789",
                  "OPENROUTER_SITE_URL": "https://example.org", "OPENROUTER_APP_NAME": "AgentLoom test"}


async def test_i36_6_openrouter_streams_reasoning_details_tool_calls_and_attribution_headers(
    server: ScriptedOpenAIServer,
) -> None:
    details = {"type": "reasoning.text", "index": 0, "text": "Two cities: two calls.", "format": "unknown"}
    server.script([
        Comment("OPENROUTER PROCESSING"),
        chat_role(),
        chat_delta(reasoning="Two cities: two calls.", reasoning_details=[details]),
        *streamed_calls(),
        chat_finish("tool_calls"),
        usage_chunk(50, 30, cost=0.0002, prompt_tokens_details={"cached_tokens": 10}),
        Done(),
    ])
    connection = connect("openrouter", "anthropic/claude-sonnet-4.5", server, OPENROUTER_ENV)
    response = await play(connection, ask(think=ThinkParams(effort="high")))
    assert response.tool_calls == PARIS_ROME
    assert response.reasoning == "Two cities: two calls."
    assert response.usage == Usage(input_tokens=50, output_tokens=30, total_tokens=80, cached_tokens=10)
    sent = server.model_requests[0]
    assert sent.headers["http-referer"] == "https://example.org"
    assert sent.headers["x-title"] == "AgentLoom test"
    assert body(sent)["reasoning"] == {"effort": "high"}


async def test_i36_6_openrouter_mid_stream_error_fails_the_attempt(server: ScriptedOpenAIServer) -> None:
    server.script([
        chat_role(), chat_text("Par"),
        Chunk({"error": {"code": 502, "message": "Provider returned error"},
               "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}),
        Done(),
    ])
    err = await fails(connect("openrouter", "openai/gpt-5", server, OPENROUTER_ENV), ask())
    assert (err.error.code, err.error.external_outcome) == ("MODEL_STREAM_ERROR", "known")
    assert "Provider returned error" in err.error.message


async def test_i36_6_openrouter_out_of_credits_is_a_business_error(server: ScriptedOpenAIServer) -> None:
    server.script([Status(402, {"error": {"code": 402, "message": "Insufficient credits"}})])
    connection = connect("openrouter", "openai/gpt-5", server, {"OPENROUTER_API_KEY": "sk-or-x1234"})
    err = await fails(connection, ask())
    assert err.error.category == "business"
    assert "http-referer" not in server.model_requests[0].headers  # attribution only when set


def test_i36_6_openrouter_discovers_the_window_from_its_model_listing() -> None:
    listing = [{"id": "openai/gpt-5", "context_length": 400000,
                "top_provider": {"context_length": 400000, "max_completion_tokens": 128000}}]
    with ScriptedOpenAIServer(models=listing) as srv:
        connection = connect("openrouter", "openai/gpt-5", srv, {"OPENROUTER_API_KEY": "sk-or-x1234"})
        assert connection.discovery is not None
        found = connection.discovery(connection)
        assert (found.window, found.output_limit) == (400000, 128000)
        assert srv.requests[-1].path == "/v1/models"


# -- ollama (no key) --------------------------------------------------------------------------


async def test_i36_6_ollama_sends_no_authorization_and_splits_think_tags(
    server: ScriptedOpenAIServer,
) -> None:
    server.script(
        [chat_role(), whole_calls(("c1", "get_weather", '{"city": "Paris"}'),
                                  ("c2", "get_weather", '{"city": "Rome"}'), finish="tool_calls"),
         usage_chunk(30, 9), Done()],
        [chat_role(), chat_text("<think>Both are sunny"), chat_text(".</think>Sunny in both."),
         chat_finish("stop"), usage_chunk(60, 12), Done()],
    )
    connection = connect("ollama", "qwen3:8b", server, {})
    assert connection.api_key == "" and connection.api_key_env is None
    first = await play(connection, ask())
    second = await play(connection, ask())
    assert first.tool_calls == PARIS_ROME
    assert (second.text, second.reasoning) == ("Sunny in both.", "Both are sunny.")
    assert second.usage == Usage(input_tokens=60, output_tokens=12, total_tokens=72)
    for sent in server.model_requests:
        assert "authorization" not in sent.headers
        assert body(sent)["stream_options"] == {"include_usage": True}


async def test_i36_6_ollama_unknown_model_is_not_found(server: ScriptedOpenAIServer) -> None:
    server.script([Status(404, {"error": {"message": 'model "llama9" not found, try pulling it first',
                                          "type": "api_error", "param": None, "code": None}})])
    err = await fails(connect("ollama", "llama9", server, {}), ask())
    assert err.error.category == "not_found" and "try pulling it first" in err.error.message
    assert "authorization" not in server.model_requests[0].headers


def test_i36_6_ollama_declares_no_discovery() -> None:
    assert load_preset("ollama").discovery is None  # /v1/models states no context length


# -- vllm (key optional) ----------------------------------------------------------------------


async def test_i36_6_vllm_reasoning_content_and_tool_calls_without_a_key(
    server: ScriptedOpenAIServer,
) -> None:
    server.script([chat_role(), chat_delta(reasoning_content="Call the tool twice."), *streamed_calls(),
                   chat_finish("tool_calls"), chat_usage(40, 25), Done()])
    response = await play(connect("vllm", "Qwen/Qwen3-8B", server, {}), ask())
    assert response.tool_calls == PARIS_ROME and response.reasoning == "Call the tool twice."
    assert response.usage == Usage(input_tokens=40, output_tokens=25, total_tokens=65)
    assert "authorization" not in server.model_requests[0].headers


async def test_i36_6_vllm_sends_its_key_when_set_and_reads_its_error_shape(
    server: ScriptedOpenAIServer,
) -> None:
    server.script([Status(400, {"object": "error", "message": "max_tokens is too large", "type":
                                "BadRequestError", "param": None, "code": 400})])
    connection = connect("vllm", "Qwen/Qwen3-8B", server, {"VLLM_API_KEY": "token-abc123"})
    err = await fails(connection, ask())
    assert server.model_requests[0].headers["authorization"] == "Bearer token-abc123"
    assert err.error.category == "validation"


async def test_i36_6_vllm_unauthorized_without_a_key_names_the_variable(server: ScriptedOpenAIServer) -> None:
    server.script([Status(401, {"error": "Unauthorized"})])
    err = await fails(connect("vllm", "Qwen/Qwen3-8B", server, {}, config_name="local"), ask())
    assert err.error.category == "permission"
    assert "sent no API key" in err.error.message and "VLLM_API_KEY" in err.error.message


def test_i36_6_vllm_discovers_max_model_len_without_a_key() -> None:
    listing = [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768}]
    with ScriptedOpenAIServer(models=listing) as srv:
        connection = connect("vllm", "Qwen/Qwen3-8B", srv, {})
        assert connection.discovery is not None
        assert connection.discovery(connection).window == 32768
        assert "authorization" not in srv.requests[-1].headers


# -- lmstudio (no key by default) -------------------------------------------------------------


async def test_i36_6_lmstudio_sends_no_stream_options_and_reads_usage_anyway(
    server: ScriptedOpenAIServer,
) -> None:
    server.script([chat_role(), chat_delta(reasoning_content="Check both."), *streamed_calls(),
                   Chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                          "usage": {"prompt_tokens": 33, "completion_tokens": 11, "total_tokens": 44}}),
                   Done()])
    response = await play(connect("lmstudio", "qwen/qwen3-8b", server, {}), ask())
    assert response.tool_calls == PARIS_ROME and response.reasoning == "Check both."
    assert response.usage == Usage(input_tokens=33, output_tokens=11, total_tokens=44)
    sent = server.model_requests[0]
    assert "stream_options" not in body(sent) and "authorization" not in sent.headers


async def test_i36_6_lmstudio_rest_v0_variant_discovers_max_context_length(
    server: ScriptedOpenAIServer,
) -> None:
    server.models = [{"id": "qwen/qwen3-8b", "object": "model", "type": "llm", "state": "loaded",
                      "max_context_length": 40960}]
    base = server.base_url.removesuffix("/v1") + "/api/v0"
    connection = connect("lmstudio", "qwen/qwen3-8b", server, {}, variant="rest_v0", base_url=base)
    assert connection.discovery is not None
    assert connection.discovery(connection).window == 40960
    assert server.requests[-1].path == "/api/v0/models"
    server.script([chat_role(), chat_text("ok"), chat_finish("stop"), Done()])
    assert (await play(connection, ask())).text == "ok"
    assert server.model_requests[0].path == "/api/v0/chat/completions"


def test_i36_6_openrouter_sends_reasoning_details_back_on_tool_call_turns() -> None:
    from .support import DETAILS, request

    body = load_preset("openrouter").build_body(request(details=DETAILS), model="openai/gpt-5")
    messages = body["messages"]
    assert messages[2]["reasoning_details"] == [dict(d) for d in DETAILS]  # the tool-call turn
    assert "reasoning_details" not in messages[6]  # the final answer
