"""A scripted OpenAI-compatible server: real HTTP on 127.0.0.1, for tests and benchmarks.

It serves ``POST /v1/chat/completions`` (streaming and not), ``POST /v1/responses``
(streaming) and ``GET /v1/models``, speaking the real wire format the ``openai`` SDK
reads (SSE over chunked HTTP/1.1). A test scripts a queue of *turns*; each model request
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
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeAlias

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
    "resp_event",
    "responses_turn",
]

_FLUSH_AT = 64 * 1024


# -- steps ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``data:`` frame: a Chat chunk mapping (missing ``id`` / ``object`` / ``created`` /
    ``model`` filled in) or a payload string sent verbatim (e.g. malformed JSON)."""

    data: Mapping[str, Any] | str


@dataclass(frozen=True, slots=True)
class Event:
    """One typed Responses event (``event: <type>`` + ``data:``; ``sequence_number`` filled)."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Done:
    """``data: [DONE]``."""


@dataclass(frozen=True, slots=True)
class Comment:
    """An SSE comment line (a keep-alive heartbeat the SDK never surfaces)."""

    text: str = "keep-alive"


@dataclass(frozen=True, slots=True)
class Raw:
    """A script step of the fake OpenAI server: send these bytes as they are (to test a
    malformed or torn stream)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Headers:
    """Send the ``200`` streaming headers now."""

    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Stall:
    """Pause ``seconds`` (woken early only when the server closes)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close the connection abruptly: no terminating chunk, no ``[DONE]``."""


@dataclass(frozen=True, slots=True)
class Status:
    """An HTTP error reply: ``code``, extra ``headers`` (e.g. ``Retry-After``), JSON ``body``
    (default: an OpenAI-style ``{"error": {...}}``) or a raw string body."""

    code: int
    body: Mapping[str, Any] | str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """A non-streaming ``200`` JSON reply, verbatim."""

    body: Mapping[str, Any]


Step: TypeAlias = Chunk | Event | Done | Comment | Raw | Headers | Stall | Disconnect | Status | Reply
Turn: TypeAlias = Sequence["Step | Mapping[str, Any]"]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received: headers lower-cased, ``json`` the parsed body (or ``None``)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any
    turn: int | None


# -- chat builders ---------------------------------------------------------------------------


def chat_delta(finish_reason: str | None = None, **delta: Any) -> Chunk:
    """A Chat chunk with one choice whose ``delta`` holds exactly ``delta``."""
    return Chunk({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})


def chat_role() -> Chunk:
    return chat_delta(role="assistant", content="")


def chat_text(text: str) -> Chunk:
    return chat_delta(content=text)


def chat_reasoning(text: str) -> Chunk:
    """Reasoning in the ``reasoning_content`` style (DeepSeek, GLM, DashScope)."""
    return chat_delta(reasoning_content=text)


def chat_reasoning_details(text: str, *, index: int = 0, id: str | None = None,
                           type: str = "reasoning.text") -> Chunk:
    """Reasoning in the ``reasoning_details`` style (MiniMax with ``reasoning_split``)."""
    item: dict[str, Any] = {"type": type, "index": index, "text": text}
    if id is not None:
        item["id"] = id
    return chat_delta(reasoning_details=[item])


def chat_tool_call(index: int = 0, *, id: str | None = None, name: str | None = None,
                   arguments: str | None = None) -> Chunk:
    """One tool-call fragment. Pass ``id`` / ``name`` on every fragment to script a provider
    that repeats them."""
    call: dict[str, Any] = {"index": index}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        call["function"] = function
    return chat_delta(tool_calls=[call])


def chat_finish(reason: str = "stop") -> Chunk:
    return chat_delta(finish_reason=reason)


