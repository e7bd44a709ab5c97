"""Values of the collaboration state (``squad.collab``): JSON checked before it is stored, names
that must be non-empty strings, and the timestamp that orders rows written one after another.

Owns: what counts as a storable JSON value here (map keys are strings, numbers finite). Does
not own: the rows (``squad.collab``) nor the stored text (``canonical``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["json_value", "non_empty", "stamp"]


def json_value(value: Any, *, where: str = "value") -> Any:
    """A plain JSON copy of ``value`` (tuples become lists).

    Raises:
        ValueError: a map key that is not a string, a float that is not finite, or a value
            JSON has no form for — named by its path below ``where``.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}: JSON has no such number")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has the map key {key!r} ({type(key).__name__}): a "
                                 "map key must be a string (it is stored as JSON text)")
            out[key] = json_value(item, where=f"{where}[{key!r}]")
        return out
    if isinstance(value, list | tuple):
        return [json_value(item, where=f"{where}[{i}]") for i, item in enumerate(value)]
    raise ValueError(f"{where} is a {type(value).__name__}: only JSON values (null, bool, "
                     "number, string, list, map with string keys) can be stored")


def non_empty(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


_clock_lock = threading.Lock()
_last_stamp = 0.0


def stamp() -> float:
    """Wall-clock seconds, strictly increasing within this process: rows written one after
    another sort in that order even when the clock does not move (or steps back)."""
    global _last_stamp
    with _clock_lock:
        now = time.time()
        if now <= _last_stamp:
            now = math.nextafter(_last_stamp, math.inf)
        _last_stamp = now
        return now
