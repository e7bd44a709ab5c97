"""Model adapters, clocks, aggregation and error classification (000 §4, §3.3, §9 model
bullets), end to end through the official SDK against the scripted server."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from tests.models.conftest import API_KEY, MODEL, WEATHER, attempt, request

from agentloom.attempts import AttemptContext
from agentloom.cancel import CancelToken
from agentloom.models.adapters import OpenAIChatAdapter, OpenAIResponsesAdapter, build_chat_body
from agentloom.models.aggregate import Aggregator, complete_once
from agentloom.models.errors import ModelAttemptError, parse_retry_after
from agentloom.models.ports import AttemptInfo, Connection, ReasoningPiece
from agentloom.models.timers import StreamTimers, drive
from agentloom.models.types import (
    Finish,
    Heartbeat,
    Message,
    ModelDescriptor,
    ModelRequest,
    ProviderEvent,
    ReasoningDelta,
    TextDelta,
    ThinkParams,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageEvent,
)
from agentloom.testing.openai_server import (
    Chunk,
    Comment,
    Disconnect,
    Done,
    Headers,
    ScriptedOpenAIServer,
    Stall,
    Status,
    chat_delta,
    chat_finish,
    chat_reasoning_details,
    chat_role,
    chat_text,
    chat_tool_call,
    chat_turn,
    chat_usage,
    resp_event,
    responses_turn,
)

LONG_STALL = 30.0  # never waited out: a clock fires first and close() wakes the server


async def fails(coro: Any) -> ModelAttemptError:
    with pytest.raises(ModelAttemptError) as info:
        await coro
    return info.value


# -- the provider stream is still received normally (§9) -------------------------------------


async def test_s9_provider_stream_is_received_and_aggregated_chat(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script(chat_turn(
        ["The weather ", "is fetched."], reasoning=["Need ", "a tool."],
        tool_calls=[("call_A", "get_weather", ['{"ci', 'ty": "Par', 'is"}'])], usage=(21, 9),
    ))
    response = await complete_once(chat, request(), attempt())
    assert response.text == "The weather is fetched."
    assert response.reasoning == "Need a tool."
    assert response.tool_calls == (ToolCall(id="call_A", name="get_weather", arguments='{"city": "Paris"}'),)
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(input_tokens=21, output_tokens=9, total_tokens=30)
    assert response.model == MODEL and response.response_id == "chatcmpl-scripted-0"


async def test_s9_provider_stream_is_received_and_aggregated_responses(
    server: ScriptedOpenAIServer, responses: OpenAIResponsesAdapter
) -> None:
    server.script(responses_turn(
        ["Hel", "lo"], reasoning=["think ", "hard"],
        tool_calls=[("call_1", "get_weather", ['{"city":', '"Paris"}']),
                    ("call_2", "get_weather", '{"city": "Rome"}')],
        usage=(40, 12), response_id="resp_42",
    ))
    response = await complete_once(responses, request(), attempt())
    assert response.text == "Hello"
    assert response.reasoning == "think hard"
    assert response.reasoning_details is not None and response.reasoning_details[0]["type"] == "reasoning"
    assert [(c.index, c.id, c.name, c.arguments) for c in response.tool_calls] == [
        (0, "call_1", "get_weather", '{"city":"Paris"}'), (1, "call_2", "get_weather", '{"city": "Rome"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (40, 12)
    assert response.response_id == "resp_42"


async def test_responses_incomplete_is_a_terminal_frame_with_reason_length(
    server: ScriptedOpenAIServer, responses: OpenAIResponsesAdapter
) -> None:
    server.script(responses_turn("cut here", incomplete="max_output_tokens"))
    response = await complete_once(responses, request(), attempt())
    assert (response.text, response.finish_reason) == ("cut here", "length")


async def test_responses_failed_event_is_a_provider_error_with_the_partial_text(
    server: ScriptedOpenAIServer, responses: OpenAIResponsesAdapter
) -> None:
    server.script([
        resp_event("response.output_text.delta", item_id="m", output_index=0, content_index=0, delta="par"),
        resp_event("response.failed", response={"id": "r", "object": "response", "status": "failed",
                                                "model": MODEL, "output": [],
                                                "error": {"code": "server_error", "message": "boom"}}),
    ])
    err = await fails(complete_once(responses, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.provider_code) == (
        "MODEL_STREAM_ERROR", "unknown", "server_error")
    assert err.incomplete is not None and err.incomplete.text == "par"


async def test_repeated_ids_in_every_tool_call_delta_are_set_once(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script(chat_turn(tool_calls=[("call_A", "get_weather", ['{"city"', ': "Paris"}'])],
                            repeat_ids=True))
    response = await complete_once(chat, request(), attempt())
    assert response.tool_calls == (ToolCall(id="call_A", name="get_weather", arguments='{"city": "Paris"}'),)


async def test_several_fragments_in_one_chunk_and_interleaved_indexes(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([
        chat_role(),
        chat_delta(tool_calls=[
            {"index": 0, "id": "a", "type": "function",
             "function": {"name": "get_weather", "arguments": "{"}},
            {"index": 1, "id": "b", "type": "function",
             "function": {"name": "get_weather", "arguments": ""}},
        ]),
        chat_tool_call(1, arguments='{"city": "Rome"}'),
        chat_tool_call(0, arguments='"city": "Oslo"}'),
        chat_finish("tool_calls"), Done(),
    ])
    response = await complete_once(chat, request(), attempt())
    assert [(c.id, c.arguments) for c in response.tool_calls] == [
        ("a", '{"city": "Oslo"}'), ("b", '{"city": "Rome"}')]
    assert response.usage is None


async def test_frames_missing_optional_fields_are_tolerated(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([
        Chunk({"choices": None}), Chunk({"choices": [{"delta": None}]}),
        Chunk({"choices": [{"delta": {"content": "no index"}}]}),
        Chunk({"choices": [{"delta": {"tool_calls": [{"id": "c", "function": {"name": "get_weather",
                                                                              "arguments": "{}"}}]}}]}),
        Chunk({"choices": [{"index": 0, "finish_reason": "tool_calls"}]}), Done(),
    ])
    response = await complete_once(chat, request(), attempt())
    assert response.text == "no index"
    assert response.tool_calls == (ToolCall(id="c", name="get_weather", arguments="{}"),)


async def test_reasoning_details_style_is_merged_by_index(server: ScriptedOpenAIServer) -> None:
    def details_extractor(delta: Mapping[str, Any]) -> ReasoningPiece:
        items = delta.get("reasoning_details") or []
        content = delta.get("content")
        return (content or "", "".join(i.get("text", "") for i in items), tuple(items) or None)

    adapter = OpenAIChatAdapter(Connection(base_url=server.base_url, api_key=API_KEY, model=MODEL,
                                           reasoning=details_extractor))
    server.script([chat_role(), chat_reasoning_details("Let me ", id="r1"),
                   chat_reasoning_details("think.", id="r1"), chat_text("Done."), chat_finish(), chat_usage(),
                   Done()])
    try:
        response = await complete_once(adapter, request(), attempt())
    finally:
        await adapter.aclose()
    assert response.reasoning == "Let me think."
    assert response.reasoning_details == (
        {"type": "reasoning.text", "index": 0, "text": "Let me think.", "id": "r1"},)
    assert response.text == "Done."


class _ThinkTags:
    """A minimal stateful ``<think>`` splitter, standing in for a preset's extractor."""

    def __init__(self) -> None:
        self.buffer = ""
        self.flushed = 0

    def __call__(self, delta: Mapping[str, Any]) -> ReasoningPiece:
        self.buffer += delta.get("content") or ""
        return "", "", None

    def flush(self) -> ReasoningPiece:
        self.flushed += 1
        head, _, tail = self.buffer.partition("</think>")
        return tail, head.removeprefix("<think>"), None


