"""The host (issue 18): AgentLoom behind an authenticated HTTP API, for products that start runs
for their users. So far: the identity — API keys naming a principal (an actor in a project),
stored as digests (``host.keys``).

Owns: the host's identity and (to come) its HTTP surface. Sits with the entry points (``cli``):
nothing below imports it.
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
