"""The request body limit (``agentloom serve --max-body-bytes N``, default 8 MiB): an ASGI
middleware around the whole app, so every route that reads a body — ``/v1`` and both A2A
bindings — is held to it.

::

    Content-Length: 314572800  ──► 413 BODY_TOO_LARGE at once (not a byte of the body read)
    Transfer-Encoding: chunked ──► counted as it streams in; 413 the moment it passes N

A route reading a body that passes the limit gets an exception from ``receive`` (a 413
``Problem``); whatever it answers then is replaced by the 413 problem, so the answer is the
same whichever route it was (an A2A binding would otherwise speak of a body it could not
parse). The 413 closes the connection (``Connection: close``): the rest of the body is never
read.

Owns: the limit and its 413. Does not own the problem shape (``host.problems``).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentloom.host.problems import Problem, problem_response

__all__ = ["MAX_BODY_BYTES", "BodyLimit", "too_large"]

MAX_BODY_BYTES = 8 * 1024 * 1024
FLAG = "agentloom serve --max-body-bytes"


def too_large(limit: int, size: int | None = None) -> Problem:
    """The 413 for a body of ``size`` bytes (``None``: not known, only that it is over)."""
    said = f"is {size} bytes" if size is not None else f"is over {limit} bytes"
    return Problem(413, "BODY_TOO_LARGE", f"the request body {said}; this server takes at "
                   f"most {limit} bytes ({FLAG})")


def _declared(scope: Scope) -> int | None:
    """The request's ``Content-Length``, when it has one (the server checked its form)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimit:
    """``app`` with request bodies of at most ``max_bytes`` bytes (module docstring)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError(f"the body limit must be at least 1 byte, got {max_bytes}")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(too_large(self.max_bytes, declared), scope, receive, send)
            return
        read = 0
        over = False
        started = False

        async def counted() -> Message:
            nonlocal read, over
            if over:
                raise too_large(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.max_bytes:
                    over = True
                    raise too_large(self.max_bytes)
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if over:  # the route's answer to a body it could not read: replaced below
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not over:
                raise
        if over and not started:
            await self._refuse(too_large(self.max_bytes), scope, receive, send)

    @staticmethod
    async def _refuse(problem: Problem, scope: Scope, receive: Receive, send: Send) -> None:
        await problem_response(problem, {"Connection": "close"})(scope, receive, send)
