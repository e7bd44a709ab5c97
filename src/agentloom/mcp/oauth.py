"""OAuth 2.1 for HTTP MCP servers: signing in once at configuration time, bearer tokens in runs.

::

    agentloom mcp login [CONFIG] SERVER            (configuration time, a person at a browser)
      login() ─► the handshake, sent without a token ─► 401 + WWW-Authenticate
        ─► protected-resource metadata (RFC 9728: resource_metadata, else /.well-known)
        ─► authorization-server metadata (RFC 8414 / OIDC discovery)
        ─► ``oauth.client_id`` (+ ``client_secret``), else ``oauth.client_metadata_url`` where
           the server supports client ID metadata documents, else dynamic registration (RFC 7591)
        ─► authorization code + PKCE S256, ``resource`` = the server URL (RFC 8707), redirect
           to a one-shot listener on 127.0.0.1:<random port> ─► token exchange
        ─► the grant saved in the store's ``secrets`` table ─► the handshake retried with it
    a run (nobody at a browser; nothing interactive ever starts)
      BearerTransport ─► the grant of (server, URL) ─► expired? refresh it (saved again)
        ─► ``Authorization: Bearer …`` ─► a 401, or a refresh refused
        ─► JSON-RPC error ``AUTH_REQUIRED_JSONRPC`` ─► MCP_AUTH_REQUIRED naming the login
        ─► a 403 ``insufficient_scope`` (a step-up): the same, and the scope asked for kept in
           the grant (``required_scope``) for the next login to ask for

Every protocol step of the login (``oauth_login``) is the official ``mcp`` client's
(``OAuthClientProvider``: discovery, registration, PKCE, the token exchange). A run's refresh
uses its client-authentication code too (``OAuthContext.prepare_token_auth``).

**What is stored where.** One ``secrets`` row per grant, keyed by its credential binding
``mcp:<server> <url>``; its ``data`` holds the access and refresh tokens, their expiry, the
client registration and the token endpoint. No other table ever holds a token: a run's
records, events, errors and ``runs show`` name the server and the login command, never a
token (the SQLite file is 0600; tokens are not encrypted at rest).

Owns: the grant and its row, the run-time transport. Does not own: the login
(``oauth_login``), connecting (``connection``), the mapping of ``AUTH_REQUIRED_JSONRPC`` to a
result (``handler``, ``connection``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import anyio
import httpx2
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.shared.auth_utils import calculate_token_expiry

from agentloom.mcp.errors import AUTH_REQUIRED_JSONRPC
from agentloom.store import Put, Store, WriteSet, open_store

__all__ = ["LOGIN_TIMEOUT_S", "SECRETS", "BearerTransport", "McpCredentials", "OAuthGrant",
           "TokenMemory", "binding_of", "login_hint"]

SECRETS: Final = "secrets"
"""The store's secret table (``store.schema``)."""
KIND: Final = "mcp_oauth"
REFRESH_MARGIN_S: Final = 30.0
"""An access token this close to its expiry is refreshed before it is sent."""
LOGIN_TIMEOUT_S: Final = 300.0
"""How long ``agentloom mcp login`` waits for the browser's redirect by default."""


def binding_of(server: str, url: str) -> str:
    """The credential binding of a server entry: its name and URL (the row's key)."""
    return f"mcp:{server} {url}"


def login_hint(server: str) -> str:
    return f"run `agentloom mcp login <config> {server}`"


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthGrant:
    """What a login obtained for one server: kept in the secret table, never shown."""

    server: str
    url: str
    resource: str
    """The audience the tokens are bound to (RFC 8707 ``resource``)."""
    issuer: str | None
    token_endpoint: str
    token: OAuthToken = field(repr=False)
    expires_at: float | None
    client: OAuthClientInformationFull = field(repr=False)
    updated_at: float
    required_scope: str | None = None
    """The scope a server asked for beyond this grant's (a call answered 403
    ``insufficient_scope``): the next ``agentloom mcp login`` asks for it too (a step-up)."""

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at - REFRESH_MARGIN_S

    def summary(self) -> dict[str, Any]:
        """What may be shown: who issued it, for which audience, until when — no token."""
        return {"server": self.server, "url": self.url, "resource": self.resource,
                "issuer": self.issuer, "client_id": self.client.client_id,
                "scope": self.token.scope, "expires_at": self.expires_at,
                "refreshable": self.token.refresh_token is not None,
                "required_scope": self.required_scope}

    def row(self, created_at: float) -> dict[str, Any]:
        return {"binding": binding_of(self.server, self.url), "kind": KIND,
                "server": self.server, "url": self.url, "resource": self.resource,
                "created_at": created_at, "updated_at": self.updated_at,
                "data": {"token": self.token.model_dump(mode="json", exclude_none=True),
                         "expires_at": self.expires_at, "issuer": self.issuer,
                         "token_endpoint": self.token_endpoint,
                         "client": self.client.model_dump(mode="json", exclude_none=True),
                         "required_scope": self.required_scope}}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> OAuthGrant:
        data = row["data"]
        return cls(server=row["server"], url=row["url"], resource=row["resource"],
                   issuer=data.get("issuer"), token_endpoint=data["token_endpoint"],
                   token=OAuthToken.model_validate(data["token"]),
                   expires_at=data.get("expires_at"),
                   client=OAuthClientInformationFull.model_validate(data["client"]),
                   updated_at=row["updated_at"], required_scope=data.get("required_scope"))


