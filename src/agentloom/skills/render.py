"""A skill's ``SKILL.md`` body rendered with the arguments ``skill.read`` was given (000 §6.1:
text only, never a shell), as Claude Code substitutes them (code.claude.com/docs/en/skills;
shared/research/protocols.md §4.2)::

    $ARGUMENTS        every argument: the text as given, or a list joined by spaces
    $ARGUMENTS[N]     the Nth argument, 0-based ($ARGUMENTS[0] is the first)
    $N                the same ($0 is the first; $10 the eleventh)
    $name             the argument at the position of ``name`` in the front matter's
                      ``arguments`` (space-separated text or a list); none there: empty
    \\$…              a literal placeholder (the backslash dropped, nothing substituted)

A text is split into arguments shell-style (``"hello world"`` is one) — only split, nothing in
it is ever run or expanded. One pass over the body: a substituted value is never scanned
again (a value holding ``$1`` or ``$(rm -rf /)`` comes out as those characters). An index with
no argument is left as written. When the body has no ``$ARGUMENTS``, ``ARGUMENTS: <text>`` is
appended, so the arguments are still seen. ``!`cmd``` injections are never executed: left as
text, with a note saying so. Variables such as ``${CLAUDE_SKILL_DIR}`` are left as text.

Owns: the substitution. Does not own: reading the file (``skills.tools``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

__all__ = ["INJECTION_NOTE", "argument_names", "render_body", "split_arguments"]

INJECTION_NOTE = ("[AgentLoom: the !`command` lines above were not executed (dynamic shell "
                  "injection is not supported); run a command with the exec tool if it is "
                  "needed]")
_INJECTION = re.compile(r"(?:^|(?<=\s))!`[^`\n]+`|^\s*```!", re.MULTILINE)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def split_arguments(arguments: str | Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """``(the $ARGUMENTS text, the positional arguments)`` of ``arguments``: a text split
    shell-style (an unbalanced quote: split on whitespace), a list as given."""
    if isinstance(arguments, str):
        try:
            return arguments, tuple(shlex.split(arguments))
        except ValueError:
            return arguments, tuple(arguments.split())
    return " ".join(arguments), tuple(arguments)


def argument_names(declared: Any) -> tuple[str, ...]:
    """The named arguments of a front matter's ``arguments`` (text: space-separated; a list),
    in position order; entries that are not names are left out."""
    names = declared.split() if isinstance(declared, str) else declared
    if not isinstance(names, list | tuple):
        return ()
    return tuple(n for n in names if isinstance(n, str) and _NAME.match(n))


def render_body(body: str, arguments: str | Sequence[str], *, names: Sequence[str] = ()) -> str:
    """``body`` with its placeholders replaced by ``arguments`` (see the module doc), in one
    pass; ``names`` are the front matter's named arguments (``argument_names``)."""
    text, positional = split_arguments(arguments)
    named = sorted(set(names), key=len, reverse=True)
    alternatives = [r"\\?\$ARGUMENTS\[(?P<index>\d+)\]", r"\\?\$ARGUMENTS(?![A-Za-z0-9_\[])",
                    r"\\?\$(?P<number>\d+)"]
    if named:
        alternatives.append(r"\\?\$(?P<name>" + "|".join(map(re.escape, named))
                            + r")(?![A-Za-z0-9_-])")
    pattern = re.compile("|".join(alternatives))
    position = {n: i for i, n in enumerate(names)}

    def substitute(match: re.Match[str]) -> str:
        found = match.group(0)
        if found.startswith("\\"):
            return found[1:]
        index = match.group("index") or match.group("number")
        if index is not None:
            at = int(index)
            return positional[at] if at < len(positional) else found
        name = match.groupdict().get("name")
        if name is not None:
            at = position[name]
            return positional[at] if at < len(positional) else ""
        return text

    rendered = pattern.sub(substitute, body)
    if "$ARGUMENTS" not in body and text:
        rendered = f"{rendered.rstrip()}\n\nARGUMENTS: {text}\n"
    if _INJECTION.search(body):
        rendered = f"{rendered.rstrip()}\n\n{INJECTION_NOTE}\n"
    return rendered