async def test_stateful_reasoning_extractor_is_fresh_per_attempt_and_flushed_at_the_terminal_frame(
    server: ScriptedOpenAIServer,
) -> None:
    made: list[_ThinkTags] = []

    def factory() -> _ThinkTags:
        made.append(_ThinkTags())
        return made[-1]

    adapter = OpenAIChatAdapter(Connection(base_url=server.base_url, api_key=API_KEY, model=MODEL,
                                           reasoning_factory=factory))
    server.script(chat_turn(["<thi", "nk>plan</th", "ink>answer"]), chat_turn("<think>b</think>c"))
    try:
        first = await complete_once(adapter, request(), attempt())
        second = await complete_once(adapter, request(), attempt())
    finally:
        await adapter.aclose()
    assert (first.text, first.reasoning) == ("answer", "plan")
    assert (second.text, second.reasoning) == ("c", "b")
    assert [m.flushed for m in made] == [1, 1]


# -- first output, heartbeats, idle, deadline (§9) -------------------------------------------


async def test_s9_heartbeats_do_not_count_as_first_output(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([
        Comment(), chat_role(), chat_delta(content=""), chat_delta(), Comment("ping"),
        chat_usage(), Chunk({"choices": []}), Stall(LONG_STALL),
    ])
    err = await fails(complete_once(chat, request(), attempt(first_output_timeout_s=1.0)))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_FIRST_OUTPUT_TIMEOUT", "timeout", "unknown")
    assert err.incomplete is not None and err.incomplete.empty
    assert err.incomplete.events >= 4  # the frames did arrive; none of them was output


async def test_s9_first_output_timeout_counts_from_the_request_start(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([Stall(LONG_STALL), chat_text("too late")])  # not even the response headers
    err = await fails(complete_once(chat, request(), attempt(first_output_timeout_s=0.2)))
    assert err.error.code == "MODEL_FIRST_OUTPUT_TIMEOUT"


async def test_s9_heartbeat_then_late_text_within_the_limit_succeeds(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([Headers(), Comment(), chat_role(), Stall(0.05), Comment(), Stall(0.05),
                   chat_text("late but in time"), chat_finish(), chat_usage(), Done()])
    response = await complete_once(chat, request(), attempt(first_output_timeout_s=5.0))
    assert response.text == "late but in time"


async def test_s9_a_complete_terminal_frame_ends_the_first_output_wait(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    # No output at all, then the terminal frame and silence: without the terminal frame
    # ending the wait, the first-output clock (0.5 s) would fire before the grace (0.8 s).
    server.script([chat_role(), chat_finish("stop"), Stall(LONG_STALL)])
    response = await complete_once(chat, request(), attempt(first_output_timeout_s=0.5, finish_grace_s=0.8))
    assert (response.text, response.finish_reason) == ("", "stop")


async def test_s9_stalled_stream_fails_on_the_idle_timeout(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_role(), chat_text("partial "), Stall(LONG_STALL), chat_text("never")])
    err = await fails(complete_once(chat, request(), attempt(stream_idle_timeout_s=0.2)))
    assert (err.error.code, err.error.category) == ("MODEL_STREAM_IDLE_TIMEOUT", "timeout")
    assert err.incomplete is not None and err.incomplete.text == "partial "


async def test_s9_idle_timeout_is_off_by_default(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    assert AttemptInfo().stream_idle_timeout_s is None
    server.script([chat_text("a"), Stall(1.3), chat_text("b"), chat_finish(), Done()])
    response = await complete_once(chat, request(), attempt(first_output_timeout_s=1.0))
    assert response.text == "ab"  # after the first output only the run deadline applies


async def test_s9_run_deadline_applies_after_first_output(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_text("started"), Stall(LONG_STALL)])
    err = await fails(complete_once(chat, request(), attempt(deadline=time.time() + 1.0)))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "RUN_DEADLINE_EXCEEDED", "timeout", "unknown")
    assert err.incomplete is not None and err.incomplete.text == "started"


async def test_s9_run_deadline_already_passed_sends_nothing(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    err = await fails(complete_once(chat, request(), attempt(deadline=time.time() - 1)))
    assert (err.error.code, err.error.external_outcome) == ("RUN_DEADLINE_EXCEEDED", "not_started")
    assert server.model_requests == []


class _StopOnText:
    """The user presses stop as soon as the first text arrives (deterministic: no sleeps)."""

    def __init__(self, inner: OpenAIChatAdapter, cancel: CancelToken) -> None:
        self.inner, self.cancel = inner, cancel
        self.connection = inner.connection

    async def stream_once(self, req: ModelRequest, info: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        async for event in self.inner.stream_once(req, info):
            yield event
            if isinstance(event, TextDelta):
                self.cancel.set("user stop")

    async def discover(self, connection: Connection | None = None) -> list[ModelDescriptor]:
        return await self.inner.discover(connection)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_run_stop_fails_the_attempt_with_its_incomplete_material(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    cancel = CancelToken()
    server.script([chat_text("half"), Stall(LONG_STALL)])
    err = await fails(complete_once(_StopOnText(chat, cancel), request(), attempt(cancel=cancel)))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "RUN_STOPPED", "cancelled", "unknown")
    assert err.incomplete is not None and err.incomplete.text == "half"


class _CancelOnText(_StopOnText):
    """Something outside the Attempt cancels the task (as the pipeline's own stop or
    deadline handling would) as soon as the first text arrives."""

    async def stream_once(self, req: ModelRequest, info: AttemptInfo) -> AsyncIterator[ProviderEvent]:
        async for event in self.inner.stream_once(req, info):
            yield event
            if isinstance(event, TextDelta):
                task = asyncio.current_task()
                assert task is not None
                task.cancel()


async def test_an_outside_cancellation_propagates_and_the_caller_keeps_the_incomplete(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_text("so far"), Stall(LONG_STALL)])
    aggregator = Aggregator()
    with pytest.raises(asyncio.CancelledError):
        await complete_once(_CancelOnText(chat, CancelToken()), request(), attempt(), aggregator=aggregator)
    assert aggregator.incomplete("RUN_STOPPED").text == "so far"


def test_attempt_info_from_the_pipeline_context() -> None:
    ctx = AttemptContext(operation_id="op1", attempt_no=2, run_id="r", role=None, deadline=123.0)
    info = AttemptInfo.from_context(ctx, stream_idle_timeout_s=9)
    assert (info.attempt_no, info.deadline, info.cancel, info.operation_id) == (2, 123.0, ctx.cancel, "op1")
    assert (info.first_output_timeout_s, info.stream_idle_timeout_s) == (60.0, 9)


async def test_trailing_frames_after_finish_get_a_bounded_grace(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_text("all there"), chat_finish(), Stall(LONG_STALL), chat_usage(), Done()])
    response = await complete_once(chat, request(), attempt(finish_grace_s=0.1))
    assert (response.text, response.usage) == ("all there", None)


async def test_the_idle_clock_starts_with_the_first_event_and_is_not_deferred() -> None:
    never = asyncio.Event()

    async def one_heartbeat_then_silence() -> AsyncIterator[ProviderEvent]:
        yield Heartbeat("role")
        await never.wait()
        yield TextDelta("never")

    info = attempt(first_output_timeout_s=30.0, stream_idle_timeout_s=0.1)
    with pytest.raises(ModelAttemptError) as caught:
        await drive(one_heartbeat_then_silence(), info, Aggregator().feed)
    assert caught.value.error.code == "MODEL_STREAM_IDLE_TIMEOUT"


def test_stream_timers_rule_with_a_fake_clock() -> None:
    timers = StreamTimers(AttemptInfo(first_output_timeout_s=60, stream_idle_timeout_s=None),
                          start=100.0, deadline_at=3700.0)
    assert timers.next_limit() == (160.0, "first_output")
    not_output: list[ProviderEvent] = [Heartbeat("role"), TextDelta(""), UsageEvent(Usage()),
                                       ToolCallDelta(0, id="call_A"), ReasoningDelta("")]
    for t, event in enumerate(not_output, start=101):
        timers.observe(event, float(t))
        assert timers.next_limit() == (160.0, "first_output"), event
    timers.observe(ToolCallDelta(0, arguments="{"), 110.0)
    assert timers.next_limit() == (3700.0, "deadline")

    idle = StreamTimers(AttemptInfo(first_output_timeout_s=60, stream_idle_timeout_s=5), start=0.0,
                        deadline_at=None)
    assert idle.next_limit() == (60.0, "first_output")  # idle counts between events only
    idle.observe(Heartbeat(), 4.0)
    assert idle.next_limit() == (9.0, "idle")
    idle.observe(Finish("stop"), 8.0)
    assert idle.next_limit() == (13.0, "finish_grace")


# -- cut streams and Attempts that stay apart (§9) -------------------------------------------


async def test_s9_partial_output_then_disconnect_fails_with_an_incomplete_attempt(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_role(), chat_text("Hel"), chat_tool_call(0, id="call_A", name="get_weather",
                                                                  arguments='{"ci'), Disconnect()])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.category, err.error.external_outcome) == ("transport", "unknown")
    incomplete = err.incomplete
    assert incomplete is not None and incomplete.reason == err.error.code
    assert incomplete.text == "Hel"
    assert [(f.id, f.name, f.arguments) for f in incomplete.tool_calls] == [("call_A", "get_weather", '{"ci')]
    assert incomplete.to_dict()["tool_calls"][0]["arguments"] == '{"ci'


