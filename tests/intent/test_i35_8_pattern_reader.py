"""Issue #35 item 8: the intent prefilter reads patterns without CPython's private ``re._parser``
(``intent/_pattern.py``, written on ``re``'s documented syntax), and stays sound: a message a
rule's pattern matches always meets the requirement the filter indexes the rule by."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentloom.intent._pattern import parse
from agentloom.intent._prefilter import fold, requirement, words

SRC = Path(__file__).resolve().parents[2] / "src" / "agentloom"


def test_i35_8_no_module_imports_a_private_part_of_re() -> None:
    users = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
             if re.search(r"re\._(parser|constants|compiler)|sre_(parse|constants|compile)",
                          p.read_text(encoding="utf-8"))]
    assert users == []


def test_i35_8_the_requirements_the_filter_indexes_by() -> None:
    assert requirement(r"\bmove\b") == {(True, "move")}
    assert requirement("cancel (my )?order") == {(False, "cancel ")}
    assert requirement(r"book a (table|room) for (?P<n>\d+)") == {(True, "table"), (True, "room")}
    assert requirement(r"(?i:Hello) world") == {(False, " world")}
    assert requirement(r"x?ab+c") is None  # nothing of three characters every match has
    assert requirement(r"(?x) s e n d") is None  # verbose mode is not read: always run
    assert requirement(r"[abc]def|(?=x)") is None  # a branch that needs nothing


def test_i35_8_what_the_reader_cannot_follow_is_refused_not_guessed() -> None:
    for pattern in ("(abc", "abc)", "[abc", "abc\\", "(?x)abc", "(?Q)"):
        assert parse(pattern) is None, pattern
    assert requirement("(abc") is None


_ATOMS = st.sampled_from(["a", "b", "ab", "abc", "cab", " ", "-", ".", "\\b", "\\d", "\\w+",
                          "[ab]", "[^a]", "\\.", "^", "$", "\\Bb", "\\x61", "(?i)"])
_QUANT = st.sampled_from(["", "", "", "?", "*", "+", "{2}", "{0,2}", "{1,}", "+?"])


@st.composite
def _patterns(draw: st.DrawFn, depth: int = 2) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth and draw(st.booleans()):
            inner = "|".join(draw(_patterns(depth - 1)) for _ in range(draw(st.integers(1, 2))))
            atom = draw(st.sampled_from(["({})", "(?:{})", "(?P<g{}>{})", "(?>{})"]))
            atom = atom.format(draw(st.integers(0, 99)), inner) if "P<" in atom else atom.format(inner)
        else:
            atom = draw(_ATOMS)
        parts.append(atom + (draw(_QUANT) if atom not in ("^", "$", "\\b", "(?i)") else ""))
    return "".join(parts)


@settings(max_examples=600, deadline=None)
@given(_patterns(), st.text(alphabet="abcABC .-1", max_size=12))
def test_i35_8_a_matching_message_always_meets_the_requirement(pattern: str, text: str) -> None:
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error:
        return
    needs = requirement(pattern)
    if needs is None or compiled.search(text) is None:
        return
    folded = fold(text)
    assert any((needed in words(folded)) if whole else (needed in folded)
               for whole, needed in needs), (pattern, text, needs)
