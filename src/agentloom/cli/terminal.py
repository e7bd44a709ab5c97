"""Text from runs, stores and errors made safe to show on a terminal.

Owns: ``printable``, the one escape every human-readable line of the CLI goes through (tables,
the live view, hints, warnings, errors, log records), and ``plain``, which makes such text a
rich ``Text`` so that markup in data (``[bold]``, ``[/]``) is printed, never interpreted. Does
not own: ``--json`` output, which keeps the exact text (``output.print_json``).

A run's answer, its task, tool output, or a run id or agent name read from a store can hold
terminal control sequences — clear the screen, set the window title, move the cursor back to
overwrite a line with a fake "run succeeded". ``printable`` writes each control character as
a visible escape instead: C0 controls other than newline and tab, DEL and lone surrogates as
``\\x1b``-style escapes (``\\ud800`` for a surrogate, which no terminal encoding can carry), and
the C1 controls U+0080–U+009F as ``\\u009b``. An ESC sequence loses its ESC, so what follows it
is plain text. A backslash is left as it is: the view is for reading, ``--json`` is exact.
"""

from __future__ import annotations

import re

from rich.text import Text

__all__ = ["plain", "printable"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point <= 0x7F else f"\\u{point:04x}"


def printable(text: object) -> str:
    """``str(text)`` with every terminal control character written as a visible escape
    (newlines and tabs are kept)."""
    return _CONTROL.sub(_escape, str(text))


def plain(text: object, style: str = "") -> Text:
    """``text`` as a rich ``Text``: control characters escaped, markup never interpreted."""
    return Text(printable(text), style=style)
