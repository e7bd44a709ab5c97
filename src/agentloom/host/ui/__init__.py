"""The web run inspector served at ``/ui``: static assets in ``static/`` (one HTML page, one
stylesheet, plain ES modules — no build step, nothing from a CDN) and the ASGI app that
serves them.

The page itself needs no key. It asks for an API key once, keeps it in the tab's
``sessionStorage`` and sends it as ``Authorization: Bearer`` to the ``/v1`` routes; it reads
the event stream with ``fetch`` streaming, so the key never travels in a URL. It renders every
value as text (never as HTML), and every asset is sent with a Content-Security-Policy that
allows only this origin's own scripts, styles and connections, so hostile text in a task, a
model's output or a tool's result cannot run as code.

Owns: serving the assets and their security headers. Does not own the API the page calls.
"""

from __future__ import annotations

from pathlib import Path

from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SECURITY_HEADERS", "STATIC", "inspector_app"]

STATIC = Path(__file__).with_name("static")
SECURITY_HEADERS = {
    "content-security-policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                                "form-action 'none'; frame-ancestors 'none'"),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}
_ENCODED = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]


def inspector_app() -> ASGIApp:
    """The assets of ``static/`` (``index.html`` for the folder itself), each answer with
    ``SECURITY_HEADERS``."""
    files = StaticFiles(directory=STATIC, html=True)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", [])
                        if k.decode("latin-1").lower() not in SECURITY_HEADERS]
                message = {**message, "headers": kept + _ENCODED}
            await send(message)
        await files(scope, receive, secured)
    return app
