"""Token counts as a provider reports them: believed only when they are counts.

A provider's usage object is outside input. A field that is not a whole number of tokens —
negative, a fraction, text, anything but an ``int`` (``bool`` aside) from 0 up — is recorded
as not reported (``None``), never as a number, and a warning on the ``agentloom.models``
logger names the field and what was sent (on stderr in the CLI). So one bad field can never
lower a run's usage totals nor refund its token quota: ``-1000`` prompt tokens counts as
unknown, not as a thousand tokens given back.

Owns: that judgement, for every adapter and preset mapping. Does not own: where each field
is found in a provider's object (the adapters, ``presets.UsageMapping``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from agentloom.models.types import Usage

__all__ = ["reported_usage"]

log = logging.getLogger("agentloom.models")

_SHOWN = 40  # characters of a bad value quoted in the warning


def reported_usage(fields: Mapping[str, tuple[str, object]]) -> Usage:
    """``Usage`` from ``fields``: each ``Usage`` field name → (the provider's name for it, as
    the warning shows it; the value it sent, ``None`` when absent). A value that is not a
    token count is left out, with a warning."""
    counts: dict[str, int] = {}
    for name, (provider_name, value) in fields.items():
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            counts[name] = value
            continue
        shown = repr(value)
        if len(shown) > _SHOWN:
            shown = shown[: _SHOWN - 1] + "…"
        log.warning("the provider reported %s=%s, which is not a token count; it is recorded "
                    "as not reported", provider_name, shown)
    return Usage(**counts)
