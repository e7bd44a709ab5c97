"""Identifiers. Every id is minted by the runtime; nothing from a model or hook becomes one."""

from __future__ import annotations

import os
import random
import time

_rng = random.Random(random.SystemRandom().getrandbits(128))
# A forked child must not mint the ids its parent mints next: give it a fresh seed.
os.register_at_fork(after_in_child=lambda: _rng.seed(random.SystemRandom().getrandbits(128)))


def new_id() -> str:
    """A time-ordered UUID (version 7 layout) as a string: sortable by creation time."""
    ms = time.time_ns() // 1_000_000
    r = _rng.getrandbits(74)
    v = (ms << 80) | (0x7 << 76) | ((r >> 62) << 64) | (0b10 << 62) | (r & ((1 << 62) - 1))
    h = f"{v:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