async def test_s9_partial_output_retry_aggregates_the_second_attempt_independently(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script(
        [chat_role(), chat_text("Hel"), chat_tool_call(0, id="call_A", name="get_weather", arguments='{"ci'),
         Disconnect()],
        chat_turn("Hello", tool_calls=[("call_B", "get_weather", '{"city": "Paris"}')]),
    )
    first = await fails(complete_once(chat, request(), attempt(attempt_no=1)))
    second = await complete_once(chat, request(), attempt(attempt_no=2))
    assert first.incomplete is not None and first.incomplete.text == "Hel"
    assert second.text == "Hello"  # not "HelHello"
    assert second.tool_calls == (ToolCall(id="call_B", name="get_weather", arguments='{"city": "Paris"}'),)


async def test_disconnect_before_any_response_is_a_lost_request(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([Disconnect()])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_CONNECTION_LOST", "transport", "unknown")


async def test_stream_ending_without_a_terminal_frame_is_a_cut(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_role(), chat_text("no finish"), Done()])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_STREAM_CUT", "transport", "unknown")
    assert err.incomplete is not None and err.incomplete.text == "no finish"


async def test_connection_dropped_after_the_terminal_frame_keeps_the_complete_response(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_text("complete"), chat_finish(), Disconnect()])
    response = await complete_once(chat, request(), attempt())
    assert (response.text, response.finish_reason) == ("complete", "stop")


