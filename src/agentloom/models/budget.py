"""Budget: resolve the window W and output reserve O of one model, saying where each came from.

Rules (000 §4):

- W comes from the provider's descriptor, else from the agent config; with neither the release
  does not compile (``ConfigError`` naming the config key to set). A configured W may narrow the
  provider's window, never widen it.
- O is the configured output limit, else the provider's, else the platform default
  ``min(4096, floor(W / 4))`` labelled ``output_limit_source="platform_default"`` — a platform
  budget, never presented as the model's real limit.

``resolve_descriptor`` is where these rules meet a descriptor; the rule itself, on plain
numbers, is the core's ``agentloom.limits`` (the config check uses it too). The agent loop's
budget (``agent.compaction.Budget.of``) takes W and O from it. How W and O are spent on a
request is the compaction stage's business, not this module's.
"""

from __future__ import annotations

from agentloom.limits import PLATFORM_OUTPUT_CAP, platform_output_reserve, resolve_limits
from agentloom.models.types import ModelDescriptor

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
    limits = resolve_limits(
        known_window=provider.window if provider is not None else None,
        known_output_limit=provider.output_limit if provider is not None else None,
        configured_window=configured_window,
        configured_output_limit=configured_output_limit,
        window_key=f"{config_path}.{WINDOW_KEY}",
        output_key=f"{config_path}.{OUTPUT_LIMIT_KEY}",
        named=f"model {model!r}: " if model else "",
    )
    return ModelDescriptor(
        provider_model_id=provider.provider_model_id if provider is not None else model or "",
        window=limits.window,
        output_limit=limits.output_limit,
        source=limits.window_source,
        fetched_at=provider.fetched_at if provider is not None else None,
        output_limit_source=limits.output_limit_source,
        extras=dict(provider.extras) if provider is not None else {},
    )
