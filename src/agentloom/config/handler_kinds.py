"""Hook handler kinds, config side: the registry ``kind → config model`` a hook's ``handler:`` is
validated by, and the four built-in kinds' models.

::

    handler: {kind: command, argv: [...]}       (no kind: python)
        │ AnyHandlerConfig: is the kind registered? else "unknown handler kind 'x'; use kind: …"
        ▼ the union of every registered model, tagged "<kind>" (left out of error paths)
    CommandHandlerConfig(...)  ── hooks.handlers.registry.handler_spec ──►  CommandHookHandler

A kind is declared once, in ``agentloom.hooks.handlers.registry`` (``register_hook_kind``):
its config model (here), its spec and its runner (``hooks/handlers/<kind>.py``). The config
model is the one part kept here because ``config`` is core and may not import ``hooks``; the
hooks registry registers it here (``register_handler_config``), so ``load_config`` checks a
kind registered from outside the package at load time, key path and all, as it does the
built-in ones. The union is rebuilt whenever a kind is registered.

Owns: the handler config models, the registry of them, validating a ``handler:`` mapping.
Does not own: what a kind's handler does (``agentloom.hooks.handlers``), the hook around it
(``HookConfig``, ``config.model``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainValidator,
    SerializeAsAny,
    StrictBool,
    StrictFloat,
    Tag,
    TypeAdapter,
    ValidationInfo,
    field_serializer,
    model_validator,
)

from agentloom.config.mcp import http_url
from agentloom.secret_refs import masked

__all__ = [
    "AnyHandlerConfig",
    "CommandHandlerConfig",
    "HandlerConfig",
    "HookHandlerConfig",
    "HttpHandlerConfig",
    "McpHandlerConfig",
    "handler_config_models",
    "publish_handler_tags",
    "register_handler_config",
    "unregister_handler_config",
]


class HookHandlerConfig(BaseModel):
    """The base of a hook handler's config model: frozen, unknown keys refused. A kind's model
    declares ``kind: Literal["<kind>"]`` and its own keys; a ``timeout_s`` key, when it has one,
    is the hook's timeout (``HookConfig.hook_timeout_s``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: str


# -- the built-in kinds ------------------------------------------------------------------------


def _ref(value: str) -> str:
    from agentloom.config.model import _REF  # model.py imports this module

    if not _REF.match(value):
        raise ValueError(f"must look like 'package.module:function' (got {value!r})")
    return value


def _env_map(value: Mapping[str, str]) -> Mapping[str, str]:
    from agentloom.config.model import _ENV  # model.py imports this module

    for name in value:
        if not _ENV.match(name):
            raise ValueError(f"{name!r} is not an environment variable name (letters, digits, _)")
    return value


class HandlerConfig(HookHandlerConfig):
    """A ``kind: python`` hook handler (the default kind): ``ref: "package.module:function"``,
    checked at load time."""

    kind: Literal["python"] = "python"
    ref: Annotated[str, AfterValidator(_ref)]


class CommandHandlerConfig(HookHandlerConfig):
    """A ``kind: command`` hook handler: ``command`` (run with ``sh -c``) or ``argv`` (no
    shell), in the sandbox, with exactly ``env`` (values may use ``${VAR}``, read from the
    runtime's environment when the hook runs); ``timeout_s`` here is the hook's timeout.
    ``format: claude-code`` runs a Claude Code hook script: its stdin and output translated
    (``agentloom.hooks.claude``; ``agentloom hooks import-claude`` sets it)."""

    kind: Literal["command"]
    format: Literal["agentloom", "claude-code"] = "agentloom"
    command: str | None = Field(default=None, min_length=1)
    argv: tuple[Annotated[str, Field(min_length=1)], ...] | None = Field(default=None,
                                                                        min_length=1)
    env: Annotated[dict[str, str], AfterValidator(_env_map)] = Field(default_factory=dict)
    timeout_s: StrictFloat | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_program(self) -> CommandHandlerConfig:
        if (self.command is None) == (self.argv is None):
            raise ValueError("give exactly one of `command` (a shell command line) or `argv` "
                             "(a list: the program and its arguments, no shell)")
        return self


class HttpHandlerConfig(HookHandlerConfig):
    """A ``kind: http`` hook handler: the event is POSTed to ``url`` with ``headers`` (values
    may use ``${VAR}``); ``allow_private: true`` lets it reach loopback and private addresses;
    ``timeout_s`` here is the hook's timeout. A dump of it (the snapshot a run records of its
    configuration) masks every literal header value, as the hook's recorded version does."""

    kind: Literal["http"]
    url: Annotated[str, AfterValidator(http_url)]
    headers: dict[str, str] = Field(default_factory=dict)
    allow_private: StrictBool = False
    timeout_s: StrictFloat | None = Field(default=None, gt=0)

    @field_serializer("headers")
    def _masked_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return masked(headers)


