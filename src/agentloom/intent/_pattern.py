"""A reader of the parts of a regular expression the prefilter needs (``intent._prefilter``).

It turns a pattern into a tree of ``Node``s: literal characters, edge assertions, groups,
alternations, repeats with their minimum, and ``OTHER`` for everything whose text it does
not claim to know (a class, ``.``, ``\\w``, a back-reference, a look-around, a conditional, a
non-printable or escaped-by-number character). It is written on the documented syntax of
``re`` and never on CPython's private parser; what it does not understand it reads as
``OTHER``, which only makes the filter let more through, never less.

Owns: ``parse`` and the node shapes. Does not own: what a node requires of a message
(``intent._prefilter``). A pattern in verbose mode (``(?x)``) is not read (``parse`` returns ``None``):
its whitespace and comments would need their own rules, and such a rule is always run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EDGES", "OTHER", "Branch", "Edge", "Group", "Literal", "Node", "Repeat", "parse"]


class _Unreadable(ValueError):
    """The pattern is not one this reader follows (verbose mode, or not a valid pattern)."""


@dataclass(frozen=True, slots=True)
class Literal:
    char: str  # one printable ASCII character, as written (not lower-cased)


@dataclass(frozen=True, slots=True)
class Edge:
    kind: str  # "^", "$", "\\b", "\\A", "\\Z": a word (or the text) starts or ends beside it


@dataclass(frozen=True, slots=True)
class Group:
    items: tuple[Node, ...]  # a capturing, named, flagged or atomic group: one sequence


@dataclass(frozen=True, slots=True)
class Branch:
    options: tuple[tuple[Node, ...], ...]  # a | b | c: one of these sequences


@dataclass(frozen=True, slots=True)
class Repeat:
    least: int  # the fewest times the item occurs (0 for ``?``, ``*``, ``{0,n}``)
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class _Other:
    pass


OTHER = _Other()
Node = Literal | Edge | Group | Branch | Repeat | _Other
EDGES = frozenset({"^", "$", "\\b", "\\A", "\\Z"})

_QUANTIFIER = re.compile(r"\{(\d*)(,(\d*))?\}")
_SINGLE = {"*": 0, "+": 1, "?": 0}
_CLASS_ESCAPES = frozenset("dDwWsSB")
_CONTROL_ESCAPES = frozenset("afnrtv")


def parse(pattern: str) -> tuple[Node, ...] | None:
    """The pattern as one sequence of nodes (a top-level ``|`` is one ``Branch``); ``None``
    for a pattern this reader does not follow: verbose mode, an unbalanced group or class, a
    trailing backslash."""
    reader = _Reader(pattern)
    try:
        items = reader.alternation()
        if reader.at < len(pattern):
            raise _Unreadable(f"unbalanced ')' at {reader.at}")
    except _Unreadable:
        return None
    return items


class _Reader:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def alternation(self) -> tuple[Node, ...]:
        options = [self.sequence()]
        while self.peek() == "|":
            self.at += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else (Branch(tuple(options)),)

    def sequence(self) -> tuple[Node, ...]:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            if atom is None:
                continue
            least = self.quantifier()
            if least is None:
                items.append(atom)
            elif isinstance(atom, Edge):
                items.append(OTHER)  # a repeated assertion guarantees nothing
            else:
                items.append(Repeat(least, (atom,)))
        return tuple(items)

    def quantifier(self) -> int | None:
        char = self.peek()
        least: int | None = None
        if char in _SINGLE:
            least, self.at = _SINGLE[char], self.at + 1
        elif char == "{":
            found = _QUANTIFIER.match(self.text, self.at)
            if found is None or not (found.group(1) or found.group(3)):
                return None  # a literal "{"
            least, self.at = int(found.group(1) or 0), found.end()
        if least is not None and self.peek() in ("?", "+"):
            self.at += 1  # lazy or possessive: the same minimum
        return least

    def atom(self) -> Node | None:
        char = self.peek()
        self.at += 1
        if char == "(":
            return self.group()
        if char == "[":
            self.skip_class()
            return OTHER
        if char == "\\":
            return self.escape()
        if char in ("^", "$"):
            return Edge(char)
        if char == ".":
            return OTHER
        return Literal(char) if 32 <= ord(char) < 127 else OTHER

    def group(self) -> Node | None:
        text, at = self.text, self.at
        if not text.startswith("?", at):
            return self.close(Group(self.alternation()))
        head = text[at + 1:at + 2]
        if head == "#":  # a comment
            end = text.find(")", at)
            if end < 0:
                raise _Unreadable("unterminated comment")
            self.at = end + 1
            return None
        if head in (":", ">"):
            self.at = at + 2
            return self.close(Group(self.alternation()))
        if text.startswith("P<", at + 1):
            end = text.find(">", at)
            if end < 0:
                raise _Unreadable("unterminated group name")
            self.at = end + 1
            return self.close(Group(self.alternation()))
        if head in ("=", "!") or text.startswith(("<=", "<!"), at + 1) or head in ("(", "P"):
            self.at = at + 1  # a look-around, a conditional or (?P=name): read, not claimed
            self.alternation()
            return self.close(OTHER)
        flags = re.match(r"\?([aiLmsux]*)(?:-([imsx]*))?([:)])", text[at:])
        if flags is None:
            raise _Unreadable(f"unknown group at {at}")
        if "x" in flags.group(1):
            raise _Unreadable("verbose mode is not read")
        self.at = at + flags.end()
        if flags.group(3) == ")":
            return None  # (?i) and the like: flags for the whole pattern
        return self.close(Group(self.alternation()))

    def close(self, node: Node) -> Node:
        if self.peek() != ")":
            raise _Unreadable("unbalanced '('")
        self.at += 1
        return node

    def skip_class(self) -> None:
        text, at = self.text, self.at
        if text.startswith("^", at):
            at += 1
        if text.startswith("]", at):
            at += 1
        while at < len(text) and text[at] != "]":
            at += 2 if text[at] == "\\" else 1
        if at >= len(text):
            raise _Unreadable("unterminated character class")
        self.at = at + 1

    def escape(self) -> Node:
        char = self.peek()
        if not char:
            raise _Unreadable("trailing backslash")
        self.at += 1
        if char in ("b", "A", "Z"):
            return Edge("\\" + char)
        if char in _CLASS_ESCAPES or char in _CONTROL_ESCAPES:
            return OTHER
        if char.isdigit():  # a back-reference or an octal escape: skip its digits
            while self.peek().isdigit():
                self.at += 1
            return OTHER
        if char in ("x", "u", "U"):
            self.at += {"x": 2, "u": 4, "U": 8}[char]
            return OTHER
        if char == "N":
            end = self.text.find("}", self.at)
            if end < 0:
                raise _Unreadable("unterminated \\N{…}")
            self.at = end + 1
            return OTHER
        if char.isalnum():
            return OTHER  # an escape this reader does not know: claim nothing
        return Literal(char) if 32 <= ord(char) < 127 else OTHER
