"""The host (issue 18): AgentLoom behind an authenticated HTTP API, for products that start runs
for their users — the identity (API keys naming a principal, an actor in a project, stored as
digests: ``host.keys``) and the HTTP surface (``host.app.create_app``: the ``/v1`` run routes,
SSE events, workspace files, problem details, the OpenAPI document).

Owns: the host's identity and its HTTP surface. Sits with the entry points (``cli``, which runs
it as ``agentloom serve``): nothing below imports it, and it imports no ``cli`` module.
"""

from agentloom.host.keys import (
    ApiKey,
    ApiKeyError,
    AuthError,
    authenticate,
    create_key,
    list_keys,
    revoke_key,
)

__all__ = ["ApiKey", "ApiKeyError", "AuthError", "authenticate", "create_key", "list_keys",
           "revoke_key"]
