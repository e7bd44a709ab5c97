"""A scripted OpenAI-compatible server: real HTTP on 127.0.0.1, for tests and benchmarks.

It serves ``POST /v1/chat/completions`` (streaming and not), ``POST /v1/responses``
(streaming) and ``GET /v1/models`` — also under another base path, e.g. LM Studio's
``/api/v0/…`` — speaking the real wire format the ``openai`` SDK reads (SSE over chunked
HTTP/1.1). Guide: docs/testing.md. A test scripts a queue of *turns*; each model request
takes the next turn and plays its *steps* in order::

    with ScriptedOpenAIServer() as srv:
        srv.script(chat_turn("Hello", usage=(12, 3)))
        srv.script([Status(429, headers={"Retry-After": "7"})])
        ...  # point a client at srv.base_url
        assert srv.requests[0].json["model"] == "m"

Steps: ``Chunk`` (a Chat chunk dict — envelope filled in — or a raw ``data:`` payload
string, e.g. malformed JSON), ``Event`` (a typed Responses event), ``Done`` (``data:
[DONE]``), ``Comment`` (an SSE comment heartbeat), ``Raw`` (bytes), ``Headers`` (send the
200 headers now; otherwise they go before the first byte of body, so a ``Stall`` first
delays the headers), ``Stall`` (pause; the only way this server ever waits), ``Disconnect``
(close the socket mid-stream), ``Status`` (an HTTP error reply with headers and body),
``Reply`` (a non-streaming JSON body). A plain mapping in a turn is a ``Chunk``.

Builders make the common shapes: ``chat_text``, ``chat_reasoning`` (``reasoning_content``),
``chat_reasoning_details``, ``chat_tool_call``, ``chat_finish``, ``chat_usage``,
``chat_turn``; ``resp_event`` and ``responses_turn`` for the Responses API. Every request
body and header received is recorded (``requests``; ``model_requests`` are the POSTs).
Bounded: ``close`` wakes every stall and closes every connection; nothing waits unless a step
says so.

``GET /v1/models`` lists ``models`` — by default one model, ``scripted-model``, whose entry
states its window the way vLLM does (``max_model_len``: ``SCRIPTED_WINDOW``), so an agent on
it built through a preset that discovers (``openai``) gets that window (000 §4).

Owns: the scripted server, in private modules re-exported here: ``_steps`` (the step values),
``_builders`` (common turns), ``_handler`` (the wire) and ``_server`` (the queue, the recorded
requests, the lifecycle). Does not own: the adapters it is used to test (``models.adapters``).
"""

from __future__ import annotations

from agentloom.testing.openai_server._builders import (
    chat_delta,
    chat_finish,
    chat_reasoning,
    chat_reasoning_details,
    chat_role,
    chat_text,
    chat_tool_call,
    chat_turn,
    chat_usage,
    resp_event,
    responses_turn,
)
from agentloom.testing.openai_server._handler import fold_chat_chunks
from agentloom.testing.openai_server._server import SCRIPTED_WINDOW, ScriptedOpenAIServer
from agentloom.testing.openai_server._steps import (
    Chunk,
    Comment,
    Disconnect,
    Done,
    Event,
    Headers,
    Raw,
    RecordedRequest,
    Reply,
    Stall,
    Status,
    Step,
    Turn,
)

__all__ = [
    "SCRIPTED_WINDOW",
    "Chunk",
    "Comment",
    "Disconnect",
    "Done",
    "Event",
    "Headers",
    "Raw",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "Stall",
    "Status",
    "Step",
    "Turn",
    "chat_delta",
    "chat_finish",
    "chat_reasoning",
    "chat_reasoning_details",
    "chat_role",
    "chat_text",
    "chat_tool_call",
    "chat_turn",
    "chat_usage",
    "fold_chat_chunks",
    "resp_event",
    "responses_turn",
]
