"""Budget: resolve the window W and output reserve O of one model, saying where each came from.

Rules (000 §4):

- W comes from the provider's descriptor, else from the agent config; with neither the release
  does not compile (``ConfigError`` naming the config key to set). A configured W may narrow the
  provider's window, never widen it.
- O is the configured output limit, else the provider's, else the platform default
  ``min(4096, floor(W / 4))`` labelled ``output_limit_source="platform_default"`` — a platform
  budget, never presented as the model's real limit.

``resolve_descriptor`` is the one place these rules live: the agent loop's budget
(``agent.compaction.Budget.of``) takes W and O from it. How W and O are spent on a request is
the compaction stage's business, not this module's.
"""

from __future__ import annotations

from agentloom.errors import ConfigError
from agentloom.models.types import DescriptorSource, ModelDescriptor

__all__ = [
    "OUTPUT_LIMIT_KEY",
    "PLATFORM_OUTPUT_CAP",
    "WINDOW_KEY",
    "platform_output_reserve",
    "resolve_descriptor",
]

WINDOW_KEY = "window"
"""Agent model config key for W (``agents.<agent>.model.window``)."""
OUTPUT_LIMIT_KEY = "output_limit"
"""Agent model config key for O (``agents.<agent>.model.output_limit``)."""
PLATFORM_OUTPUT_CAP = 4096


def platform_output_reserve(window: int) -> int:
    """The platform's conservative output reserve for a window: ``min(4096, floor(W / 4))``."""
    return min(PLATFORM_OUTPUT_CAP, window // 4)


def resolve_descriptor(
    provider: ModelDescriptor | None,
    *,
    configured_window: int | None,
    configured_output_limit: int | None,
    model: str | None,
    config_path: str = "agents.<agent>.model",
) -> ModelDescriptor:
    """The descriptor of ``model``: W and O with their sources (``provider`` ``None``: only
    the configured values are known; ``model`` ``None``: messages name no model).

    ``source`` is where W came from; ``output_limit_source`` is where O came from. Provider
    ``fetched_at`` and ``extras`` are kept.

    Raises:
        ConfigError: W is unknown (set ``{config_path}.window``), a configured value is
            not a positive integer or exceeds what the provider states, or O leaves no room for
            input in W (set ``{config_path}.output_limit``).
    """
    known_window = provider.window if provider is not None else None
    known_output = provider.output_limit if provider is not None else None
    window_key = f"{config_path}.{WINDOW_KEY}"
    output_key = f"{config_path}.{OUTPUT_LIMIT_KEY}"
    named = f"model {model!r}: " if model else ""
    _positive(configured_window, window_key, named)
    _positive(configured_output_limit, output_key, named)

    window: int
    source: DescriptorSource
    if configured_window is not None:
        if known_window is not None and configured_window > known_window:
            raise ConfigError(
                f"{named}{window_key}={configured_window} exceeds the provider's window "
                f"{known_window}; set it to at most {known_window} or remove it",
                code="MODEL_WINDOW_INVALID",
            )
        window, source = configured_window, "config"
    elif known_window is not None:
        window, source = known_window, "provider"
    else:
        raise ConfigError(
            f"{named}the context window is unknown (the provider does not state it); "
            f"set {window_key} in the agent config",
            code="MODEL_WINDOW_UNKNOWN",
        )

    output: int
    output_source: DescriptorSource
    if configured_output_limit is not None:
        if known_output is not None and configured_output_limit > known_output:
            raise ConfigError(
                f"{named}{output_key}={configured_output_limit} exceeds the provider's "
                f"output limit {known_output}; set it to at most {known_output}",
                code="MODEL_OUTPUT_LIMIT_INVALID",
            )
        if configured_output_limit >= window:
            raise ConfigError(
                f"{named}{output_key}={configured_output_limit} leaves no room for input "
                f"in a window of {window}; set it below {window}",
                code="MODEL_OUTPUT_LIMIT_INVALID",
            )
        output, output_source = configured_output_limit, "config"
    elif known_output is not None:
        if known_output >= window:
            raise ConfigError(
                f"{named}the provider's output limit {known_output} leaves no room for "
                f"input in a window of {window}; set {output_key} below {window}",
                code="MODEL_OUTPUT_LIMIT_INVALID",
            )
        output, output_source = known_output, "provider"
    else:
        output, output_source = platform_output_reserve(window), "platform_default"

    return ModelDescriptor(
        provider_model_id=provider.provider_model_id if provider is not None else model or "",
        window=window,
        output_limit=output,
        source=source,
        fetched_at=provider.fetched_at if provider is not None else None,
        output_limit_source=output_source,
        extras=dict(provider.extras) if provider is not None else {},
    )


def _positive(value: int | None, key: str, named: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{named}{key} must be a positive integer, not {value!r}")
