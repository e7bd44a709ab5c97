"""The W3C trace context (``traceparent``, ``tracestate``) an outgoing request carries, so the
spans of an HTTP hook or an MCP server join the run's trace.

``trace_headers`` reads the current OpenTelemetry context (a hook's span, live while the hook
runs). An MCP request over Streamable HTTP is posted from the session's own task, where the
caller's context is not current; the ``mcp`` SDK writes the caller's context into the
request's ``params._meta`` (SEP-414), and ``trace_headers_of_body`` lifts it from there into
headers. Both answer ``{}`` at once while no runtime of this process traces.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["propagating", "start_propagating", "trace_headers", "trace_headers_of_body"]

_on = False

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def propagating() -> bool:
    """Whether a runtime of this process traces (then outgoing requests carry the context)."""
    return _on


def start_propagating() -> None:
    """Called once a runtime traces: from now on outgoing requests carry the trace context."""
    global _on
    _on = True


def trace_headers() -> dict[str, str]:
    """``traceparent`` (and ``tracestate``) of the current span; ``{}`` without one."""
    if not _on:
        return {}
    from opentelemetry.propagate import inject

    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier


def trace_headers_of_body(body: bytes) -> dict[str, str]:
    """The trace context a JSON-RPC request body carries in ``params._meta`` (a valid
    ``traceparent``, with its ``tracestate``); ``{}`` when it carries none."""
    if not _on or b'"traceparent"' not in body:
        return {}
    try:
        message: Any = json.loads(body)
        meta = message["params"]["_meta"]
        found = {k: meta[k] for k in ("traceparent", "tracestate") if isinstance(meta.get(k), str)}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}
    if not _TRACEPARENT.match(found.get("traceparent", "")):
        return {}
    return found
