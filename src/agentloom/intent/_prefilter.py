"""Which rules can possibly match a message, without running them.

For each pattern, the parsed regular expression yields a *requirement*: a set of lower-case
ASCII needs at least one of which every match meets — a whole word (``\\bmove `` needs the
word ``move``: one dictionary look-up per word of the message) or, failing that, a string
every match contains (``cancel (my )?order`` contains ``"cancel "``); for an alternation,
one per branch. A rule whose requirement the message does not meet cannot match and is not
run. A pattern with no usable requirement is always run, so the filter may let through too
much, never too little: with ``re.IGNORECASE`` an ASCII letter also matches its other case
and the four non-ASCII letters ``İ ı ſ K`` (Kelvin sign), which ``fold`` maps to ASCII
before lower-casing. The pattern is read by ``intent._pattern`` (written on ``re``'s documented
syntax; what it does not know it reads as "anything", so it never makes the filter stricter).
"""

from __future__ import annotations

import re

from agentloom.intent._pattern import OTHER, Branch, Edge, Group, Literal, Node, Repeat, parse

__all__ = ["MIN_LENGTH", "WORD", "Need", "fold", "keyword_need", "requirement", "words"]

MIN_LENGTH = 3
"""A literal shorter than this is too common to filter on."""
_FOLD = str.maketrans({"İ": "i", "ı": "i", "ſ": "s", "\u212a": "k"})


_SEPARATORS = str.maketrans({chr(i): " " for i in range(128)
                             if not (chr(i).isalnum() or chr(i) == "_")})


def words(folded: str) -> set[str]:
    """The ``\\w+`` words of a folded message (for ASCII text without a regular expression)."""
    if folded.isascii():
        return set(folded.translate(_SEPARATORS).split())
    return set(WORD.findall(folded))


def fold(text: str) -> str:
    """``text`` lower-cased as the requirements are (the four special letters mapped)."""
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


Need = tuple[bool, str]
"""``(True, word)``: a whole word (``\\w+`` token) every match has; ``(False, text)``: a string
every match contains."""

WORD = re.compile(r"\w+")


def requirement(pattern: str) -> frozenset[Need] | None:
    """Needs at least one of which every match of ``pattern`` meets; ``None`` when no such
    set of strings of at least ``MIN_LENGTH`` characters is found."""
    parsed = parse(pattern)  # None: not read; the rule compiles elsewhere and is always run
    return None if parsed is None else _sequence(parsed)


def keyword_need(keywords: tuple[str, ...]) -> frozenset[Need] | None:
    """The need of a keyword rule: the longest ``\\w+`` piece of its keywords (each keyword is
    a whole word of the message, so each of its pieces is a whole ``\\w+`` token)."""
    pieces = [piece for keyword in keywords for piece in WORD.findall(fold(keyword))]
    if not pieces:
        return None
    best = max(pieces, key=len)
    return frozenset({(True, best)}) if len(best) >= MIN_LENGTH else None


def _score(needs: frozenset[Need]) -> tuple[bool, int, int]:
    return (all(word for word, _ in needs), min(len(text) for _, text in needs), -len(needs))


def _better(a: frozenset[Need] | None, b: frozenset[Need] | None) -> frozenset[Need] | None:
    """The more selective need: whole words, then the longer shortest string, then fewer."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=_score)


def _is_edge(item: Node | None) -> bool:
    """Whether ``item`` guarantees a word ends (or starts) beside it: an edge assertion, or a
    literal non-word character."""
    if isinstance(item, Edge):
        return True
    return isinstance(item, Literal) and not (item.char.isalnum() or item.char == "_")


def _run_needs(run: str, closed_left: bool, closed_right: bool) -> frozenset[Need] | None:
    """The best need of a literal run: a whole word inside it when one is closed on both
    sides (by a non-word character of the run or an edge assertion), else the run itself."""
    best: frozenset[Need] | None = None
    if len(run) >= MIN_LENGTH:
        best = frozenset({(False, run)})
    for match in WORD.finditer(run):
        left = match.start() > 0 or closed_left
        right = match.end() < len(run) or closed_right
        if left and right and len(match.group()) >= MIN_LENGTH and match.group().isascii():
            best = _better(best, frozenset({(True, match.group())}))
    return best


def _sequence(items: tuple[Node, ...], left: Node | None = None,
              right: Node | None = None) -> frozenset[Need] | None:
    """The best need of a sequence; ``left`` / ``right`` are the items beside it in the
    enclosing sequence (a group's neighbours), so a word at its edge can count as whole."""
    best: frozenset[Need] | None = None
    run: list[str] = []
    before: Node | None = None  # the item before the current run

    def beside(i: int) -> Node | None:
        if i < 0:
            return left
        return items[i] if i < len(items) else right

    def flush(after: Node | None) -> None:
        nonlocal best
        if run:
            best = _better(best, _run_needs("".join(run), _is_edge(before), _is_edge(after)))
        run.clear()

    for i, item in enumerate(items):
        if isinstance(item, Literal):
            if not run:
                before = beside(i - 1)
            run.append(item.char.lower())
            continue
        flush(item)
        if isinstance(item, Group):
            best = _better(best, _sequence(item.items, beside(i - 1), beside(i + 1)))
        elif isinstance(item, Branch):
            branches = [_sequence(b, beside(i - 1), beside(i + 1)) for b in item.options]
            if branches and all(b is not None for b in branches):
                best = _better(best, frozenset().union(*(b for b in branches if b is not None)))
        elif isinstance(item, Repeat) and item.least >= 1:
            best = _better(best, _sequence(item.items))
        else:
            assert item is OTHER or isinstance(item, (Edge, Repeat))
    flush(right)
    return best
