"""Wiring a provider preset into a ``Connection`` (000 §4): endpoint, key, protocol hooks.

``connection_for("deepseek", model="deepseek-chat")`` reads the preset, takes the variant's
base URL and the API key from the variant's environment variable, and sets the preset's body
builder, per-Attempt reasoning extractor and usage / finish / status mappers. The key is
read once, here; it never appears in a message, a ``repr`` or an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from agentloom.errors import ConfigError
from agentloom.models.ports import Connection
from agentloom.models.presets import load_preset

__all__ = ["connection_for"]


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
    ``environ`` (default ``os.environ``). ``capabilities`` are checked now (``Preset.check``),
    so a connection that cannot serve them is refused before any run. ``config_name`` is the
    config's name for the connection; it and the key's variable go into error messages.

    Raises:
        ConfigError: an unknown preset (``MODEL_PRESET_UNKNOWN``) or variant
            (``MODEL_PRESET_VARIANT``), an unsupported capability, or an unset / empty key
            variable (``MODEL_API_KEY_MISSING``, naming the variable, never a value).
    """
    if not model:
        raise ConfigError(f"model connection on preset {preset_name!r}: 'model' must be given",
                          code="MODEL_ID_MISSING")
    preset = load_preset(preset_name)
    endpoint = preset.endpoint(variant)
    preset.check(capabilities, model=model)
    variable: str | None = None
    if api_key is None:
        variable = api_key_env or endpoint.api_key_env
        api_key = (os.environ if environ is None else environ).get(variable) or None
        if api_key is None:
            raise ConfigError(
                f"model connection on preset {preset_name!r} (variant {variant!r}): the API key "
                f"variable {variable!r} is not set or empty; export it, or name another "
                "variable with api_key_env",
                code="MODEL_API_KEY_MISSING",
            )
    return Connection(
        base_url=base_url or endpoint.base_url, api_key=api_key, model=model,
        config_name=config_name, api_key_env=variable, **preset.connection_kwargs(model),
    )
