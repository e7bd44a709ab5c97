"""Parse a one-file unified diff and apply it exactly to a text.

Rules: at most one ``---``/``+++`` header pair, naming the target (``a/``/``b/`` prefixes
and a tab-separated timestamp are accepted); no ``/dev/null`` sides, renames, copies or
binary patches; hunk line counts must match the ``@@`` header; every context and removed
line must equal the file's line exactly (line endings included). A hunk may be found up to
``MAX_OFFSET`` lines away from its stated position (nearest first) — no fuzz on content.
Hunks apply in order and may not overlap. An empty line inside a hunk counts as an empty
context line (many editors strip the single space).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentloom.workspace.paths import SANDBOX_ROOT, WorkspaceError, shown

MAX_OFFSET = 10
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_UNSUPPORTED = ("rename from", "rename to", "copy from", "copy to", "new file mode", "deleted file mode",
                "Binary files", "GIT binary patch")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk of a unified diff: its header, the line it starts at, and the old and new
    lines it replaces."""

    header: str
    old_start: int
    old: tuple[str, ...]
    new: tuple[str, ...]


def _invalid(message: str) -> WorkspaceError:
    return WorkspaceError("PATCH_INVALID", message + "; send a unified diff for this one file")


def _header_name(line: str) -> str:
    name = line[4:].split("\t", 1)[0].strip()
    if name == "/dev/null":
        raise _invalid("the diff creates or deletes a file (/dev/null); use write or delete instead")
    if name.startswith(SANDBOX_ROOT + "/"):
        name = name[len(SANDBOX_ROOT) + 1 :]
    return name


def _names_target(name: str, target: str) -> bool:
    def norm(n: str) -> str:
        return "/".join(c for c in n.split("/") if c not in ("", "."))

    candidates = {norm(name)}
    if name.startswith(("a/", "b/")):
        candidates.add(norm(name[2:]))
    return norm(target) in candidates


def parse_unified_diff(diff: str, target: str) -> list[Hunk]:
    """Parse ``diff`` for the file ``target`` (its display path); raises ``PATCH_INVALID``."""
    if not isinstance(diff, str) or not diff.strip():
        raise _invalid("the diff is empty")
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hunks: list[Hunk] = []
    headers = 0
    named = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff "):
            headers += 1
            if headers > 1 or hunks:
                raise _invalid("the diff touches several files; one call patches one file")
            i += 1
        elif line.startswith(_UNSUPPORTED):
            raise _invalid(
                f"the diff has {line.split(' ')[0]!r} (rename/copy/mode/binary), which is unsupported"
            )
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if hunks or named:
                raise _invalid("the diff touches several files; one call patches one file")
            named = True
            for side in (lines[i], lines[i + 1]):
                name = _header_name(side)
                if not _names_target(name, target):
                    raise _invalid(f"the diff names {shown(name)} but this call patches {shown(target)}")
            i += 2
        elif line.startswith("@@"):
            hunk, i = _parse_hunk(lines, i, len(hunks) + 1)
            hunks.append(hunk)
        elif not hunks and not line.startswith(("+++", "---")):
            i += 1  # preamble (index lines, commit text) before the first header or hunk
        elif line.strip() == "":
            i += 1
        else:
            raise _invalid(f"line {i + 1} ({line[:40]!r}) is not part of a hunk")
    if not hunks:
        raise _invalid("the diff contains no hunks (@@ ... @@)")
    return hunks


def _parse_hunk(lines: list[str], i: int, number: int) -> tuple[Hunk, int]:
    header = lines[i]
    m = _HUNK.match(header)
    if m is None:
        raise _invalid(f"hunk {number} has a malformed header {header[:60]!r}")
    old_start = int(m.group(1))
    old_len = int(m.group(2)) if m.group(2) is not None else 1
    new_len = int(m.group(4)) if m.group(4) is not None else 1
    old: list[str] = []
    new: list[str] = []
    last: list[list[str]] = []
    i += 1
    while i < len(lines) and (len(old) < old_len or len(new) < new_len):
        line = lines[i]
        tag, text = (line[:1], line[1:]) if line else (" ", "")
        if tag == "\\":
            _strip_newline(last)
        elif tag == " ":
            old.append(text + "\n")
            new.append(text + "\n")
            last = [old, new]
        elif tag == "-":
            old.append(text + "\n")
            last = [old]
        elif tag == "+":
            new.append(text + "\n")
            last = [new]
        else:
            break
        i += 1
    if i < len(lines) and lines[i].startswith("\\"):
        _strip_newline(last)
        i += 1
    if len(old) != old_len or len(new) != new_len:
        raise _invalid(
            f"hunk {number} ({header[:40]!r}) has {len(old)} old and {len(new)} new lines, "
            f"but its header says {old_len} and {new_len}"
        )
    return Hunk(header=header, old_start=old_start, old=tuple(old), new=tuple(new)), i


def _strip_newline(targets: list[list[str]]) -> None:
    for block in targets:
        if block and block[-1].endswith("\n"):
            block[-1] = block[-1][:-1]


def apply_hunks(text: str, hunks: list[Hunk], target: str) -> str:
    """Apply parsed hunks to ``text``; raises ``PATCH_CONFLICT`` naming the first hunk that fails."""
    original = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0
    for number, hunk in enumerate(hunks, start=1):
        size = len(hunk.old)
        expected = hunk.old_start if size == 0 else hunk.old_start - 1
        found = None
        for delta in sorted(range(-MAX_OFFSET, MAX_OFFSET + 1), key=abs):
            at = expected + delta
            if at < cursor or at + size > len(original):
                continue
            if tuple(original[at : at + size]) == hunk.old:
                found = at
                break
        if found is None:
            raise WorkspaceError(
                "PATCH_CONFLICT",
                f"hunk {number} ({hunk.header[:40]!r}) does not match the current content of {shown(target)} "
                f"near line {hunk.old_start}; read the file again and rebuild the diff",
                details={"hunk": number},
            )
        out.extend(original[cursor:found])
        out.extend(hunk.new)
        cursor = found + size
    out.extend(original[cursor:])
    return "".join(out)