async def test_connect_refused_is_transport_not_started() -> None:
    with ScriptedOpenAIServer() as srv:
        base_url = srv.base_url
    adapter = OpenAIChatAdapter(Connection(base_url=base_url, api_key=API_KEY, model=MODEL))
    try:
        err = await fails(complete_once(adapter, request(), attempt()))
    finally:
        await adapter.aclose()
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_CONNECT_FAILED", "transport", "not_started")


# -- HTTP errors (§3.3) ----------------------------------------------------------------------


async def test_429_is_rate_limit_with_retry_after_seconds(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([Status(429, {"error": {"message": "slow down", "type": "requests",
                                          "code": "rate_limit_exceeded"}}, {"Retry-After": "7"})])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_RATE_LIMITED", "rate_limit", "known")
    assert err.error.details["retry_after_s"] == 7.0
    assert err.error.provider_code == "rate_limit_exceeded" and "slow down" in err.error.message


async def test_429_retry_after_as_an_http_date(server: ScriptedOpenAIServer, chat: OpenAIChatAdapter) -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    server.script([Status(429, headers={"Retry-After": when})])
    err = await fails(complete_once(chat, request(), attempt()))
    assert 100 < err.error.details["retry_after_s"] <= 120


def test_retry_after_parsing() -> None:
    now = 1_000_000.0
    assert parse_retry_after({"Retry-After": "3"}, now=now) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}, now=now) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}, now=now) == 0.25
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now + 30, usegmt=True)}, now=now) == 30.0
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    for bad in ("soon", "-1", "nan", "inf", ""):
        assert parse_retry_after({"Retry-After": bad}, now=now) is None
    assert parse_retry_after({}, now=now) is None


