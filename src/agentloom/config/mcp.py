"""``mcp_servers:`` — the MCP servers a configuration connects to (docs/config.md#mcp_servers).

::

    mcp_servers:
      git:  {transport: stdio, command: mcp-server-git, args: ["--repository", "."],
             env: {GIT_AUTHOR_NAME: agent}}
      docs: {transport: http, url: "http://127.0.0.1:8931/mcp",
             headers: {Authorization: "Bearer ${DOCS_TOKEN}"}}

Owns: the shape of one server entry (a tagged union on ``transport``), the ``${VAR}``
reference syntax of ``env`` and ``headers`` values, and ``mcp.<server>.<tool>`` tool entries.
Does not own: resolving ``${VAR}`` (done at connection time by ``agentloom.mcp.secrets``, never
stored), connecting, listing tools or launching a process (``agentloom.mcp``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    Tag,
    field_validator,
    model_validator,
)

__all__ = [
    "MCP_PROTOCOLS",
    "MCP_TAGS",
    "MCP_TOOL_ENTRY",
    "HttpServerConfig",
    "McpMount",
    "McpProtocol",
    "McpServerConfig",
    "StdioServerConfig",
    "checked_headers",
    "http_url",
    "mcp_entry_parts",
    "secret_references",
]

McpProtocol = Literal["2025-11-25", "2026-07-28"]
"""An MCP protocol profile: ``2025-11-25`` (the ``initialize`` handshake, 000 §6.2) or
``2026-07-28`` (``server/discover`` and the per-request ``_meta`` envelope; docs/mcp.md)."""

MCP_PROTOCOLS: tuple[str, ...] = ("2025-11-25", "2026-07-28")
"""The MCP protocol profiles a server entry may ask for (``protocol:``); the first is the default."""

MCP_TOOL_ENTRY = re.compile(r"^mcp\.(?P<server>[A-Za-z][A-Za-z0-9_-]{0,57})\.(?P<tool>[^\s]+)$")
"""An agent's ``tools`` entry naming MCP tools: ``mcp.<server>.<tool>`` or a glob such as
``mcp.git.*`` (matched against capability keys with ``fnmatch``)."""

_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def mcp_entry_parts(entry: str) -> tuple[str, str] | None:
    """``(server, tool pattern)`` of an ``mcp.<server>.<tool>`` tools entry, else ``None``."""
    match = MCP_TOOL_ENTRY.match(entry)
    return (match["server"], match["tool"]) if match else None


def secret_references(value: str) -> list[str]:
    """The variable names ``value`` refers to as ``${NAME}`` or ``${NAME:-default}``, in order.

    Raises:
        ValueError: a ``${...}`` that does not hold a variable name, or a default holding
            another ``${...}``.
    """
    names = []
    for inner in _REFERENCE.findall(value):
        name, has_default, default = inner.partition(":-")
        if not _VAR.match(name):
            raise ValueError(f"${{{inner}}} is not a reference to an environment variable; write "
                             "${NAME} or ${NAME:-default}, NAME with letters, digits and '_'")
        if has_default and "${" in default:
            raise ValueError(f"${{{inner}}}: a default cannot hold another ${{...}}; write the "
                             "default itself")
        names.append(name)
    return names


def _checked_values(values: dict[str, str], what: str, name_pattern: re.Pattern[str]) -> dict[str, str]:
    for name, value in values.items():
        if not name_pattern.match(name):
            raise ValueError(f"{name!r} is not a valid {what} name; rename it")
        if "\0" in value or "\n" in value or "\r" in value:
            raise ValueError(f"the value of {name} holds a NUL or line break; remove it")
        secret_references(value)
    return values


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class McpMount(_Strict):
    """A host folder a sandboxed stdio server sees (read-only unless ``mode: rw``); a relative
    ``path`` is read from the config file's folder."""

    path: str = Field(min_length=1)
    mode: Literal["ro", "rw"] = "ro"


class _ServerBase(_Strict):
    protocol: McpProtocol = "2025-11-25"
    """The MCP profile spoken: ``2025-11-25`` (default; ``initialize`` offers it) or
    ``2026-07-28`` (``server/discover`` asks for it); a server that cannot speak it is refused
    (``MCP_VERSION_UNSUPPORTED``)."""
    timeout_s: StrictFloat | None = Field(default=None, gt=0)
    """A tool call's timeout (default: the run deadline); when it passes, the call is cancelled
    with ``notifications/cancelled`` and its outcome is unknown. It bounds every other step
    with the server too (default 30 s): its start and handshake, each listing."""