class McpCredentials:
    """The OAuth grants of HTTP MCP servers, in the secret table of one store.

    Given a URL, the store is opened on first use (a runtime build lists its servers before
    its own store is open) and closed by ``close``; a ``Store`` given is the caller's."""

    def __init__(self, store: Store | str) -> None:
        self._store = None if isinstance(store, str) else store
        self._url = store if isinstance(store, str) else None
        self._lock = threading.Lock()

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                assert self._url is not None
                self._store = open_store(self._url)
            return self._store

    def load(self, server: str, url: str) -> OAuthGrant | None:
        row = self.store.get(SECRETS, {"binding": binding_of(server, url)})
        return None if row is None else OAuthGrant.from_row(row)

    def save(self, grant: OAuthGrant) -> None:
        """Insert or replace the grant's row (one commit of its own, outside any run)."""
        old = self.store.get(SECRETS, {"binding": binding_of(grant.server, grant.url)})
        created = old["created_at"] if old is not None else grant.updated_at
        (failed,) = self.store.commit_many([WriteSet(
            (Put(SECRETS, grant.row(created)),), label="mcp.oauth")])
        if failed is not None:
            raise failed

    def transport(self, server: str, url: str) -> BearerTransport:
        """The HTTP transport of a connection to ``server``: its stored grant as the bearer."""
        return BearerTransport(self, server, url)

    def close(self) -> None:
        """Close the store if this object opened it."""
        with self._lock:
            if self._url is not None and self._store is not None:
                self._store.close()
                self._store = None


