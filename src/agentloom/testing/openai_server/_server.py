"""``ScriptedOpenAIServer``: the queue of scripted turns, the recorded requests and the
server's lifecycle (a thread serving 127.0.0.1 on a free port; ``close`` wakes every stall and
drops every connection).

Owns: scripting, recording and starting / stopping. Does not own: what goes on the wire
(``_handler``).
"""

from __future__ import annotations

import itertools
import socket
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from agentloom.testing.openai_server._handler import ScriptHandler, ScriptHTTPServer
from agentloom.testing.openai_server._steps import Chunk, RecordedRequest, Step, Turn

__all__ = ["SCRIPTED_WINDOW", "ScriptedOpenAIServer"]


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
        self._httpd: ScriptHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> ScriptedOpenAIServer:
        httpd = ScriptHTTPServer(("127.0.0.1", 0), ScriptHandler)
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