class StdioServerConfig(_ServerBase):
    """A local server started as a process speaking MCP on stdin / stdout.

    ``env`` is the *complete* environment it gets besides a minimal ``PATH`` / ``HOME``
    (values may hold ``${VAR}``, read from AgentLoom's environment when the server is
    started, never stored). ``mounts`` and ``network`` (default: off) are what its sandbox
    allows; with ``sandbox: {backend: none}`` it runs unconfined and they are not enforced."""

    transport: Literal["stdio"]
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    mounts: tuple[McpMount, ...] = ()
    network: StrictBool = False

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        return _checked_values(env, "environment variable", _ENV_NAME)


class McpOAuth(_Strict):
    """``oauth:`` of an HTTP server, read by ``agentloom mcp login`` only: the client id it
    signs in with where the authorization server offers no dynamic client registration (a
    public client: PKCE, no secret; its redirect is ``http://127.0.0.1:<any port>/callback``),
    with ``client_secret`` for a confidential client; or the HTTPS URL of a client ID metadata
    document: the client id where the authorization server says
    ``client_id_metadata_document_supported`` (else the login registers a client)."""

    client_id: str | None = Field(default=None, min_length=1)
    client_secret: str | None = None
    """The secret of ``client_id`` (a confidential client), only as ``${VAR}``: read from the
    environment by the login, kept with the grant in the store's secret table, never here."""
    client_metadata_url: str | None = None

    @field_validator("client_secret")
    @classmethod
    def _secret(cls, secret: str | None) -> str | None:
        if secret is not None and not re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", secret):
            raise ValueError("must be a reference to an environment variable, \"${NAME}\" (a "
                             "client secret is never written in the config); set NAME where "
                             "`agentloom mcp login` runs")
        return secret

    @field_validator("client_metadata_url")
    @classmethod
    def _metadata_url(cls, url: str | None) -> str | None:
        parsed = urlparse(url or "")
        if url is not None and (parsed.scheme != "https" or parsed.path in ("", "/")):
            raise ValueError("must be an https:// URL with a path (the client ID metadata "
                             f"document a client id names, e.g. https://example.com/client.json; "
                             f"got {url!r})")
        return url

    @model_validator(mode="after")
    def _one_at_least(self) -> McpOAuth:
        if (self.client_id is None) == (self.client_metadata_url is None):
            raise ValueError("give one of client_id (a client registered beforehand) or "
                             "client_metadata_url (a client ID metadata document)")
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret is the secret of client_id: give client_id too")
        return self


class HttpServerConfig(_ServerBase):
    """A remote server over Streamable HTTP at ``url``; ``headers`` go on every request (values
    may hold ``${VAR}``, read from the environment at connection time, never stored).
    ``oauth`` (default: none — the client registers itself) is for ``agentloom mcp login``."""

    transport: Literal["http"]
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: McpOAuth | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        return http_url(url)

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return checked_headers(headers)


def http_url(url: str) -> str:
    """``url`` when it is an ``http://`` or ``https://`` URL (a server's, an agent card's)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https:// (got {url!r})")
    return url


def checked_headers(headers: dict[str, str]) -> dict[str, str]:
    """Configured HTTP headers: legal names, no line breaks, well-formed ``${NAME}``
    references (MCP servers' and remote A2A agents' ``headers``)."""
    return _checked_values(headers, "header", _HEADER_NAME)


MCP_TAGS: dict[str, type[BaseModel]] = {"<stdio>": StdioServerConfig, "<http>": HttpServerConfig}
"""The tags of the ``transport`` union (left out of key paths in error messages)."""


def _transport_tag(value: Any) -> str | None:
    if isinstance(value, Mapping):
        transport = value.get("transport")
        return f"<{transport}>" if transport in ("stdio", "http") else None
    for tag, cls in MCP_TAGS.items():
        if isinstance(value, cls):
            return tag
    return None


McpServerConfig = Annotated[
    Annotated[StdioServerConfig, Tag("<stdio>")] | Annotated[HttpServerConfig, Tag("<http>")],
    Discriminator(_transport_tag, custom_error_type="transport",
                  custom_error_message="must say `transport: stdio` (a local process) or "
                  "`transport: http` (Streamable HTTP)"),
]
"""One entry of ``mcp_servers:``, by its ``transport`` (``stdio`` or ``http``)."""
