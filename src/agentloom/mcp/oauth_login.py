"""``agentloom mcp login``: the OAuth 2.1 sign-in to one HTTP MCP server (``oauth`` keeps what
it obtains).

::

    login(server, config, credentials)
      the handshake, sent without a token ─► 401 ─► the ``mcp`` client's OAuthClientProvider:
        protected-resource metadata ─► authorization-server metadata ─► registration (or
        ``oauth.client_id``) ─► announce(authorization URL) (+ a browser) ─► the redirect to
        _loopback (127.0.0.1, a random port; bounded wait) ─► token exchange (PKCE S256,
        ``resource``) ─► the handshake retried with the token ─► OAuthGrant saved

Owns: the browser, the loopback listener, turning the flow's failures into
``MCP_LOGIN_FAILED``. Does not own: the protocol steps (the ``mcp`` SDK), the grant's row and
the run-time transport (``oauth``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import webbrowser
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

from agentloom.config.mcp import HttpServerConfig
from agentloom.errors import AgentLoomError
from agentloom.mcp.errors import MCP_LOGIN_FAILED, McpError
from agentloom.mcp.oauth import LOGIN_TIMEOUT_S, McpCredentials, OAuthGrant, TokenMemory
from agentloom.mcp.secrets import resolve_values, scrub
from mcp import ClientSession

__all__ = ["login"]

_READ_S = 10.0
"""How long the loopback listener waits for one request's head."""


async def login(
    server: str,
    config: HttpServerConfig,
    credentials: McpCredentials,
    *,
    announce: Callable[[str], None],
    open_browser: bool,
    timeout_s: float = LOGIN_TIMEOUT_S,
    environ: dict[str, str] | None = None,
) -> OAuthGrant | None:
    """Sign in to ``server`` and save its grant; ``None`` when it asks for no authorization.

    ``announce`` is told the authorization URL (and a browser opened on it unless
    ``open_browser`` is false); the redirect is awaited for ``timeout_s``.

    Raises:
        McpError: ``MCP_LOGIN_FAILED`` (discovery, registration, the person's answer, the
            token exchange, or no redirect within ``timeout_s``), ``MCP_SECRET_MISSING``.
    """
    from agentloom.mcp.connection import _client_info
    from agentloom.mcp.profiles import handshake

    secrets: list[str] = []
    headers = resolve_values(config.headers, where=f"mcp_servers.{server}.headers",
                             secrets=secrets, environ=environ)
    storage = TokenMemory()
    refusals = _Refusals()
    oauth = config.oauth
    earlier = await anyio.to_thread.run_sync(credentials.load, server, config.url)
    async with _loopback(server, timeout_s) as (redirect_uri, callback):
        if oauth is not None and oauth.client_id is not None:  # registered beforehand
            secret = None if oauth.client_secret is None else resolve_values(
                {"client_secret": oauth.client_secret}, where=f"mcp_servers.{server}.oauth",
                secrets=secrets, environ=environ)["client_secret"]
            storage.client = OAuthClientInformationFull(
                client_id=oauth.client_id, client_secret=secret,
                redirect_uris=[redirect_uri],  # type: ignore[list-item]
                token_endpoint_auth_method="none" if secret is None else "client_secret_basic")

        async def redirect(url: str) -> None:
            announce(url)
            if open_browser:
                await anyio.to_thread.run_sync(webbrowser.open, url)

        provider = _Provider(
            earlier.required_scope if earlier is not None else None,
            server_url=config.url, storage=storage, redirect_handler=redirect,
            callback_handler=callback,
            client_metadata_url=oauth.client_metadata_url if oauth is not None else None,
            client_metadata=OAuthClientMetadata(
                client_name="AgentLoom", redirect_uris=[redirect_uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                token_endpoint_auth_method="none"))
        try:
            async with (httpx2.AsyncClient(auth=provider, headers=headers,
                                           event_hooks={"response": [refusals.note]},
                                           timeout=httpx2.Timeout(30.0, read=300.0)) as http,
                        streamable_http_client(config.url, http_client=http) as (read, write),
                        ClientSession(read, write, client_info=_client_info()) as session):
                with anyio.fail_after(timeout_s + 60.0):
                    await handshake(session, server=server, protocol=config.protocol)
                    # a server may leave its handshake open and guard its methods: listing
                    # is what a run does first, so it is signed in for too
                    await session.list_tools()
        except BaseException as exc:  # the flow's errors surface from the transport's tasks
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
                raise
            if refusals.asked is not None and storage.tokens is not None:
                granted = storage.tokens.scope
                why = ("though the token holds every scope it names" if set(
                    refusals.asked.split()) <= set((granted or "").split()) else
                       "and the authorization server did not grant them")
                raise McpError(MCP_LOGIN_FAILED, scrub(
                    f"signing in to MCP server {server!r} failed: it refuses the token just "
                    f"issued (HTTP 403 insufficient_scope, asking for scope "
                    f"{refusals.asked or '(none named)'}; granted: {granted or '(none named)'}) "
                    f"{why}; signing in again would not change that — see the server's "
                    "access policy", secrets)) from None
            raise _login_error(server, exc, secrets) from None
    if storage.tokens is None:
        return None
    context = provider.context
    meta = context.oauth_metadata
    base = f"{urlparse(config.url).scheme}://{urlparse(config.url).netloc}"
    assert storage.client is not None
    grant = OAuthGrant(
        server=server, url=config.url, resource=context.get_resource_url(),
        issuer=str(meta.issuer) if meta is not None else None,
        token_endpoint=str(meta.token_endpoint) if meta is not None else urljoin(base, "/token"),
        token=storage.tokens, expires_at=context.token_expiry_time, client=storage.client,
        updated_at=time.time())
    await anyio.to_thread.run_sync(credentials.save, grant)
    return grant


class _Refusals:
    """The scope of the last 403 ``insufficient_scope`` answer the login saw (after the SDK's
    one step-up per request: a server that keeps asking ends the login, named as such)."""

    asked: str | None = None

    async def note(self, response: httpx2.Response) -> None:
        if response.status_code == 403 and extract_field_from_www_auth(
                response, "error") == "insufficient_scope":
            self.asked = extract_scope_from_www_auth(response) or ""


class _Provider(OAuthClientProvider):
    """The ``mcp`` client's OAuth flow, asking for the scope a server demanded of an earlier
    grant too (a step-up: a run's call answered 403 ``insufficient_scope``; ``oauth`` kept the
    scope it asked for in the grant) on top of the scope its challenge names now."""

    def __init__(self, step_up: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step_up = step_up

    async def _perform_authorization(self) -> httpx2.Request:
        metadata = self.context.client_metadata
        metadata.scope = union_scopes(metadata.scope, self.step_up)
        return await super()._perform_authorization()


def _login_error(server: str, exc: BaseException, secrets: list[str]) -> AgentLoomError:
    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, AgentLoomError):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, OAuthFlowError | httpx2.HTTPError | TimeoutError):
            why = f"{type(leaf).__name__}: {leaf}"
            break
    else:
        why = "; ".join(f"{type(e).__name__}: {e}" for e in leaves[:3])
    return McpError(MCP_LOGIN_FAILED, scrub(
        f"signing in to MCP server {server!r} failed: {why}", secrets))


