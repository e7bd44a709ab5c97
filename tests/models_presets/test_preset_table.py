"""One table row per shipped preset: the exact request body for a history with tool calls and
reasoning, reasoning read from deltas in that provider's style, the reasoning echoed back in the
next request as the provider requires, and usage mapped."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentloom.models.presets import list_presets, load_preset
from agentloom.models.reasoning import extractor_for
from agentloom.models.types import Message, ModelRequest, OutputFormat, ThinkParams, ToolCall, Usage

from .support import DETAILS, FINAL_REASONING, READ, RESPONSES_ITEM, TOOL_TURN_REASONING, history

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
NAMED_SCHEMA = {"name": "answer", "schema": SCHEMA, "strict": True}

A2 = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "fs_read", "arguments": '{"path": "a.txt"}'}}
    ],
}
A4 = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "fs_read", "arguments": '{"path": "b.txt"}'}}
    ],
}
A6 = {"role": "assistant", "content": "They say hello world."}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": READ.name, "description": READ.description, "parameters": dict(READ.parameters)},
    }
]
STANDARD_USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 40,
    "total_tokens": 140,
    "prompt_tokens_details": {"cached_tokens": 60},
    "completion_tokens_details": {"reasoning_tokens": 25},
}
STANDARD_MAPPED = Usage(
    input_tokens=100, output_tokens=40, total_tokens=140, cached_tokens=60, reasoning_tokens=25
)


@dataclass(frozen=True)
class Row:
    preset: str
    model: str
    think: ThinkParams | None
    output_format: OutputFormat
    fields: dict[str, Any]  # the exact body, minus messages / input / tools
    assistants: tuple[dict[str, Any], ...]  # messages[2], [4], [6] exactly as sent back
    deltas: tuple[dict[str, Any], ...]
    text: str
    reasoning: str
    echo_key: str | None  # where the streamed reasoning goes back in the next request
    raw_usage: dict[str, Any] = field(default_factory=lambda: STANDARD_USAGE)
    usage: Usage = STANDARD_MAPPED
    details: tuple[dict[str, Any], ...] | None = None


ROWS = [
    Row(
        preset="openai",
        model="gpt-5",
        think=ThinkParams(effort="high"),
        output_format=NAMED_SCHEMA,
        fields={
            "model": "gpt-5",
            "stream": True,
            "stream_options": {"include_usage": True},
            "response_format": {"type": "json_schema", "json_schema": NAMED_SCHEMA},
            "reasoning_effort": "high",
            "max_completion_tokens": 512,
        },
        assistants=(A2, A4, A6),
        deltas=({"role": "assistant", "content": ""}, {"content": "Hel"}, {"content": "lo", "refusal": None}),
        text="Hello",
        reasoning="",
        echo_key=None,
    ),
    Row(
        preset="deepseek",
        model="deepseek-v4-pro",
        think=ThinkParams(enabled=True, effort="medium"),
        output_format="json_object",
        fields={
            "model": "deepseek-v4-pro",
            "stream": True,
            "stream_options": {"include_usage": True},
            "response_format": {"type": "json_object"},
            "thinking": {"type": "enabled"},
            "reasoning_effort": "high",
            "max_tokens": 512,
        },
        # reasoning on tool-call turns; "" on the tool-call turn that had none; not on the answer
        assistants=(
            {**A2, "reasoning_content": TOOL_TURN_REASONING},
            {**A4, "reasoning_content": ""},
            A6,
        ),
        deltas=(
            {"content": None, "reasoning_content": "Let me "},
            {"content": None, "reasoning_content": "check <think>"},
            {"content": "Answer</think>"},
        ),
        text="Answer</think>",
        reasoning="Let me check <think>",
        echo_key="reasoning_content",
        raw_usage={
            "prompt_tokens": 100,
            "completion_tokens": 40,
            "total_tokens": 140,
            "prompt_cache_hit_tokens": 60,
            "prompt_cache_miss_tokens": 40,
            "completion_tokens_details": {"reasoning_tokens": 25},
        },
    ),
    Row(
        preset="glm",
        model="glm-4.7",
        think=ThinkParams(enabled=False),
        output_format="text",
        fields={
            "model": "glm-4.7",
            "stream": True,
            "clear_thinking": False,
            "tool_stream": True,
            "thinking": {"type": "disabled"},
            "max_tokens": 512,
        },
        # interleaved thinking: every recorded reasoning goes back, unmodified
        assistants=(
            {**A2, "reasoning_content": TOOL_TURN_REASONING},
            A4,
            {**A6, "reasoning_content": FINAL_REASONING},
        ),
        deltas=(
            {"role": "assistant", "reasoning_content": "Plan"},
            {"reasoning_content": " it"},
            {"content": "Go"},
        ),
        text="Go",
        reasoning="Plan it",
        echo_key="reasoning_content",
    ),
    Row(
        preset="aliyun",
        model="qwen-plus",
        think=ThinkParams(enabled=True),
        output_format="json_object",
        fields={
            "model": "qwen-plus",
            "stream": True,
            "stream_options": {"include_usage": True},
            "response_format": {"type": "json_object"},
            "enable_thinking": True,
            "max_completion_tokens": 512,
        },
        assistants=(A2, A4, A6),
        deltas=({"content": "", "reasoning_content": "Think"}, {"content": "{}", "reasoning_content": None}),
        text="{}",
        reasoning="Think",
        echo_key=None,
    ),
    Row(
        preset="minimax",
        model="MiniMax-M2.5",
        think=None,
        output_format="text",
        fields={
            "model": "MiniMax-M2.5",
            "stream": True,
            "reasoning_split": True,
            "max_completion_tokens": 512,
        },
        # the complete message back: reasoning_details as received; a <think> span when that is all
        assistants=(
            {**A2, "reasoning_details": [DETAILS[0]]},
            A4,
            {**A6, "content": f"<think>{FINAL_REASONING}</think>They say hello world."},
        ),
        deltas=(
            {
                "content": "",
                "reasoning_details": [{"type": "reasoning.text", "id": "r", "index": 0, "text": "Plan"}],
            },
            {"content": "<thi"},
            {"content": "nk>, then</th"},
            {"content": "ink>Done"},
        ),
        text="Done",
        reasoning="Plan, then",
        echo_key="reasoning_details",
        details=({"type": "reasoning.text", "id": "r", "index": 0, "text": "Plan"},),
    ),
]


def _request(row: Row) -> ModelRequest:
    details = (RESPONSES_ITEM,) if row.preset == "openai-responses" else DETAILS
    return ModelRequest(
        messages=history(details=details),
        tools=(READ,),
        output_format=row.output_format,
        think=row.think,
        max_output_tokens=512,
    )


# The issue-36 presets are replayed end to end in test_i36_6_provider_streams.py instead.
I36_PRESETS = {"anthropic", "gemini", "openrouter", "ollama", "vllm", "lmstudio"}


def test_every_shipped_preset_has_a_row() -> None:
    assert {row.preset for row in ROWS} | {"openai-responses"} | I36_PRESETS == set(list_presets())


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.preset)
def test_chat_body_maps_think_output_limit_and_stream_options_exactly(row: Row) -> None:
    body = load_preset(row.preset).build_body(_request(row), model=row.model)
    assert {k: v for k, v in body.items() if k not in ("messages", "tools")} == row.fields
    assert body["tools"] == CHAT_TOOLS
    json.dumps(body)  # plain JSON, ready for the wire


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.preset)
def test_history_echoes_reasoning_as_the_provider_requires(row: Row) -> None:
    messages = load_preset(row.preset).build_body(_request(row), model=row.model)["messages"]
    assert messages[0] == {"role": "system", "content": "You are terse."}
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "hello"}
    assert (messages[2], messages[4], messages[6]) == row.assistants
    assert messages[7] == {"role": "user", "content": "Thanks"}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.preset)
def test_reasoning_is_read_from_deltas_in_the_providers_style(row: Row) -> None:
    extract = extractor_for(load_preset(row.preset).for_model(row.model))
    text, reasoning, details = "", "", None
    for delta in row.deltas:
        t, r, d = extract(delta)
        text, reasoning, details = text + t, reasoning + r, details or d
    t, r, _ = extract.flush()
    assert (text + t, reasoning + r) == (row.text, row.reasoning)
    assert details == row.details


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.preset)
def test_streamed_reasoning_goes_back_in_the_next_request(row: Row) -> None:
    preset = load_preset(row.preset)
    extract = extractor_for(preset.for_model(row.model))
    pieces = [extract(d) for d in row.deltas] + [extract.flush()]
    details = next((p[2] for p in pieces if p[2]), None)
    turn = Message(
        role="assistant",
        content="".join(p[0] for p in pieces) or None,
        reasoning="".join(p[1] for p in pieces) or None,
        reasoning_details=details,
        tool_calls=(ToolCall(id="c9", name="fs_read", arguments="{}"),),
    )
    follow_up = ModelRequest(
        messages=(
            Message(role="user", content="go"),
            turn,
            Message(role="tool", tool_call_id="c9", content="ok"),
        ),
        tools=(READ,),
    )
    sent = preset.build_body(follow_up, model=row.model)["messages"][1]
    if row.echo_key is None:
        assert not {"reasoning_content", "reasoning_details"} & set(sent)
    elif row.echo_key == "reasoning_details":
        assert sent["reasoning_details"] == [dict(d) for d in row.details or ()]
    else:
        assert sent[row.echo_key] == row.reasoning


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.preset)
def test_usage_is_mapped_from_the_providers_fields(row: Row) -> None:
    assert load_preset(row.preset).map_usage(row.raw_usage) == row.usage


def test_responses_preset_builds_input_items_with_reasoning_items_echoed_verbatim() -> None:
    request = ModelRequest(
        messages=history(details=(RESPONSES_ITEM,)),
        tools=(READ,),
        output_format=NAMED_SCHEMA,
        think=ThinkParams(effort="max"),
        max_output_tokens=512,
    )
    body = load_preset("openai-responses").build_body(request, model="gpt-5")
    assert {k: v for k, v in body.items() if k not in ("input", "tools")} == {
        "model": "gpt-5",
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "text": {"format": {"type": "json_schema", **NAMED_SCHEMA}},
        "reasoning": {"effort": "max"},
        "max_output_tokens": 512,
    }
    assert body["tools"] == [
        {
            "type": "function",
            "name": READ.name,
            "description": READ.description,
            "parameters": dict(READ.parameters),
        }
    ]
    assert body["input"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Read a.txt and b.txt"},
        RESPONSES_ITEM,
        {"type": "function_call", "call_id": "c1", "name": "fs_read", "arguments": '{"path": "a.txt"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "hello"},
        {"type": "function_call", "call_id": "c2", "name": "fs_read", "arguments": '{"path": "b.txt"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "world"},
        {"role": "assistant", "content": "They say hello world."},
        {"role": "user", "content": "Thanks"},
    ]
    usage = {
        "input_tokens": 100,
        "output_tokens": 40,
        "total_tokens": 140,
        "input_tokens_details": {"cached_tokens": 60},
        "output_tokens_details": {"reasoning_tokens": 25},
    }
    assert load_preset("openai-responses").map_usage(usage) == STANDARD_MAPPED


def test_responses_preset_for_a_non_reasoning_model_drops_reasoning_include_and_echo() -> None:
    request = ModelRequest(messages=history(details=(RESPONSES_ITEM,)))
    body = load_preset("openai-responses").build_body(request, model="gpt-4o")
    assert "include" not in body and body["store"] is False
    assert RESPONSES_ITEM not in body["input"]


def test_glm_sends_tool_stream_only_when_tools_are_offered() -> None:
    request = ModelRequest(messages=(Message(role="user", content="hi"),))
    body = load_preset("glm").build_body(request, model="glm-4.7")
    assert body == {
        "model": "glm-4.7",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "clear_thinking": False,
    }


def test_deepseek_legacy_reasoner_never_echoes_reasoning() -> None:
    request = ModelRequest(messages=history())
    messages = load_preset("deepseek").build_body(request, model="deepseek-reasoner")["messages"]
    assert not any("reasoning_content" in m for m in messages)


def test_missing_usage_fields_stay_unknown_rather_than_zero() -> None:
    preset = load_preset("glm")
    assert preset.map_usage({"prompt_tokens": 3}) == Usage(input_tokens=3)
    assert preset.map_usage(None) == Usage()
    assert preset.map_usage({"prompt_tokens": True, "completion_tokens": "7"}) == Usage()


@pytest.mark.parametrize(
    ("preset", "raw", "common"),
    [
        ("deepseek", "insufficient_system_resource", "error"),
        ("glm", "sensitive", "content_filter"),
        ("glm", "network_error", "error"),
        ("openai", "function_call", "tool_calls"),
        ("openai-responses", "max_output_tokens", "length"),
        ("aliyun", "stop", "stop"),
        ("minimax", "something_new", "something_new"),
    ],
)
def test_finish_reasons_map_into_the_common_vocabulary(preset: str, raw: str, common: str) -> None:
    assert load_preset(preset).finish_reason(raw) == common


def test_deepseek_insufficient_balance_is_a_business_error() -> None:
    assert load_preset("deepseek").error_category(402) == "business"
    assert load_preset("deepseek").error_category(429) is None  # the adapter's default table
