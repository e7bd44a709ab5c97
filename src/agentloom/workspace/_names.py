"""The printed form of entry names: lossless for names that are not UTF-8.

Owns the one mapping between a real name (bytes; in Python a ``str`` with
``surrogateescape`` code points U+DC80–U+DCFF for undecodable bytes) and the text every file
tool prints and accepts, and how a printed path is quoted in a message (``shown``). Does not
own path syntax (``paths.parse_path``) or resolution.

The rule, per name:

* each byte that is not part of valid UTF-8 prints as ``\\xNN`` (two lowercase hex digits);
* a run of *k* real backslashes prints as *2k* backslashes when what follows it prints as
  ``x`` plus two lowercase hex digits (a literal ``xNN`` or an undecodable byte), else as *k*;
* everything else prints as itself.

Reading back: a run of *k* backslashes before ``x`` + two lowercase hex digits stands for
*k // 2* backslashes, and when *k* is odd the last one and the ``xNN`` stand for byte 0xNN;
other backslashes are themselves. Only the printed form is accepted: text whose escapes
spell bytes that are valid UTF-8 (``\\x41``, ``\\xc3\\xa9``, ``\\x2f``) is refused, so each name
has exactly one spelling. Lone surrogates are not text and are refused before this module.
"""

from __future__ import annotations

import os
import re

_BEFORE_HEX = re.compile("(\\\\+)(?=x[0-9a-f]{2}|[\udc80-\udcff])")
_UNDECODABLE = re.compile("[\udc80-\udcff]")
_ESCAPE = re.compile(rb"(\\+)x([0-9a-f]{2})")


def render_name(name: str) -> str:
    """The printed form of a real name (see the module docstring); always valid Unicode."""
    if name.isascii() and "\\" not in name:
        return name
    text = os.fsencode(name).decode("utf-8", "surrogateescape")
    if "\\" in text:
        text = _BEFORE_HEX.sub(lambda m: m.group(1) * 2, text)
    return _UNDECODABLE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def _unescape(m: re.Match[bytes]) -> bytes:
    run = len(m.group(1))
    kept = b"\\" * (run // 2)
    if run % 2:
        return kept + bytes([int(m.group(2), 16)])
    return kept + b"x" + m.group(2)


def real_name(printed: str) -> str | None:
    """The real name a printed name stands for, or ``None`` if it is not a printed form.

    ``printed`` must be valid Unicode (no surrogates) and contain no ``/``.
    """
    if "\\" not in printed:
        return printed
    name = os.fsdecode(_ESCAPE.sub(_unescape, printed.encode("utf-8")))
    return name if render_name(name) == printed else None


def shown(text: str) -> str:
    """A path as it may appear in a message: quoted, bounded, unprintables as ``\\uNNNN``.

    Backslashes stay single (unlike ``repr``), so a printed name (``render_name``) reads the
    same in a message as in a result and can be passed back as it is.
    """
    cut = text if len(text) <= 160 else text[:150] + "…" + text[-8:]
    return "'" + "".join(c if c.isprintable() else _unprintable(c) for c in cut) + "'"


def _unprintable(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
