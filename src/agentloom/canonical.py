"""Canonical JSON: the one encoding of a JSON value used for digests, hashes and stored text.

Owns: the exact bytes of every canonical encoding (release ids, content digests, hook
``config_version``, change-set hashes, stored JSON columns). Does not own: what is encoded,
nor JSON read back (``json.loads`` is fine for that).

Each encoder is a pre-built ``json.JSONEncoder(...).encode`` bound method: these run on the
hot path (every stored row), and building an encoder per call is what ``json.dumps`` with
keyword arguments does. Changing any option here changes stored text and every digest, so
the options are frozen; a caller that needs different bytes gets its own named encoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["canonical_ascii_json", "canonical_json", "compact_json", "indented_json", "readable_json",
           "sorted_json"]

canonical_json: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode
"""Compact, keys sorted, non-ASCII kept: stored JSON columns, catalog and preset digests."""

canonical_ascii_json: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), sort_keys=True, default=str).encode
"""As ``canonical_json`` but non-ASCII escaped (``\\uXXXX``) and a non-JSON value written as its
``str()``: the hook ``config_version`` and change-set digests, computed this way from the start."""

compact_json: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False).encode
"""Compact, non-ASCII kept, keys in insertion order: the in-memory store's column text."""

sorted_json: Callable[[Any], str] = json.JSONEncoder(sort_keys=True).encode
"""Keys sorted, ``", "`` / ``": "`` separators, non-ASCII escaped — ``json.dumps(v,
sort_keys=True)``: the release id's digest, a workspace manifest, the arguments a transcript
names; computed this way from the start."""

readable_json: Callable[[Any], str] = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
"""As ``sorted_json`` but non-ASCII kept: JSON shown to a model (a JSON block as text, a
tool's parameters or an output schema in a corrective message)."""

indented_json: Callable[[Any], str] = json.JSONEncoder(
    sort_keys=True, ensure_ascii=False, indent=1).encode
"""As ``readable_json``, one value a line: two JSON values shown side by side as a line diff
(``agentloom runs replay``'s divergences)."""