class BearerTransport(httpx2.AsyncBaseTransport):
    """Sends every request of one connection with the stored grant's access token, refreshing
    it first when it expired; never starts an authorization flow. A 401 answer (or a grant
    that cannot be refreshed) becomes a JSON-RPC error (``AUTH_REQUIRED_JSONRPC``) naming
    ``agentloom mcp login``, so the request fails at once with nothing sent again.

    The requests go through a client of its own with the default settings (environment
    proxies included), as a connection without OAuth would send them."""

    def __init__(self, credentials: McpCredentials, server: str, url: str) -> None:
        self.credentials = credentials
        self.server = server
        self.url = url
        self._inner = httpx2.AsyncClient()
        self._grant: OAuthGrant | None = None
        self._loaded = False
        self._lock = anyio.Lock()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        async with self._lock:
            grant, refused = await self._usable_grant()
        if refused is not None:
            return _auth_required(request, refused)
        if grant is not None:
            request.headers["Authorization"] = f"Bearer {grant.token.access_token}"
        response = await self._inner.send(request, stream=True, follow_redirects=False)
        if response.status_code == 403 and grant is not None and extract_field_from_www_auth(
                response, "error") == "insufficient_scope":
            await response.aclose()
            return _auth_required(request, await self._step_up(grant, response))
        if response.status_code != 401:
            return response
        await response.aclose()
        why = ("refused the stored OAuth token (HTTP 401: revoked, expired or not for this "
               "server)" if grant is not None else
               "asks for authorization (HTTP 401) and no OAuth login is stored for it")
        return _auth_required(request, f"MCP server {self.server!r} {why}; "
                                       f"{login_hint(self.server)}")

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def _step_up(self, grant: OAuthGrant, response: httpx2.Response) -> str:
        """A 403 ``insufficient_scope``: the scope the server asks for is kept with the grant
        for the next ``mcp login`` (a run never signs in) and named in the message."""
        asked = extract_scope_from_www_auth(response)
        wanted = union_scopes(union_scopes(grant.token.scope, grant.required_scope), asked)
        if wanted and wanted != grant.required_scope and not _covers(grant.token.scope, wanted):
            self._grant = replace(grant, required_scope=wanted)
            await anyio.to_thread.run_sync(self.credentials.save, self._grant)
        if _covers(grant.token.scope, asked):
            return (f"MCP server {self.server!r} refused the stored OAuth token (HTTP 403 "
                    f"insufficient_scope) though it holds the scope asked for "
                    f"({asked or 'none named'}); signing in again asks for no more")
        return (f"MCP server {self.server!r} asks for a larger OAuth scope than it granted "
                f"(HTTP 403 insufficient_scope: {asked or 'no scope named'}; granted: "
                f"{grant.token.scope or 'none named'}); {login_hint(self.server)} to sign in "
                f"again with scope {wanted!r}")

    async def _usable_grant(self) -> tuple[OAuthGrant | None, str | None]:
        if not self._loaded or (self._grant is not None and self._grant.expired(time.time())):
            # (re)read: another connection may have refreshed it meanwhile
            self._grant = await anyio.to_thread.run_sync(self.credentials.load, self.server,
                                                         self.url)
            self._loaded = True
        grant = self._grant
        if grant is None or not grant.expired(time.time()):
            return grant, None
        if grant.token.refresh_token is None:
            return None, (f"the OAuth token of MCP server {self.server!r} expired and no refresh "
                          f"token was issued; {login_hint(self.server)}")
        refreshed = await self._refresh(grant)
        if isinstance(refreshed, str):
            return None, refreshed
        await anyio.to_thread.run_sync(self.credentials.save, refreshed)
        self._grant = refreshed
        return refreshed, None

    async def _refresh(self, grant: OAuthGrant) -> OAuthGrant | str:
        assert grant.token.refresh_token is not None
        form = {"grant_type": "refresh_token", "refresh_token": grant.token.refresh_token,
                "client_id": grant.client.client_id, "resource": grant.resource}
        context = OAuthContext(server_url=grant.url, storage=TokenMemory(),
                               client_metadata=OAuthClientMetadata(redirect_uris=None),
                               redirect_handler=None, callback_handler=None,
                               client_info=grant.client)
        form, headers = context.prepare_token_auth(form, {
            "Content-Type": "application/x-www-form-urlencoded"})
        failed = (f"the OAuth token of MCP server {self.server!r} expired and could not be "
                  "refreshed")
        try:
            answer = await self._inner.post(grant.token_endpoint, data=form, headers=headers,
                                            timeout=30.0)
        except httpx2.HTTPError as exc:
            return f"{failed} ({type(exc).__name__}); {login_hint(self.server)}"
        if answer.status_code != 200:
            return (f"{failed} (the authorization server answered HTTP {answer.status_code}"
                    f"{_oauth_error(answer)}); {login_hint(self.server)}")
        try:
            token = OAuthToken.model_validate_json(answer.content)
        except ValueError:
            return f"{failed} (the token answer is not an OAuth token); {login_hint(self.server)}"
        # RFC 6749 §6: an answer may leave out the refresh token and scope (both unchanged)
        token = token.model_copy(update={
            "refresh_token": token.refresh_token or grant.token.refresh_token,
            "scope": token.scope or grant.token.scope})
        return replace(grant, token=token, expires_at=calculate_token_expiry(token.expires_in),
                       updated_at=time.time())


def _covers(granted: str | None, asked: str | None) -> bool:
    """Whether the scope ``granted`` holds every scope of ``asked``."""
    return set((asked or "").split()) <= set((granted or "").split())


def _oauth_error(answer: httpx2.Response) -> str:
    """The RFC 6749 ``error`` code of an answer (``: invalid_grant``) — never its body."""
    with contextlib.suppress(ValueError, AttributeError):
        error = answer.json().get("error")
        if isinstance(error, str) and error.replace("_", "").isalnum():
            return f": {error}"
    return ""


def _auth_required(request: httpx2.Request, message: str) -> httpx2.Response:
    """A 401 answer whose body is the JSON-RPC error the ``mcp`` client hands to its caller."""
    body = {"jsonrpc": "2.0", "id": None,
            "error": {"code": AUTH_REQUIRED_JSONRPC, "message": message}}
    return httpx2.Response(401, headers={"content-type": "application/json"},
                           content=json.dumps(body).encode(), request=request)


@dataclass(slots=True)
class TokenMemory:
    """The ``mcp`` client's token storage for one flow (a login; a refresh's client auth)."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info