def chat_usage(prompt: int = 10, completion: int = 5, *, reasoning: int | None = None,
               cached: int | None = None) -> Chunk:
    """The final usage-only chunk (empty ``choices``), as with ``include_usage``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
    }
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return Chunk({"choices": [], "usage": usage})


def _pieces(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


ToolSpec: TypeAlias = "tuple[str, str, str | Sequence[str]] | Mapping[str, Any]"


def _tool_spec(spec: ToolSpec) -> tuple[str, str, list[str]]:
    if isinstance(spec, Mapping):
        return str(spec["id"]), str(spec["name"]), _pieces(spec.get("arguments", "{}"))
    call_id, name, arguments = spec
    return call_id, name, _pieces(arguments)


def chat_turn(
    text: str | Sequence[str] = "",
    *,
    reasoning: str | Sequence[str] | None = None,
    tool_calls: Iterable[ToolSpec] = (),
    finish: str | None = None,
    usage: tuple[int, int] | None = (10, 5),
    repeat_ids: bool = False,
    done: bool = True,
) -> list[Step]:
    """A whole streamed Chat reply: role, reasoning pieces, text pieces, tool calls
    (``(id, name, arguments-or-pieces)``), finish (``tool_calls`` when there are any, else
    ``stop``), the usage chunk and ``[DONE]``. ``repeat_ids`` repeats id and name in every
    tool-call fragment."""
    steps: list[Step] = [chat_role()]
    steps += [chat_reasoning(p) for p in _pieces(reasoning)]
    steps += [chat_text(p) for p in _pieces(text)]
    calls = [_tool_spec(spec) for spec in tool_calls]
    for index, (call_id, name, pieces) in enumerate(calls):
        steps.append(chat_tool_call(index, id=call_id, name=name, arguments=""))
        for piece in pieces:
            if repeat_ids:
                steps.append(chat_tool_call(index, id=call_id, name=name, arguments=piece))
            else:
                steps.append(chat_tool_call(index, arguments=piece))
    steps.append(chat_finish(finish or ("tool_calls" if calls else "stop")))
    if usage is not None:
        steps.append(chat_usage(*usage))
    if done:
        steps.append(Done())
    return steps


# -- responses builders ----------------------------------------------------------------------


def resp_event(type: str, **fields: Any) -> Event:
    return Event(type, fields)


def _response(response_id: str, model: str, status: str, output: list[Any],
              usage: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return {"id": response_id, "object": "response", "created_at": 0, "status": status, "model": model,
            "output": output, "usage": usage, "error": None, "incomplete_details": None, **extra}


def responses_turn(
    text: str | Sequence[str] = "",
    *,
    reasoning: str | Sequence[str] | None = None,
    tool_calls: Iterable[ToolSpec] = (),
    usage: tuple[int, int] | None = (10, 5),
    response_id: str = "resp_1",
    model: str = "scripted-model",
    incomplete: str | None = None,
) -> list[Step]:
    """A whole streamed Responses reply: created / in_progress, a reasoning item with
    summary deltas, a message item with text deltas, function_call items with argument
    deltas, then ``response.completed`` (or ``response.incomplete`` with ``incomplete``
    as the reason) carrying usage."""
    steps: list[Step] = [
        resp_event("response.created", response=_response(response_id, model, "in_progress", [], None)),
        resp_event("response.in_progress", response=_response(response_id, model, "in_progress", [], None)),
    ]
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        n, rid = len(output), f"rs_{len(output)}"
        pieces = _pieces(reasoning)
        steps.append(resp_event("response.output_item.added", output_index=n,
                                item={"type": "reasoning", "id": rid, "summary": []}))
        for p in pieces:
            steps.append(resp_event("response.reasoning_summary_text.delta", item_id=rid, output_index=n,
                                    summary_index=0, delta=p))
        summary = [{"type": "summary_text", "text": "".join(pieces)}]
        item = {"type": "reasoning", "id": rid, "summary": summary}
        steps.append(resp_event("response.output_item.done", output_index=n, item=item))
        output.append(item)
    pieces = _pieces(text)
    if pieces:
        n, mid = len(output), f"msg_{len(output)}"
        steps.append(resp_event("response.output_item.added", output_index=n, item={
            "type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}))
        steps.append(resp_event("response.content_part.added", item_id=mid, output_index=n, content_index=0,
                                part={"type": "output_text", "text": "", "annotations": []}))
        for p in pieces:
            steps.append(resp_event("response.output_text.delta", item_id=mid, output_index=n,
                                    content_index=0, delta=p, logprobs=[]))
        full = "".join(pieces)
        steps.append(resp_event("response.output_text.done", item_id=mid, output_index=n, content_index=0,
                                text=full, logprobs=[]))
        item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": full, "annotations": []}]}
        steps.append(resp_event("response.output_item.done", output_index=n, item=item))
        output.append(item)
    for call_id, name, arg_pieces in (_tool_spec(s) for s in tool_calls):
        n, fid = len(output), f"fc_{len(output)}"
        steps.append(resp_event("response.output_item.added", output_index=n, item={
            "type": "function_call", "id": fid, "call_id": call_id, "name": name, "arguments": "",
            "status": "in_progress"}))
        for p in arg_pieces:
            steps.append(resp_event("response.function_call_arguments.delta", item_id=fid, output_index=n,
                                    delta=p))
        arguments = "".join(arg_pieces)
        steps.append(resp_event("response.function_call_arguments.done", item_id=fid, output_index=n,
                                arguments=arguments))
        item = {"type": "function_call", "id": fid, "call_id": call_id, "name": name,
                "arguments": arguments, "status": "completed"}
        steps.append(resp_event("response.output_item.done", output_index=n, item=item))
        output.append(item)
    usage_obj = None if usage is None else {
        "input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": usage[0] + usage[1],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    if incomplete is None:
        steps.append(resp_event("response.completed",
                                response=_response(response_id, model, "completed", output, usage_obj)))
    else:
        steps.append(resp_event("response.incomplete", response=_response(
            response_id, model, "incomplete", output, usage_obj, incomplete_details={"reason": incomplete})))
    return steps


# -- the server ------------------------------------------------------------------------------


class _Aborted(Exception):
    """The server is closing or the connection is gone: stop playing this turn."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a test's cancelled stream) is not an error here."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    timeout = 30.0  # a backstop on reads; close() wakes every connection first

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Frames go out as written: no Nagle delay stacked on the client's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.owner._track(self.connection, False)

    # -- routing --

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        owner._record(self, b"", None)
        if path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": list(owner.models)})
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses"):
            owner._record(self, raw, body)
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            return
        turn_no, turn = owner._next_turn()
        owner._record(self, raw, body, turn_no)
        if turn is None:
            self._json(500, {"error": {"message": "the scripted server has no turn left",
                                       "type": "scripted_server_error"}})
            return
        streaming = not isinstance(body, Mapping) or body.get("stream", False) is not False
        model = str(body.get("model", "scripted-model")) if isinstance(body, Mapping) else "scripted-model"
        try:
            if streaming:
                self._play(turn, turn_no, model)
            else:
                self._play_whole(turn, turn_no, model)
        except (_Aborted, OSError):
            self.close_connection = True

    # -- replies --

    def _json(self, code: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_scripted")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _status(self, step: Status) -> None:
        body: Any = step.body
        if body is None:
            body = {"error": {"message": f"scripted HTTP {step.code}", "type": "scripted_error",
                              "code": str(step.code)}}
        self._json(step.code, body, step.headers)

    def _play(self, turn: Sequence[Step], turn_no: int, model: str) -> None:
        owner = self.server.owner
        envelope = {"id": f"chatcmpl-scripted-{turn_no}", "object": "chat.completion.chunk",
                    "created": 0, "model": model}
        sequence = itertools.count()
        headers_sent = False
        pending: list[bytes] = []
        size = 0

        def flush() -> None:
            nonlocal size, headers_sent
            if not headers_sent:
                self._sse_headers({})
                headers_sent = True
            if pending:
                payload = b"".join(pending)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                pending.clear()
                size = 0

        for step in turn:
            frame: bytes | None = None
            if isinstance(step, Chunk):
                data = step.data
                if isinstance(data, str):
                    frame = b"data: " + data.encode() + b"\n\n"
                else:
                    frame = b"data: " + json.dumps({**envelope, **data}).encode() + b"\n\n"
            elif isinstance(step, Event):
                payload = {"type": step.type, "sequence_number": next(sequence), **step.data}
                frame = b"event: " + step.type.encode() + b"\ndata: " + json.dumps(payload).encode() + b"\n\n"
            elif isinstance(step, Done):
                frame = b"data: [DONE]\n\n"
            elif isinstance(step, Comment):
                frame = b": " + step.text.encode() + b"\n\n"
            elif isinstance(step, Raw):
                frame = step.data
            elif isinstance(step, Headers):
                if not headers_sent:
                    self._sse_headers(step.headers)
                    headers_sent = True
            elif isinstance(step, Stall):
                if headers_sent or pending:
                    flush()
                if owner._stopping.wait(step.seconds):
                    raise _Aborted
            elif isinstance(step, Disconnect):
                if pending:
                    flush()
                self._drop()
                raise _Aborted
            elif isinstance(step, Status):
                if headers_sent:
                    raise ValueError("a Status step must come before anything is sent")
                self._status(step)
                return
            elif isinstance(step, Reply):
                self._json(200, dict(step.body))
                return
            if frame is not None:
                pending.append(frame)
                size += len(frame)
                if size >= _FLUSH_AT:
                    flush()
        flush()
        self.wfile.write(b"0\r\n\r\n")

    def _sse_headers(self, extra: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", "req_scripted")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()

    def _play_whole(self, turn: Sequence[Step], turn_no: int, model: str) -> None:
        """A non-streaming Chat request: Status / Reply as given, else the chunks folded
        into one ``chat.completion``."""
        owner = self.server.owner
        for step in turn:
            if isinstance(step, Status):
                self._status(step)
                return
            if isinstance(step, Reply):
                self._json(200, dict(step.body))
                return
            if isinstance(step, Stall) and owner._stopping.wait(step.seconds):
                raise _Aborted
            if isinstance(step, Disconnect):
                self._drop()
                raise _Aborted
        self._json(200, fold_chat_chunks(turn, turn_no=turn_no, model=model))


def fold_chat_chunks(
    turn: Sequence[Step], *, turn_no: int = 0, model: str = "scripted-model"
) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` equivalent of a turn's Chat chunks."""
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    for step in turn:
        if not isinstance(step, Chunk) or isinstance(step.data, str):
            continue
        usage = step.data.get("usage") or usage
        for choice in step.data.get("choices") or ():
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
            for tc in delta.get("tool_calls") or ():
                call = calls.setdefault(tc.get("index", 0), {"id": None, "type": "function",
                                                              "function": {"name": None, "arguments": ""}})
                call["id"] = call["id"] or tc.get("id")
                fn = tc.get("function") or {}
                call["function"]["name"] = call["function"]["name"] or fn.get("name")
                call["function"]["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if any(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"id": f"chatcmpl-scripted-{turn_no}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


SCRIPTED_WINDOW = 128_000
"""The window the default model listing states for ``scripted-model`` (``max_model_len``)."""


class ScriptedOpenAIServer:
    """The server. Use as a context manager; ``base_url`` ends in ``/v1``."""

    def __init__(self, *, models: Sequence[Mapping[str, Any]] | None = None) -> None:
        self.models: list[Mapping[str, Any]] = list(models) if models is not None else [
            {"id": "scripted-model", "object": "model", "created": 0, "owned_by": "scripted",
             "max_model_len": SCRIPTED_WINDOW},
        ]
        self.requests: list[RecordedRequest] = []
        self._turns: deque[tuple[int, list[Step]]] = deque()
        self._turn_numbers = itertools.count()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> ScriptedOpenAIServer:
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="scripted-openai-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Wake every stall, drop every connection, stop serving, join the threads."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            live = list(self._connections)
        for conn in live:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    # -- scripting --

    def script(self, *turns: Turn) -> None:
        """Queue turns; each model request plays the next one."""
        with self._lock:
            for turn in turns:
                steps = [s if not isinstance(s, Mapping) else Chunk(s) for s in turn]
                self._turns.append((next(self._turn_numbers), steps))

    @property
    def pending(self) -> int:
        """Turns scripted and not yet played."""
        with self._lock:
            return len(self._turns)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    # -- used by the handler --

    def _next_turn(self) -> tuple[int, list[Step] | None]:
        with self._lock:
            if not self._turns:
                return -1, None
            return self._turns.popleft()

    def _record(
        self, handler: BaseHTTPRequestHandler, raw: bytes, body: Any, turn: int | None = None
    ) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request = RecordedRequest(method=handler.command, path=handler.path, headers=headers, body=raw,
                                  json=body, turn=turn if turn is None or turn >= 0 else None)
        with self._lock:
            self.requests.append(request)

    def _track(self, conn: socket.socket, live: bool) -> None:
        with self._lock:
            if live:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)
