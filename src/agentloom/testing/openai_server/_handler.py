"""Playing a turn over HTTP: the request handler routes ``/v1/chat/completions``,
``/v1/responses`` and ``/v1/models``, records each request, and writes the turn's steps as SSE
over chunked HTTP/1.1 (or folded into one ``chat.completion`` for a non-streaming request).

Owns: the wire (status lines, headers, framing, flushing, stalls and disconnects). Does not
own: the queue of turns, the recorded requests or the server's lifecycle (``_server``).
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from agentloom.testing.openai_server._steps import (
    Chunk,
    Comment,
    Disconnect,
    Done,
    Event,
    Headers,
    Raw,
    Reply,
    Stall,
    Status,
    Step,
)

if TYPE_CHECKING:
    from agentloom.testing.openai_server._server import ScriptedOpenAIServer

__all__ = ["ScriptHTTPServer", "ScriptHandler", "fold_chat_chunks"]

_FLUSH_AT = 64 * 1024


class _Aborted(Exception):
    """The server is closing or the connection is gone: stop playing this turn."""


class ScriptHTTPServer(ThreadingHTTPServer):
    """The threading HTTP server; ``owner`` holds the script and the recorded requests."""

    daemon_threads = True
    owner: ScriptedOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a test's cancelled stream) is not an error here."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class ScriptHandler(BaseHTTPRequestHandler):
    """One connection: routes a request, records it and plays the next turn on it."""

    protocol_version = "HTTP/1.1"
    server: ScriptHTTPServer
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
        if path.rstrip("/").endswith("/models"):  # /v1/models, or a base such as /api/v0
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
        if not path.endswith(("/chat/completions", "/responses")):  # under any base path
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