async def test_429_without_retry_after_has_no_wait_hint(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([Status(429)])
    err = await fails(complete_once(chat, request(), attempt()))
    assert err.error.category == "rate_limit" and "retry_after_s" not in err.error.details


@pytest.mark.parametrize("status", [502, 503, 504])
async def test_gateway_errors_are_transport_with_unknown_outcome(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter, status: int
) -> None:
    server.script([Status(status, "<html>bad gateway</html>")])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_GATEWAY_ERROR", "transport", "unknown")
    assert err.error.details["status"] == status


@pytest.mark.parametrize(("status", "code", "category"), [
    (400, "MODEL_REQUEST_INVALID", "validation"),
    (422, "MODEL_REQUEST_INVALID", "validation"),
    (401, "MODEL_PERMISSION_DENIED", "permission"),
    (403, "MODEL_PERMISSION_DENIED", "permission"),
    (404, "MODEL_NOT_FOUND", "not_found"),
    (500, "MODEL_PROVIDER_ERROR", "unknown"),
])
async def test_http_status_mapping(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter, status: int, code: str, category: str
) -> None:
    server.script([Status(status)])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (code, category, "known")


async def test_a_preset_may_override_the_category_of_a_status(server: ScriptedOpenAIServer) -> None:
    adapter = OpenAIChatAdapter(Connection(
        base_url=server.base_url, api_key=API_KEY, model=MODEL,
        status_category=lambda status: "business" if status == 402 else None))
    server.script([Status(402)], [Status(400)])
    try:
        overridden = await fails(complete_once(adapter, request(), attempt()))
        default = await fails(complete_once(adapter, request(), attempt()))
    finally:
        await adapter.aclose()
    assert (overridden.error.category, overridden.error.external_outcome) == ("business", "known")
    assert default.error.category == "validation"


async def test_the_api_key_never_appears_in_an_error(server: ScriptedOpenAIServer) -> None:
    key = "plainkey-without-a-known-prefix-42"
    adapter = OpenAIChatAdapter(Connection(base_url=server.base_url, api_key=key, model=MODEL))
    server.script([Status(401, {"error": {"message": f"Incorrect API key provided: {key}",
                                          "type": "invalid_request_error", "code": "invalid_api_key"}})])
    try:
        err = await fails(complete_once(adapter, request(), attempt()))
    finally:
        await adapter.aclose()
    assert err.error.category == "permission"
    assert key not in json.dumps(err.error.to_dict()) and key not in str(err)
    assert "[REDACTED]" in err.error.message
    assert key not in repr(adapter.connection)


# -- protocol failures: never a response (§4) ------------------------------------------------


async def test_malformed_json_in_the_stream_is_a_protocol_error(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_role(), chat_text("ok so far"), Chunk('{"choices": [{"delta": {"content": "x"'),
                   chat_finish(), Done()])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category) == ("MODEL_PROTOCOL_ERROR", "protocol")
    assert err.incomplete is not None and err.incomplete.text == "ok so far"


