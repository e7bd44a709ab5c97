"""Identifiers. Every id is minted by the runtime; nothing from a model or hook becomes one."""

from __future__ import annotations

import os
import time
import uuid


def new_id() -> str:
    """A time-ordered UUID (version 7 layout) as a string: sortable by creation time."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 68) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))
