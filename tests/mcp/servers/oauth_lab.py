"""An MCP server behind OAuth 2.1 for ``tests/mcp/test_oauth_login.py``: the edge fake.

``python oauth_lab.py PORT`` serves on 127.0.0.1:PORT, with the ``mcp`` SDK's own server-side
auth: the authorization server (RFC 8414 metadata, dynamic registration, ``/authorize``,
``/token`` — PKCE S256 verified by the SDK), the protected-resource metadata (RFC 9728) and
the Streamable HTTP endpoint ``/mcp``, which refuses any request without a valid bearer token
issued for its own URL (``validate_token_resource``: the audience). The provider below keeps
everything in memory and approves every authorization at once (no person); it refuses an
authorization whose ``resource`` is not ``/mcp``'s URL (RFC 8707).

Tools: ``whoami`` (the token's client and audience), ``revoke_all`` (every token revoked: the
next request is a 401). Test routes (no auth): ``GET /_test/state`` (grants counted by type),
``POST /_test/expire`` (every access token expired at the server, refresh tokens kept).
"""

from __future__ import annotations

import secrets
import sys
import time
from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
ISSUER = f"http://127.0.0.1:{PORT}"
RESOURCE = f"{ISSUER}/mcp"


class Provider:
    """In-memory ``OAuthAuthorizationServerProvider`` that approves every request."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.grants: dict[str, int] = {"authorization_code": 0, "refresh_token": 0}
        self.authorized: list[dict[str, Any]] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorized.append({"resource": params.resource, "challenge": params.code_challenge})
        if params.resource != RESOURCE:
            raise AuthorizeError("invalid_target", f"resource must be {RESOURCE}")
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600,
                          refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants["authorization_code"] += 1
        return self._issue(authorization_code.client_id, authorization_code.scopes,
                           authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated
        self.grants["refresh_token"] += 1
        return self._issue(refresh_token.client_id, scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
mcp = MCPServer("oauth-lab", version="0.1", auth_server_provider=provider, auth=AuthSettings(
    issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=True,  # type: ignore[arg-type]
    client_registration_options=ClientRegistrationOptions(enabled=True),
    revocation_options=RevocationOptions(enabled=True)))


@mcp.tool()
def whoami() -> str:
    """Which client the request's token was issued to, and for which resource."""
    token = get_access_token()
    return "anonymous" if token is None else f"client {token.client_id} for {token.resource}"


@mcp.tool()
def revoke_all() -> str:
    """Revoke every token: the next request of any client is refused with a 401."""
    provider.access.clear()
    provider.refresh.clear()
    return "revoked"


@mcp.custom_route("/_test/state", methods=["GET"])
async def state(request: Request) -> JSONResponse:
    return JSONResponse({"grants": provider.grants, "authorized": provider.authorized,
                         "clients": len(provider.clients), "live_tokens": len(provider.access)})


@mcp.custom_route("/_test/expire", methods=["POST"])
async def expire(request: Request) -> JSONResponse:
    for token in provider.access.values():
        token.expires_at = int(time.time()) - 1
    return JSONResponse({"expired": len(provider.access)})


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(mcp.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning")