async def test_an_error_frame_in_the_stream_is_a_provider_error(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script([chat_text("a"),
                   Chunk({"error": {"message": "overloaded", "code": "rate_limit_exceeded"}})])
    err = await fails(complete_once(chat, request(), attempt()))
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_STREAM_ERROR", "rate_limit", "known")


async def test_12_4_a_call_of_a_tool_not_offered_is_delivered_as_it_came_a_nameless_call_is_not(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script(chat_turn("calling", tool_calls=[("call_X", "rm_rf", "{}")]),
                  chat_turn(tool_calls=[("call_A", "get_weather", "{}")]),
                  chat_turn(tool_calls=[("call_B", "", "{}")]),
                  chat_turn(tool_calls=[("call_C", "get_weather", "{}"),
                                        ("call_C", "get_weather", "{}")]))
    response = await complete_once(chat, request(), attempt())
    no_tools = await complete_once(chat, request(tools=()), attempt())
    nameless = await fails(complete_once(chat, request(), attempt()))
    repeated = await fails(complete_once(chat, request(), attempt()))

    # only the call cannot run (the gateway marks it, models.calls): the response is valid
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [("call_X", "rm_rf", "{}")]
    assert response.text == "calling" and response.tool_calls[0].problem is None
    assert [c.name for c in no_tools.tool_calls] == ["get_weather"]
    assert (nameless.error.code, nameless.error.category) == ("MODEL_RESPONSE_INVALID", "protocol")
    assert "has no tool name" in nameless.error.message
    assert "repeats the id 'call_C'" in repeated.error.message
    assert repeated.incomplete is not None and len(repeated.incomplete.tool_calls) == 2


async def test_12_4_unparsable_tool_arguments_are_delivered_as_they_came(
    server: ScriptedOpenAIServer, chat: OpenAIChatAdapter
) -> None:
    server.script(chat_turn(tool_calls=[("call_A", "get_weather", '{"city": "Par')], finish="length"),
                  chat_turn(tool_calls=[("call_B", "get_weather", '["Paris"]')]))
    truncated = await complete_once(chat, request(), attempt())
    not_object = await complete_once(chat, request(), attempt())
    assert [c.arguments for c in truncated.tool_calls] == ['{"city": "Par']
    assert truncated.finish_reason == "length"
    assert [c.arguments for c in not_object.tool_calls] == ['["Paris"]']


async def test_a_finish_reason_mapped_to_error_fails_the_attempt(server: ScriptedOpenAIServer) -> None:
    adapter = OpenAIChatAdapter(Connection(
        base_url=server.base_url, api_key=API_KEY, model=MODEL,
        finish_mapper=lambda raw: "error" if raw == "network_error" else raw))
    server.script(chat_turn("half an ans", finish="network_error"))
    try:
        err = await fails(complete_once(adapter, request(), attempt()))
    finally:
        await adapter.aclose()
    assert (err.error.code, err.error.category, err.error.external_outcome) == (
        "MODEL_FINISH_ERROR", "transport", "unknown")
    assert err.incomplete is not None and err.incomplete.text == "half an ans"


def test_aggregator_fed_directly() -> None:
    agg = Aggregator()
    events: list[ProviderEvent] = [
        Heartbeat("role"), ToolCallDelta(0, "call_A", "get_weather", ""), TextDelta("x"),
        ToolCallDelta(0, "call_A", "get_weather", '{"city":'), ToolCallDelta(0, "call_A", None, '"Oslo"}'),
        ToolCallDelta(1, None, "get_weather", ""), UsageEvent(Usage(input_tokens=3)),
        Finish("tool_calls"), UsageEvent(Usage(output_tokens=4)),
    ]
    for event in events:
        agg.feed(event)
    response = agg.response()
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_A", "get_weather", '{"city":"Oslo"}'), ("call_1", "get_weather", "{}")]
    assert response.usage == Usage(input_tokens=3, output_tokens=4)


# -- request bodies and discovery -----------------------------------------------------------


async def test_chat_request_body_and_headers_as_sent(server: ScriptedOpenAIServer) -> None:
    adapter = OpenAIChatAdapter(Connection(
        base_url=server.base_url, api_key=API_KEY, model=MODEL, max_tokens_param="max_completion_tokens",
        extra_body={"thinking": {"type": "enabled"}}, extra_headers={"X-Tenant": "t1"}))
    server.script(chat_turn("ok"))
    history = (
        Message(role="system", content="be brief"),
        Message(role="user", content="weather?"),
        Message(role="assistant", content=None, reasoning="r",
                tool_calls=(ToolCall(id="c1", name="get_weather", arguments='{"city":"Oslo"}'),)),
        Message(role="tool", content="sunny", tool_call_id="c1"),
    )
    req = request(output_format="json_object", think=ThinkParams(effort="max"), max_output_tokens=256)
    req = type(req)(messages=history, tools=req.tools, output_format=req.output_format, think=req.think,
                    max_output_tokens=req.max_output_tokens)
    try:
        await complete_once(adapter, req, attempt())
    finally:
        await adapter.aclose()
    sent = server.model_requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}" and sent.headers["x-tenant"] == "t1"
    assert sent.json == build_chat_body(req, adapter.connection)
    assert sent.json["stream"] is True and sent.json["stream_options"] == {"include_usage": True}
    assert sent.json["max_completion_tokens"] == 256 and "max_tokens" not in sent.json
    assert sent.json["response_format"] == {"type": "json_object"} and sent.json["reasoning_effort"] == "high"
    assert sent.json["thinking"] == {"type": "enabled"}
    assert sent.json["messages"][2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]}
    assert sent.json["messages"][3] == {"role": "tool", "content": "sunny", "tool_call_id": "c1"}
    assert sent.json["tools"][0]["function"]["parameters"] == dict(WEATHER.parameters)


