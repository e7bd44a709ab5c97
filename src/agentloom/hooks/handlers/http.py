"""The ``http`` kind (``HttpHookHandler``, ``HttpHookRunner``): the event POSTed as JSON to
the hook's URL; the answer's JSON body is the decision.

::

    url's host ─► resolve ─► every address public? (or ``allow_private``) ─► POST to that
    address (Host and TLS name: the URL's host) ─► 2xx: body = decision (empty: allow)
                                                 ─► 3xx: failure (redirects are never followed)
                                                 ─► other: failure naming the status

SSRF: the host is resolved once and the request goes to the address that was checked, so a
name that resolves to a public address when checked and to a private one when connecting
(DNS rebinding) cannot reach the private one. Loopback, private (RFC 1918, ULA), link-local
(cloud metadata), CGNAT, multicast and reserved ranges are refused unless the hook's config
says ``allow_private: true``. Header values may hold ``${VAR}``, read from the runtime's
environment when the hook runs; those values never appear in a diagnostic or a record. A
traced run's request carries the W3C ``traceparent`` of the hook's span (``agentloom.telemetry``).

Owns: the kind's spec, one request per hook run and reading its answer. Does not own: the
config model (``config.handler_kinds.HttpHandlerConfig``), the timeout (the ``HookManager``'s;
the request's own is only a backstop).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx2

from agentloom.config.handler_kinds import HttpHandlerConfig
from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers._common import (
    HookRunFailed,
    Secrets,
    decision_of,
    event_json,
    excerpt,
    handler_of,
)
from agentloom.hooks.handlers.kind import HookKind
from agentloom.hooks.spec import HookHandler, HookSpec, Pairs
from agentloom.secret_refs import masked
from agentloom.telemetry import trace_headers

MAX_BODY_BYTES = 1 << 20
BACKSTOP_S = 2.0

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpHookHandler(HookHandler):
    """A POST to ``url`` with ``headers`` (values may hold ``${VAR}``; a mapping is taken);
    private and loopback addresses only with ``allow_private``.

    Raises:
        ValueError: no ``url``.
    """

    kind: Literal["http"] = "http"
    url: str = ""
    headers: Pairs = ()
    allow_private: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.headers, Mapping):
            object.__setattr__(self, "headers", tuple(self.headers.items()))
        if not self.url:
            raise ValueError("an http hook needs a url")

    def to_dict(self) -> dict[str, object]:
        """``${VAR}`` references are kept as written; a literal header value is replaced by
        ``[redacted]``."""
        return {"kind": self.kind, "ref": "", "url": self.url,
                "allow_private": self.allow_private, "headers": masked(dict(self.headers))}


class HttpHookRunner:
    """Runs ``kind: http`` hooks (see the module docstring)."""

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        handler = handler_of(spec, HttpHookHandler)
        where = f"hook {spec.hook_id!r}"
        secrets = Secrets()
        headers = secrets.expand_all(handler.headers, what=f"{where} header")
        url = urlsplit(handler.url)
        host = url.hostname
        if url.scheme not in ("http", "https") or not host:
            raise HookRunFailed(f"{where}: url must be http:// or https:// with a host")
        port = url.port or (443 if url.scheme == "https" else 80)
        addresses = await _checked_addresses(host, port, allow_private=handler.allow_private,
                                             where=where)
        headers = {**trace_headers(), **headers, "Host": url.netloc.rpartition("@")[2],
                   "Content-Type": "application/json"}
        body = b""
        try:
            async with httpx2.AsyncClient(follow_redirects=False, trust_env=False,
                                         timeout=spec.timeout_s + BACKSTOP_S) as client:
                for i, address in enumerate(addresses):  # the next one only if none answered
                    netloc = f"[{address}]" if address.version == 6 else str(address)
                    target = urlunsplit((url.scheme, f"{netloc}:{port}", url.path or "/",
                                         url.query, ""))
                    request = client.build_request("POST", target, content=event_json(event),
                                                   headers=headers,
                                                   extensions={"sni_hostname": host})
                    try:
                        response = await client.send(request, stream=True)
                    except httpx2.ConnectError:
                        if i + 1 < len(addresses):
                            continue
                        raise
                    try:
                        body = await _body(response, where)
                    finally:
                        await response.aclose()
                    break
        except httpx2.HTTPError as exc:
            raise HookRunFailed(f"{where}: POST {_shown(handler.url)} failed: "
                                f"{type(exc).__name__}: {excerpt(str(exc), secrets, 300)}",
                                code="HOOK_HTTP_FAILED") from None
        status = response.status_code
        if 300 <= status < 400:
            raise HookRunFailed(f"{where}: {_shown(handler.url)} answered {status} (a redirect"
                                f"{_location(response)}); redirects are not followed",
                                code="HOOK_HTTP_REDIRECT")
        if not 200 <= status < 300:
            text = excerpt(body.decode(errors="replace"), secrets, 300)
            raise HookRunFailed(f"{where}: {_shown(handler.url)} answered HTTP {status}"
                                + (f": {text}" if text else ""), code="HOOK_HTTP_STATUS")
        return decision_of(body, source=f"{where}'s response body", secrets=secrets)


async def _checked_addresses(host: str, port: int, *, allow_private: bool,
                             where: str) -> list[Address]:
    """The addresses of ``host``, once every one of them is allowed."""
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise HookRunFailed(f"{where}: cannot resolve {host!r}: {exc}",
                                code="HOOK_HTTP_FAILED") from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        if not addresses:
            raise HookRunFailed(f"{where}: {host!r} has no address", code="HOOK_HTTP_FAILED")
    addresses = [a.ipv4_mapped if a.version == 6 and a.ipv4_mapped else a for a in addresses]
    if not allow_private:
        for address in addresses:
            if not address.is_global or address.is_multicast:
                raise HookRunFailed(
                    f"{where}: {host!r} resolves to {address}, a private, loopback, link-local "
                    "or reserved address; refused (write allow_private: true in the hook's "
                    "handler to call a service on such an address)", code="HOOK_HTTP_REFUSED")
    return list(dict.fromkeys(addresses))


async def _body(response: httpx2.Response, where: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HookRunFailed(f"{where}: the response body is larger than {MAX_BODY_BYTES} "
                                "bytes; a decision is one small JSON object",
                                code="HOOK_OUTPUT_TOO_LARGE")
        chunks.append(chunk)
    return b"".join(chunks)


def _location(response: httpx2.Response) -> str:
    location = response.headers.get("location")
    return f" to {_shown(location)}" if location else ""


def _shown(url: str | None) -> str:
    """A URL as a diagnostic shows it: scheme, host, port and path (no credentials, no query)."""
    parts = urlsplit(url or "")
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def _from_config(config: HttpHandlerConfig, base_dir: Path) -> HttpHookHandler:
    return HttpHookHandler(url=config.url, headers=tuple(config.headers.items()),
                           allow_private=config.allow_private)


KIND = HookKind(name="http", config=HttpHandlerConfig, spec=HttpHookHandler,
                from_config=_from_config, runner=HttpHookRunner)