class McpHandlerConfig(HookHandlerConfig):
    """A ``kind: mcp`` hook handler: ``tools/call`` of ``tool`` on the MCP server ``server``
    (a name under ``mcp_servers``; the tool need not be in the agent's ``tools``), the event as
    its arguments; ``timeout_s`` here is the hook's timeout. The server and the tool are checked
    when the runtime is built, as ``mcp.<server>.<tool>`` entries are."""

    kind: Literal["mcp"]
    server: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    timeout_s: StrictFloat | None = Field(default=None, gt=0)


# -- the registry ------------------------------------------------------------------------------

_MODELS: dict[str, type[HookHandlerConfig]] = {
    "python": HandlerConfig, "command": CommandHandlerConfig, "http": HttpHandlerConfig,
    "mcp": McpHandlerConfig}
_BUILTIN = frozenset(_MODELS)
_TAG_TABLES: list[dict[str, type[BaseModel]]] = []
_adapter: TypeAdapter[HookHandlerConfig] | None = None


def _tag(kind: str) -> str:
    # never the same as another union's tag (``<http>`` of mcp_servers' transport): the loader
    # finds a key path's model by its tag
    return f"<{kind} handler>"


def register_handler_config(kind: str, model: type[HookHandlerConfig]) -> None:
    """Let a hook's ``handler:`` say ``kind: <kind>``, validated by ``model``. Registering the
    same model again does nothing. ``agentloom.hooks.register_hook_kind`` calls this; call it
    yourself only to load configurations that name a kind this process does not run.

    Raises:
        ValueError: ``kind`` is another model's, or ``model`` does not declare
            ``kind: Literal[<kind>]``.
    """
    global _adapter
    if _MODELS.get(kind, model) is not model:
        raise ValueError(f"hook handler kind {kind!r} is registered already, with "
                         f"{_MODELS[kind].__qualname__}")
    field = model.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal \
            or get_args(field.annotation) != (kind,):
        raise ValueError(f"{model.__qualname__} must declare kind: Literal[{kind!r}]")
    _MODELS[kind] = model
    for table in _TAG_TABLES:
        table[_tag(kind)] = model
    _adapter = None


def unregister_handler_config(kind: str) -> None:
    """Forget a kind registered with ``register_handler_config`` (tests, a plugin unloaded);
    the built-in kinds stay.

    Raises:
        ValueError: ``kind`` is a built-in kind.
    """
    global _adapter
    if kind in _BUILTIN:
        raise ValueError(f"hook handler kind {kind!r} is built in; it cannot be unregistered")
    if _MODELS.pop(kind, None) is not None:
        for table in _TAG_TABLES:
            table.pop(_tag(kind), None)
        _adapter = None


def handler_config_models() -> Mapping[str, type[HookHandlerConfig]]:
    """Every registered kind's config model, built-in kinds first (a read-only view)."""
    return MappingProxyType(_MODELS)


def publish_handler_tags(table: dict[str, type[BaseModel]]) -> None:
    """Keep ``table`` (the loader's map of union tags, left out of error paths) holding every
    kind's tag, now and as kinds are registered."""
    table.update({_tag(k): m for k, m in _MODELS.items()})
    _TAG_TABLES.append(table)


def _kinds_text() -> str:
    kinds = list(_MODELS)
    return ", ".join(kinds[:-1]) + f" or {kinds[-1]}" if len(kinds) > 1 else kinds[0]


def _handler_tag(value: Any) -> str | None:
    if isinstance(value, Mapping):
        return _tag(value.get("kind", "python"))
    return _tag(value.kind) if isinstance(value, HookHandlerConfig) else None


def _union() -> TypeAdapter[HookHandlerConfig]:
    """The tagged union of every registered model (made again after a registration)."""
    global _adapter
    if _adapter is None:
        members = tuple(Annotated[m, Tag(_tag(k))] for k, m in _MODELS.items())
        union: Any = Annotated[Union[members], Discriminator(_handler_tag)]  # noqa: UP007
        _adapter = TypeAdapter(union)
    return _adapter


def _validated(value: Any, info: ValidationInfo) -> HookHandlerConfig:
    if isinstance(value, Mapping):
        kind = value.get("kind", "python")
        if kind not in _MODELS:
            raise ValueError(f"unknown handler kind {kind!r}; use kind: {_kinds_text()}")
    # A nested ValidationError keeps its key paths ("<kind>.<key>"), under the hook's.
    return _union().validate_python(value, context=info.context)


BuiltinHandlerConfig = HandlerConfig | CommandHandlerConfig | HttpHandlerConfig | McpHandlerConfig
"""The built-in kinds' models (what the JSON schema of ``handler:`` shows)."""

AnyHandlerConfig = Annotated[
    SerializeAsAny[HookHandlerConfig],
    PlainValidator(_validated, json_schema_input_type=BuiltinHandlerConfig),
]
"""A hook's ``handler:`` by ``kind`` (default ``python``; 000 §5.4): one of the registered
kinds' models; dumped by its own model (an http handler's header values masked)."""
