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

``build_descriptor`` is what every agent gets when it is built (``AgentSpec``, the config
build): what is known about its model without asking anyone (``known_descriptor``: a preset's
documented window, an offline model's own) — else, when no window is configured either, what
the provider's model listing states (one bounded ``GET /models``, where the preset declares
discovery) — else a refusal naming ``agents.<agent>.model.window``::

    configured window ──┐ (may narrow, never widen)
    preset / offline ───┼──► resolve_descriptor ──► W, O (+ sources)
    GET /models ────────┘ (only when neither of the above gives W)
"""

from __future__ import annotations

from collections.abc import Callable

from agentloom.errors import ConfigError
from agentloom.limits import PLATFORM_OUTPUT_CAP, platform_output_reserve, resolve_limits
from agentloom.models.offline import OFFLINE_WINDOW, ScriptModel, TestModel
from agentloom.models.ports import Connection
from agentloom.models.types import ModelDescriptor

__all__ = [
    "OUTPUT_LIMIT_KEY",
    "PLATFORM_OUTPUT_CAP",
    "WINDOW_KEY",
    "build_descriptor",
    "known_descriptor",
    "model_id",
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


# -- an agent's model, at build time ---------------------------------------------------------


def _connection(model: object) -> Connection | None:
    """The ``Connection`` of a model source: itself, or an adapter's ``connection``."""
    if isinstance(model, Connection):
        return model
    connection = getattr(model, "connection", None)
    return connection if isinstance(connection, Connection) else None


def model_id(model: object) -> str:
    """The model id of a model source, for messages and descriptors."""
    connection = _connection(model)
    if connection is not None:
        return connection.model
    named = getattr(model, "model", None)
    return named if isinstance(named, str) else type(model).__name__


def _offline(model: str, window: int, output_limit: int | None) -> ModelDescriptor:
    return ModelDescriptor(provider_model_id=model, window=window, output_limit=output_limit,
                           source="provider",
                           output_limit_source="provider" if output_limit is not None else None,
                           extras={"offline": True})


def known_descriptor(model: object) -> ModelDescriptor | None:
    """What is known about ``model`` without asking anyone: the window its connection's preset
    documents (``Connection.descriptor``), or an offline model's own — the ``test`` model's
    ``OFFLINE_WINDOW``; a ``script``'s ``window`` (and ``output_limit`` when its file sets
    one). An offline model that states no output limit leaves O to the platform default
    (``min(4096, W // 4)``, which is ``OFFLINE_OUTPUT_LIMIT`` for the default window), so a
    narrower ``window`` works without an ``output_limit``. ``None`` for anything else."""
    connection = _connection(model)
    if connection is not None:
        return connection.descriptor
    if isinstance(model, TestModel):
        return _offline(model.model, OFFLINE_WINDOW, None)
    if isinstance(model, ScriptModel):
        script = model.script
        stated = script.output_limit if "output_limit" in script.model_fields_set else None
        return _offline(model.model, script.window, stated)
    return None


def build_descriptor(
    model: object,
    *,
    agent: str,
    configured_window: int | None,
    configured_output_limit: int | None,
    config_path: str | None = None,
    before_discovery: Callable[[], None] | None = None,
) -> ModelDescriptor:
    """The resolved descriptor of agent ``agent``'s ``model`` (W and O set, with sources).

    W: ``configured_window`` (checked against what is known: it may narrow, never widen), else
    ``known_descriptor``, else — only then — the provider's model listing where the model's
    connection has ``discovery`` (one bounded request; ``before_discovery`` runs first, e.g. the
    agent's capability check, so a refusal that needs no network comes first). O: by
    ``resolve_descriptor``. ``config_path`` is the agent's model key
    (default ``agents.<agent>.model``).

    Raises:
        ConfigError: W is unknown (``MODEL_WINDOW_UNKNOWN``: the message names the agent, the
            model, why nothing is known and ``<config_path>.window`` to set), or a configured
            value is invalid or wider than what is known (as ``resolve_descriptor``).
    """
    key = config_path or f"agents.{agent}.model"
    name = model_id(model)
    known = known_descriptor(model)
    if known is None and configured_window is None:
        connection = _connection(model)
        why = "the model adapter states no window"
        if connection is not None and connection.discovery is not None:
            if before_discovery is not None:
                before_discovery()
            found = connection.discovery(connection)
            if found.window is not None:
                known = found
            else:
                why = str(found.extras.get("unknown_because") or "the provider's listing states none")
        elif connection is not None:
            provider = f"preset {connection.name!r}" if connection.name else "its connection"
            why = (f"{provider} documents no window for this model and does not discover one "
                   "from the provider's model listing")
        if known is None:
            raise ConfigError(
                f"agent {agent!r}: model {name!r}: the context window is unknown ({why}); set "
                f"{key}.{WINDOW_KEY} to the model's context window in tokens "
                "(Python: AgentSpec(window=...))", code="MODEL_WINDOW_UNKNOWN")
    try:
        return resolve_descriptor(known, configured_window=configured_window,
                                  configured_output_limit=configured_output_limit,
                                  model=name, config_path=key)
    except ConfigError as exc:
        raise ConfigError(f"agent {agent!r}: {exc.error.message}", code=exc.code) from None
