"""Discovery: what an OpenAI-compatible model listing states about one model's window (000 §4).

A preset that declares ``discovery:`` (``models/preset_data``) lets the runtime ask, once, when
an agent is built and its window W is otherwise unknown: ``GET {base_url}/models``, the entry
whose ``id`` is the connection's model, and the first positive integer among the preset's
window fields (vLLM ``max_model_len``, OpenRouter-style ``context_length``, …) and output
fields. Nothing is guessed: a listing that states no window gives a descriptor with
``window=None`` and the reason in ``extras["unknown_because"]``.

The request is bounded: ``timeout_s`` for the whole exchange, ``MAX_LISTING_BYTES`` of body,
no redirects (the key is never sent to another host). The API key never appears in a reason.

Owns: the one listing request and reading it. Does not own: which presets discover (preset
data), or what W and O win (``models.budget``).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentloom.errors import redact_secrets
from agentloom.models.ports import Connection
from agentloom.models.types import ModelDescriptor

__all__ = ["DISCOVERY_TIMEOUT_S", "MAX_LISTING_BYTES", "discover_descriptor", "listing_url"]

DISCOVERY_TIMEOUT_S = 5.0
"""The bound on one listing request (connect, send, read), in seconds."""
MAX_LISTING_BYTES = 16 * 1024 * 1024
"""A listing larger than this is not read (OpenRouter's full listing is a few MB)."""


def listing_url(connection: Connection) -> str:
    """``{base_url}/models`` (the base URL's query, if any, kept)."""
    parts = urlsplit(connection.base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/models"))


def _shown(url: str) -> str:
    """``url`` as messages show it: no user info, query or fragment (they may hold secrets)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(unparsable URL)"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}{parts.path}"


def discover_descriptor(
    connection: Connection,
    *,
    window_fields: Sequence[str],
    output_fields: Sequence[str] = (),
    timeout_s: float = DISCOVERY_TIMEOUT_S,
) -> ModelDescriptor:
    """What ``GET {base_url}/models`` states about ``connection.model``: its window (the first
    of ``window_fields``, dotted paths into the listing entry, holding a positive integer) and
    output limit (likewise ``output_fields``), ``source="provider"`` with ``fetched_at``.

    Never raises for the provider's answer: an unreachable server, an HTTP error, a body that
    is not a listing, a model not listed, or no window field gives ``window=None`` and
    ``extras["unknown_because"]`` saying which.
    """
    url = listing_url(connection)
    entry, why = _entry(connection, url, _shown(url), timeout_s)
    window = _first_int(entry, window_fields) if entry is not None else None
    output = _first_int(entry, output_fields) if entry is not None else None
    if entry is not None and window is None:
        why = (f"GET {_shown(url)}: the entry for {connection.model!r} states no window "
               f"(looked for {', '.join(window_fields)})")
    extras: dict[str, Any] = {"listing": _shown(url)}
    if window is None:
        extras["unknown_because"] = why or "the listing states no window"
    return ModelDescriptor(
        provider_model_id=connection.model, window=window, output_limit=output,
        source="provider", fetched_at=time.time(),
        output_limit_source="provider" if output is not None else None, extras=extras)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx surfaces as an HTTPError: the key never follows a redirect


def _entry(connection: Connection, url: str, shown: str, timeout_s: float
           ) -> tuple[Mapping[str, Any] | None, str | None]:
    headers = {"Accept": "application/json", **dict(connection.extra_headers)}
    if connection.api_key:
        headers["Authorization"] = f"Bearer {connection.api_key}"
    request = urllib.request.Request(url, headers=headers, method="GET")
    opener = urllib.request.build_opener(_NoRedirect)
    deadline = time.monotonic() + timeout_s
    try:
        with opener.open(request, timeout=timeout_s) as response:
            body = _read(response, deadline)
    except urllib.error.HTTPError as exc:
        return None, f"GET {shown} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        text = redact_secrets(str(reason)).replace(connection.api_key or "\0", "***")
        return None, f"GET {shown} failed ({text})"
    try:
        listing = json.loads(body)
    except ValueError:
        return None, f"GET {shown} did not answer JSON"
    data = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(data, list):
        return None, f"GET {shown} did not answer a model listing (no 'data' list)"
    for item in data:
        if isinstance(item, Mapping) and item.get("id") == connection.model:
            return item, None
    return None, f"GET {shown} does not list {connection.model!r}"


def _read(response: Any, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the listing took too long")
        chunk = response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_LISTING_BYTES:
            raise ValueError(f"the listing is larger than {MAX_LISTING_BYTES} bytes")
        chunks.append(chunk)


def _first_int(entry: Mapping[str, Any], paths: Sequence[str]) -> int | None:
    for path in paths:
        node: Any = entry
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, int) and not isinstance(node, bool) and node > 0:
            return node
    return None
