"""Which keys of a configuration changed: named in ``RELEASE_CHANGED`` on resume."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["changed_keys"]


def changed_keys(old: Any, new: Any, at: str = "") -> list[str]:
    """Dotted key paths whose values differ between two parsed configurations (a key only
    one side has counts; lists are compared whole), sorted."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        keys: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            where = f"{at}.{key}" if at else str(key)
            if key not in old or key not in new:
                keys.append(where)
            else:
                keys.extend(changed_keys(old[key], new[key], where))
        return keys
    return [] if old == new else [at or "(top level)"]