def _leaves(exc: BaseException) -> list[BaseException]:
    if not isinstance(exc, BaseExceptionGroup):
        return [exc]
    return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]


_PAGE = ("<!doctype html><meta charset=utf-8><title>AgentLoom</title>"
         "<p>{0}</p><p>You may close this window.</p>")


@contextlib.asynccontextmanager
async def _loopback(server: str, timeout_s: float) -> AsyncIterator[
        tuple[str, Callable[[], Awaitable[AuthorizationCodeResult]]]]:
    """A one-shot HTTP listener on 127.0.0.1 (a port of the system's choice) for the redirect
    of the authorization server: ``(redirect URI, wait for the code)``."""
    answer: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with anyio.fail_after(_READ_S):
                line = (await reader.readline()).decode("latin-1")
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
            parts = line.split(" ")
            target = urlparse(parts[1]) if len(parts) > 1 else None
            if target is None or target.path != "/callback" or answer.done():
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            if "code" in query:
                answer.set_result(AuthorizationCodeResult(
                    code=query["code"], state=query.get("state"), iss=query.get("iss")))
                text = f"AgentLoom is signed in to MCP server {server!r}."
            else:
                error = query.get("error", "no code")
                answer.set_exception(McpError(MCP_LOGIN_FAILED, (
                    f"signing in to MCP server {server!r} failed: the authorization server "
                    f"answered {error!r}")))
                text = f"Signing in to MCP server {server!r} failed: {error}."
            page = _PAGE.format(text.replace("<", "&lt;")).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                         b"Connection: close\r\nContent-Length: " + str(len(page)).encode()
                         + b"\r\n\r\n" + page)
        except (TimeoutError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                await writer.drain()
                writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]

    async def wait() -> AuthorizationCodeResult:
        try:
            with anyio.fail_after(timeout_s):
                return await asyncio.shield(answer)
        except TimeoutError:
            raise McpError(MCP_LOGIN_FAILED, (
                f"signing in to MCP server {server!r} failed: no redirect from the browser "
                f"within {timeout_s:g} s")) from None

    try:
        yield f"http://127.0.0.1:{port}/callback", wait
    finally:
        listener.close()
        await listener.wait_closed()