async def test_a_preset_body_builder_is_sent_verbatim(server: ScriptedOpenAIServer) -> None:
    def builder(req: Any, conn: Connection) -> dict[str, Any]:
        body = build_chat_body(req, conn, reasoning_echo="reasoning_content")
        body.pop("stream_options")
        body["enable_thinking"] = True
        return body

    adapter = OpenAIChatAdapter(Connection(base_url=server.base_url, api_key=API_KEY, model=MODEL,
                                           body_builder=builder))
    server.script(chat_turn("ok"))
    history = (Message(role="user", content="q"),
               Message(role="assistant", tool_calls=(ToolCall(id="c", name="get_weather", arguments="{}"),)))
    try:
        await complete_once(adapter, type(request())(messages=history, tools=(WEATHER,)), attempt())
    finally:
        await adapter.aclose()
    sent = server.model_requests[0].json
    assert "stream_options" not in sent and sent["enable_thinking"] is True
    assert sent["messages"][1]["reasoning_content"] == ""


async def test_responses_request_body_as_sent(
    server: ScriptedOpenAIServer, responses: OpenAIResponsesAdapter
) -> None:
    server.script(responses_turn("ok"))
    history = (
        Message(role="user", content="q"),
        Message(role="assistant", content="calling", reasoning_details=({"type": "reasoning", "id": "rs_1",
                                                                          "summary": []},),
                tool_calls=(ToolCall(id="c1", name="get_weather", arguments="{}"),)),
        Message(role="tool", content="sunny", tool_call_id="c1"),
    )
    req = type(request())(messages=history, tools=(WEATHER,), max_output_tokens=99)
    await complete_once(responses, req, attempt())
    sent = server.model_requests[0]
    assert sent.path == "/v1/responses"
    assert sent.json["stream"] is True and sent.json["max_output_tokens"] == 99
    assert sent.json["input"] == [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"role": "assistant", "content": "calling"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    assert sent.json["tools"][0]["name"] == "get_weather"


async def test_discover_reports_only_what_the_provider_states() -> None:
    models = [{"id": "big", "object": "model", "created": 0, "owned_by": "x", "context_length": 128000,
               "max_output_tokens": 8192},
              {"id": "plain", "object": "model", "created": 0, "owned_by": "x"}]
    with ScriptedOpenAIServer(models=models) as srv:
        adapter = OpenAIChatAdapter(Connection(base_url=srv.base_url, api_key=API_KEY, model="big"))
        try:
            found = {d.provider_model_id: d for d in await adapter.discover()}
        finally:
            await adapter.aclose()
    assert (found["big"].window, found["big"].output_limit, found["big"].output_limit_source) == (
        128000, 8192, "provider")
    assert (found["plain"].window, found["plain"].output_limit, found["plain"].output_limit_source) == (
        None, None, None)
    assert found["plain"].fetched_at is not None
