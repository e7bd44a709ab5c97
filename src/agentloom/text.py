"""Text every store can hold, whatever a model, a tool or a hook produced.

A lone surrogate (``"\\ud800"``: valid in a Python ``str``, not in UTF-8) cannot be written
to SQLite or PostgreSQL, and PostgreSQL's ``jsonb`` refuses NUL. Where text enters the
pipeline — the result of an Attempt, which carries a model's reply and a tool's output — each
such code point is replaced with U+FFFD (``storable``) and the count is recorded on the raw
result (``metadata.text_replaced``), so the run goes on and what was changed is visible.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: Any) -> tuple[Any, int]:
    """``value`` (``str``, and ``list`` / ``tuple`` / ``dict`` of them, keys included) with
    every lone surrogate and NUL replaced by U+FFFD, and how many were replaced. Values
    that need no change are returned as they are (the same object)."""
    if isinstance(value, str):
        if _UNSTORABLE.search(value) is None:
            return value, 0
        return _UNSTORABLE.subn(REPLACEMENT, value)
    if isinstance(value, dict):
        total = 0
        items = []
        for key, item in value.items():
            key2, n_key = storable(key)
            item2, n_item = storable(item)
            total += n_key + n_item
            items.append((key2, item2))
        return (dict(items), total) if total else (value, 0)
    if isinstance(value, list | tuple):
        cleaned = [storable(item) for item in value]
        total = sum(n for _, n in cleaned)
        if not total:
            return value, 0
        return type(value)(item for item, _ in cleaned), total
    return value, 0
