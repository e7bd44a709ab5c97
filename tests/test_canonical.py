"""Issue #13 item 7: one module holds every canonical JSON encoding, and each named encoder
writes exactly the bytes its callers wrote before (digests and stored text must not move)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentloom.canonical import (
    canonical_ascii_json,
    canonical_json,
    compact_json,
    readable_json,
    sorted_json,
)

VALUES: list[Any] = [
    {"b": [1, "é", {"z": None, "a": 1.5}], "a": "\u2603", "c": True},
    ["\u0000 control", {"emoji": "\U0001f600", "n": -0.0}],
    {},
    "plain",
]


@pytest.mark.parametrize("value", VALUES)
def test_13_7_each_canonical_encoder_writes_the_bytes_it_replaced(value: Any) -> None:
    assert canonical_json(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_ascii_json(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), default=str)
    assert compact_json(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert sorted_json(value) == json.dumps(value, sort_keys=True)
    assert readable_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False)


def test_13_7_no_module_builds_its_own_canonical_encoder() -> None:
    """A sorted-keys encoding outside ``agentloom.canonical`` is a second source of digest
    bytes: every one goes through a named encoder there (the CLI's display and the test
    harness's output lines aside: nothing is computed from them)."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "agentloom"
    found = [f"{p.relative_to(src)}" for p in src.rglob("*.py")
             if p.name != "canonical.py" and ("sort_keys=True" in p.read_text(encoding="utf-8")
                                               or "JSONEncoder(" in p.read_text(encoding="utf-8"))]
    assert found == [] or all(f.startswith(("cli/", "testing/"))
                              for f in found), found
