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

__all__ = ["NEGATIONS", "Hit", "RuleIndex", "not_asked", "quoted_spans"]

NEGATIONS = frozenset({"not", "don't", "dont", "never", "doesn't", "won't", "shouldn't",
                       "didn't", "can't", "cannot", "mustn't", "without"})
#: Words that make a message something other than a plain request wherever they stand
#: (issue #34, 4): reported speech, a condition, a supposition, a retraction.
NOT_ASKED = frozenset({"said", "says", "saying", "say", "wrote", "writes", "told", "tells", "tell",
                       "asked", "asks", "claimed", "claims", "mentioned", "suggested", "suggests",
                       "heard", "according", "demanded", "demands", "texted", "texts", "keeps",
                       "if", "whether", "unless", "suppose", "supposing", "assuming", "imagine",
                       "hypothetically", "once", "case", "would", "might", "maybe", "perhaps",
                       "wonder", "kidding", "joking", "scratch", "actually", "nevermind",
                       "nobody", "neither", "nor", "avoid", "refuse"})
_NO_NEED = re.compile(r"\bno (?:need|reason|point|way)\b")
#: Words that make the rest of their sentence a question or advice, before the request.
_ASKING = frozenset({"what", "why", "how", "when", "did", "does", "do", "was", "were", "should"})
_SENTENCE = re.compile(r"[.;!?\n]")
_QUOTES = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|«[^»]*»|(?:(?<=\s)|^)'[^']+'(?=[\s.,;:!?)]|$)")
_WORD = re.compile(r"[\w']+")
_QUOTE_CHAR = re.compile("[\"“‘«']")


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
        return not_asked(self.lower, at) is not None


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


def not_asked(text: str, at: int | None = None) -> str | None:
    """Why the request at ``at`` in ``text`` (anywhere, when ``None``) is not a plain one,
    else ``None``: a negation, reported speech, a condition or a retraction anywhere in the
    message — "please do NOT under any circumstances move …", "never, ever move …", "I never
    said: move …", "move … if the client agrees", "cancel order AB-123. Actually, don't." — or
    a question: a question word before the request in its sentence, or the sentence ends with
    "?". Conservative on purpose: a write started from such a reading needs a plain request, so
    the caller does nothing or asks instead."""
    lower = text.lower()
    words = _WORD.findall(lower)
    if any(w in NEGATIONS or w.endswith("n't") for w in words):
        return "negated"
    if any(w in NOT_ASKED for w in words) or _NO_NEED.search(lower):
        return "not asked for (reported, conditional or taken back)"
    if at is None and quoted_spans(text):
        return "quoted, not asked for"
    end = len(lower) if at is None else at
    start = max((m.end() for m in _SENTENCE.finditer(lower, 0, end)), default=0)
    if at is not None and any(w in _ASKING for w in _WORD.findall(lower[start:end])):
        return "a question, not a request"
    stop = _SENTENCE.search(lower, end)
    if (stop is not None and stop.group() == "?") or (at is None and "?" in lower):
        return "a question, not a request"
    return None


def _has_any(message: _Message, words: tuple[str, ...]) -> bool:
    present = message.present()
    return any((w in present) if " " not in w else (w in message.lower) for w in words)
