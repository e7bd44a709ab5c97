"""Model limits: the rule for a model's context window W and output limit O, on plain numbers.

Owns: which W and O win and where each came from (000 §4) — W from the config, else from the
provider, else unknown (an error naming the key to set); O from the config, else from the
provider, else the platform default ``min(4096, floor(W / 4))`` — and the checks on them: a
configured value is a positive integer, never wider than what the provider states, and O
leaves room for input in W (``leaves_input_room``). Does not own: model descriptors
(``models.budget.resolve_descriptor`` turns ``Limits`` into one) nor where the numbers come
from (config files, provider presets). Core, so ``config`` checks a file by the same rule
without importing ``models``::

    config.model (load-time problems) ──► leaves_input_room
    models.budget.resolve_descriptor ───► resolve_limits ──► Limits(window, output_limit, …)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from agentloom.errors import ConfigError

__all__ = [
    "CHARS_PER_TOKEN",
    "PLATFORM_OUTPUT_CAP",
    "CallWindow",
    "LimitSource",
    "Limits",
    "call_window",
    "current_window",
    "fixed_tokens",
    "leaves_input_room",
    "platform_output_reserve",
    "resolve_limits",
]

LimitSource = Literal["provider", "config", "platform_default"]
PLATFORM_OUTPUT_CAP = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """W and O of one model, each with where it came from."""

    window: int
    window_source: LimitSource
    output_limit: int
    output_limit_source: LimitSource


def platform_output_reserve(window: int) -> int:
    """The platform's conservative output reserve for a window: ``min(4096, floor(W / 4))``."""
    return min(PLATFORM_OUTPUT_CAP, window // 4)


def leaves_input_room(window: int, output_limit: int) -> bool:
    """Whether an output limit leaves room for input in a window (``O < W``)."""
    return output_limit < window


def resolve_limits(
    *,
    known_window: int | None,
    known_output_limit: int | None,
    configured_window: int | None,
    configured_output_limit: int | None,
    window_key: str,
    output_key: str,
    named: str = "",
) -> Limits:
    """W and O from what the provider states (``known_*``) and what is configured.

    ``window_key`` / ``output_key`` are the config keys the errors name; ``named`` prefixes
    every message (``"model 'x': "``).

    Raises:
        ConfigError: a configured value is not a positive integer or exceeds what the provider
            states (``MODEL_WINDOW_INVALID``, ``MODEL_OUTPUT_LIMIT_INVALID``), W is unknown
            (``MODEL_WINDOW_UNKNOWN``), or O leaves no room for input in W.
    """
    _positive(configured_window, window_key, named)
    _positive(configured_output_limit, output_key, named)

    window: int
    source: LimitSource
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
    output_source: LimitSource
    if configured_output_limit is not None:
        if known_output_limit is not None and configured_output_limit > known_output_limit:
            raise ConfigError(
                f"{named}{output_key}={configured_output_limit} exceeds the provider's "
                f"output limit {known_output_limit}; set it to at most {known_output_limit}",
                code="MODEL_OUTPUT_LIMIT_INVALID",
            )
        if not leaves_input_room(window, configured_output_limit):
            raise ConfigError(
                f"{named}{output_key}={configured_output_limit} leaves no room for input "
                f"in a window of {window}; set it below {window}",
                code="MODEL_OUTPUT_LIMIT_INVALID",
            )
        output, output_source = configured_output_limit, "config"
    elif known_output_limit is not None:
        if not leaves_input_room(window, known_output_limit):
            raise ConfigError(
                f"{named}the provider's output limit {known_output_limit} leaves no room for "
                f"input in a window of {window}; set {output_key} below {window}",
                code="MODEL_OUTPUT_LIMIT_INVALID",
            )
        output, output_source = known_output_limit, "provider"
    else:
        output, output_source = platform_output_reserve(window), "platform_default"
    return Limits(window=window, window_source=source, output_limit=output,
                  output_limit_source=output_source)


def _positive(value: int | None, key: str, named: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{named}{key} must be a positive integer, not {value!r}")


# -- the window of the model call being made ---------------------------------------------
# ``call_window`` tells the pipeline the window of the model call the current task is making
# (the agent loop sets it around ``ModelGateway.generate``); ``fixed_tokens`` measures the part
# of a model payload compaction can never shorten. With them a before-hook's patch that adds
# fixed material which cannot fit is refused (000 §5.2.5); without a window nothing is checked.

CHARS_PER_TOKEN = 3
"""The pessimistic offline estimate: one token per three characters of the JSON sent (the
same rule as ``agent.compaction.estimate_tokens``)."""


@dataclass(frozen=True, slots=True)
class CallWindow:
    """W and O of one model call, in tokens; the input may use ``window - output_reserve``."""

    window: int
    output_reserve: int

    @property
    def input_limit(self) -> int:
        return self.window - self.output_reserve


_window: ContextVar[CallWindow | None] = ContextVar("agentloom_call_window", default=None)


@contextmanager
def call_window(window: int, output_reserve: int) -> Iterator[CallWindow]:
    """Within this block, the model calls this task makes have window ``window`` and output
    reserve ``output_reserve`` (the agent's resolved budget)."""
    value = CallWindow(window, output_reserve)
    token = _window.set(value)
    try:
        yield value
    finally:
        _window.reset(token)


def current_window() -> CallWindow | None:
    """The window ``call_window`` set for this task's model call, else ``None`` (unknown)."""
    return _window.get()


def _chars(part: Any) -> int:
    return len(json.dumps(part, ensure_ascii=False))


def fixed_tokens(messages: Sequence[Any], tools: Sequence[Any] = ()) -> int:
    """The estimated tokens of a model payload's ``messages`` and ``tools`` that compaction
    keeps whatever happens: every tool definition, every message but an assistant or tool
    message after the leading system / user messages and before the latest assistant turn
    (the rule of ``agent.compaction.plan_compaction``)."""
    roles = [m.get("role") if isinstance(m, Mapping) else None for m in messages]
    start = 0
    while start < len(roles) and roles[start] in ("system", "user"):
        start += 1
    end = max((i for i, r in enumerate(roles) if r == "assistant"), default=-1)
    chars = sum(_chars(t) for t in tools)
    for i, (message, role) in enumerate(zip(messages, roles, strict=True)):
        if start <= i < end and role in ("assistant", "tool"):
            continue  # what a compaction summary replaces
        chars += _chars(message)
    return math.ceil(chars / CHARS_PER_TOKEN)
