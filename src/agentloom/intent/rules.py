"""The rule matcher: every intent's rules, compiled once, searched for each message.

A rule *hits* where its pattern matches (or all its keywords appear), unless the hit starts
inside quotes (a quoted instruction is reported, not given), a word of its ``unless`` appears,
or a negation (not, don't, never, …) stands in the few words before it in the same clause.
``RuleIndex.hits`` returns the best hit per intent; ``Recognizer`` decides between them.

Everything that can be compiled is compiled in ``RuleIndex.__init__``: a message costs one
lower-casing, one quote scan, and one ``search`` per pattern rule (``re`` in C).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._prefilter import fold, keyword_need, requirement, words
from .spec import IntentSpec

__all__ = ["NEGATIONS", "Hit", "RuleIndex", "quoted_spans"]

NEGATIONS = frozenset({"not", "don't", "dont", "never", "doesn't", "won't", "shouldn't",
                       "didn't", "can't", "cannot", "mustn't", "without"})
_NEGATION_WINDOW = 3
_QUOTES = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|«[^»]*»|(?:(?<=\s)|^)'[^']+'(?=[\s.,;:!?)]|$)")
_CLAUSE = re.compile(r"[,.;:!?]|\b(?:but|and|then|also)\b")
_WORD = re.compile(r"[\w']+")
_QUOTE_CHAR = re.compile("[\"“‘«']")
_NEGATION = re.compile(r"(?<![\w'])(?:" + "|".join(sorted(map(re.escape, NEGATIONS))) + r")(?![\w'])")


@dataclass(frozen=True, slots=True)
class Hit:
    """One intent's best rule hit: where it is and the slot values its groups captured."""

    intent: str
    start: int
    end: int
    groups: dict[str, str]
    spans: tuple[tuple[int, int], ...] = ()  # where the groups were captured

    def inside_a_group_of(self, other: Hit) -> bool:
        """Whether this hit lies in text ``other`` captured as a slot value (a request
        written inside another's free text: "remind me to X and book a room")."""
        return any(start <= self.start and self.end <= end for start, end in other.spans)

    @property
    def length(self) -> int:
        return self.end - self.start

    def overlaps(self, other: Hit) -> bool:
        return self.start < other.end and other.start < self.end


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every quoted passage of ``text``."""
    return [m.span() for m in _QUOTES.finditer(text)]


@dataclass(frozen=True, slots=True)
class _Rule:
    intent: str
    order: int
    pattern: re.Pattern[str] | None
    keywords: tuple[str, ...]
    unless: tuple[str, ...]
    negation: bool


class _Message:
    """One message, prepared once for every rule."""

    __slots__ = ("_present", "_words", "lower", "quotes", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = text.lower()
        self.quotes = quoted_spans(text) if _QUOTE_CHAR.search(text) else []
        self._words: list[tuple[str, int, int]] | None = None
        self._present: frozenset[str] | None = None

    def words(self) -> list[tuple[str, int, int]]:
        """Lower-case words outside quotes, with their spans."""
        if self._words is None:
            self._words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(self.lower)
                           if not self.quoted(m.start())]
        return self._words

    def present(self) -> frozenset[str]:
        """The set of lower-case words outside quotes."""
        if self._present is None:
            self._present = frozenset(w for w, _, _ in self.words()) if self.quotes \
                else frozenset(_WORD.findall(self.lower))
        return self._present

    def quoted(self, at: int) -> bool:
        return any(start <= at < end for start, end in self.quotes)

    def negated(self, at: int) -> bool:
        before = self.lower[:at]
        if not _NEGATION.search(before):  # the common case, one search
            return False
        clause = before[max((m.end() for m in _CLAUSE.finditer(before)), default=0):]
        return any(w in NEGATIONS for w in _WORD.findall(clause)[-_NEGATION_WINDOW:])


class RuleIndex:
    """Every rule of ``specs``, compiled, and indexed by the strings a match needs
    (``_prefilter``): a message runs only the rules whose strings it contains."""

    def __init__(self, specs: Iterable[IntentSpec], *, prefilter: bool = True) -> None:
        self._rules: list[_Rule] = []
        by_word: dict[str, list[int]] = {}
        by_text: dict[str, list[int]] = {}
        self._always: list[int] = []
        for spec in specs:
            for order, rule in enumerate(spec.rules):
                pattern = re.compile(rule.pattern, re.IGNORECASE) if rule.pattern else None
                index = len(self._rules)
                self._rules.append(_Rule(spec.id, order, pattern, rule.keywords, rule.unless,
                                         rule.negation))
                needs = requirement(rule.pattern) if rule.pattern else keyword_need(rule.keywords)
                if not prefilter or needs is None:
                    self._always.append(index)
                    continue
                for whole, needed in needs:
                    (by_word if whole else by_text).setdefault(needed, []).append(index)
        self._by_word = {k: tuple(v) for k, v in by_word.items()}
        self._by_text = tuple((k, tuple(v)) for k, v in by_text.items())

    def _candidates(self, text: str) -> list[_Rule]:
        folded = fold(text)
        chosen = set(self._always)
        by_word = self._by_word
        for word in words(folded) & by_word.keys():
            chosen.update(by_word[word])
        for needed, indexes in self._by_text:
            if needed in folded:
                chosen.update(indexes)
        rules = self._rules
        return [rules[i] for i in sorted(chosen)]

    def hits(self, text: str, refused: list[str] | None = None) -> list[Hit]:
        """The best hit of each intent whose rules hit ``text``: the longest, then the one
        filling most slots, then the first rule. Rules that matched but were refused
        (negated, quoted, an ``unless`` word) are appended to ``refused`` as reasons."""
        message = _Message(text)
        best: dict[str, tuple[tuple[int, int, int], Hit]] = {}
        for rule in self._candidates(text):
            hit = _hit(rule, message)
            if isinstance(hit, str):
                if refused is not None:
                    refused.append(f"{rule.intent}: {hit}")
                continue
            if hit is None:
                continue
            rank = (hit.length, len(hit.groups), -rule.order)
            if rule.intent not in best or rank > best[rule.intent][0]:
                best[rule.intent] = (rank, hit)
        return [hit for _, hit in best.values()]


def _hit(rule: _Rule, message: _Message) -> Hit | str | None:
    """The rule's hit, ``None`` when it does not match, or why a match does not count."""
    if rule.pattern is not None:
        match = _pattern_span(rule.pattern, message)
        if match is None or isinstance(match, str):
            return match
        start, end = match.span()
        groups = {k: v.strip() for k, v in match.groupdict().items() if v is not None and v.strip()}
        spans = tuple(match.span(k) for k in groups)
    else:
        present = message.present()
        if not all(k in present for k in rule.keywords):
            return None
        places = [(s, e) for w, s, e in message.words() if w in rule.keywords]
        start, end = min(s for s, _ in places), max(e for _, e in places)
        groups, spans = {}, ()
    if rule.unless and _has_any(message, rule.unless):
        return "an `unless` word appears"
    if rule.negation and message.negated(start):
        return "negated"
    return Hit(rule.intent, start, end, groups, spans)


def _pattern_span(pattern: re.Pattern[str], message: _Message) -> re.Match[str] | str | None:
    """The first non-empty match that does not start inside quotes ("quoted" when every match
    does)."""
    match = pattern.search(message.text)
    quoted: str | None = None
    while match is not None:
        if match.end() > match.start():
            if not (message.quotes and message.quoted(match.start())):
                return match
            quoted = "quoted, not asked for"
        match = pattern.search(message.text, match.start() + 1)
    return quoted


def _has_any(message: _Message, words: tuple[str, ...]) -> bool:
    present = message.present()
    return any((w in present) if " " not in w else (w in message.lower) for w in words)
