"""Wiring a provider preset into a ``Connection`` (000 §4): endpoint, key, protocol hooks.

``connection_for("deepseek", model="deepseek-chat")`` reads the preset, takes the variant's
base URL and the API key from the variant's environment variable, and sets the preset's body
builder, per-Attempt reasoning extractor and usage / finish / status mappers. The key is
read once, here; it never appears in a message, a ``repr`` or an error.

Whether a connection needs a key is decided in one place, ``key_rule``: a key is required
unless the endpoint needs none — a preset variant that takes no key (``ollama``), or one
whose key is optional (``vllm``, ``lmstudio``), or a local base URL (``localhost``,
``127.0.0.0/8``, ``::1``) — and the config names no other variable. A connection without a
key sends **no** ``Authorization`` header (the OpenAI SDK insists on a key, so the adapter
gives it a placeholder and omits the header on every request;
``models.adapters.openai_chat.auth_override``).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from agentloom.errors import ConfigError
from agentloom.models.ports import Connection
from agentloom.models.presets import Endpoint, load_preset

__all__ = ["KeyRule", "connection_for", "is_local_url", "key_rule"]


def is_local_url(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost`` (or ``*.localhost``) or a
    loopback address (``127.0.0.0/8``, ``::1``)."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyRule:
    """Which variable a connection's key is read from (``None``: none) and whether an unset
    or empty variable is an error (``required``) or means "send no key"."""

    variable: str | None
    required: bool


def key_rule(endpoint: Endpoint, *, base_url: str | None = None, api_key_env: str | None = None) -> KeyRule:
    """The key rule of a connection on ``endpoint``: the variable is ``api_key_env`` (the
    config's), else the endpoint's. A variable the config names (other than the endpoint's
    own) is required: naming it says there is a key. The endpoint's own variable is required
    unless its key is optional or the base URL (``base_url``, else the endpoint's) is local;
    an endpoint without a variable takes no key."""
    variable = api_key_env or endpoint.api_key_env
    if variable is None:
        return KeyRule(variable=None, required=False)
    if variable != endpoint.api_key_env:
        return KeyRule(variable=variable, required=True)
    local = is_local_url(base_url or endpoint.base_url)
    return KeyRule(variable=variable, required=not (endpoint.api_key_optional or local))


def connection_for(
    preset_name: str,
    *,
    model: str,
    variant: str = "default",
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    capabilities: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    config_name: str | None = None,
) -> Connection:
    """A ``Connection`` speaking preset ``preset_name`` for ``model``.

    ``base_url`` overrides the variant's URL (a proxy, a test server). The key is ``api_key``
    when given, else the value of ``api_key_env`` (default: the variant's variable) in
    ``environ`` (default ``os.environ``); where the endpoint needs no key (``key_rule``) an
    unset variable means the connection sends none. The preset's optional headers
    (``request.headers_env``) are read from ``environ`` too. ``capabilities`` are checked now
    (``Preset.check``), so a connection that cannot serve them is refused before any run.
    ``config_name`` is the config's name for the connection; it and the key's variable go
    into error messages.

    Raises:
        ConfigError: an unknown preset (``MODEL_PRESET_UNKNOWN``) or variant
            (``MODEL_PRESET_VARIANT``), an unsupported capability, or an unset / empty key
            variable where a key is required (``MODEL_API_KEY_MISSING``, naming the variable,
            never a value).
    """
    if not model:
        raise ConfigError(f"model connection on preset {preset_name!r}: 'model' must be given",
                          code="MODEL_ID_MISSING")
    preset = load_preset(preset_name)
    endpoint = preset.endpoint(variant)
    preset.check(capabilities, model=model)
    env = os.environ if environ is None else environ
    rule = key_rule(endpoint, base_url=base_url, api_key_env=api_key_env)
    variable: str | None = None
    if api_key is None:
        variable = rule.variable
        api_key = (env.get(variable) or None) if variable is not None else None
        if api_key is None and rule.required:
            raise ConfigError(
                f"model connection on preset {preset_name!r} (variant {variant!r}): the API key "
                f"variable {variable!r} is not set or empty; export it, or name another "
                "variable with api_key_env",
                code="MODEL_API_KEY_MISSING",
            )
    headers = {header: env[name] for header, name in preset.for_model(model).request.headers_env.items()
               if env.get(name)}
    return Connection(
        base_url=base_url or endpoint.base_url, api_key=api_key or "", model=model,
        config_name=config_name, api_key_env=variable, extra_headers=headers,
        **preset.connection_kwargs(model),
    )
