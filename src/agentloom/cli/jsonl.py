"""Appending JSON Lines safely after a crash (spec 003 F04).

A writer killed mid-append leaves a *torn* last line: some bytes of a record and no newline.
Appending after it glues the next record onto the fragment and corrupts both. So
``append_jsonl`` repairs the file before it appends, under an exclusive ``flock``:

- a last line that is a complete JSON value but lacks its newline gets the newline (kept);
- a last line that does not parse (the torn tail) is cut off, and the number of bytes removed
  is returned so the caller can say so;
- a line that does not parse anywhere else is corruption this function did not cause and
  cannot repair: ``JsonlCorrupt`` is raised and nothing is written (never silently dropped).

Blank lines are allowed (they hold no record). Each append is one ``write`` followed by
``fsync``.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentloom.errors import AgentLoomError, ErrorCategory

__all__ = ["AppendReport", "JsonlCorrupt", "append_jsonl", "read_jsonl"]

Repair = Literal["none", "newline_added", "torn_tail_removed"]


class JsonlCorrupt(AgentLoomError, ValueError):
    """A line other than the last one is not JSON: the file was damaged by something else.

    Still a ``ValueError`` for callers that catch one."""

    default_code = "JSONL_CORRUPT"
    default_category: ErrorCategory = "validation"

    def __init__(self, path: Path, line: int, offset: int, problem: str) -> None:
        super().__init__(f"{path}: line {line} (byte offset {offset}) is not valid JSON "
                         f"({problem}); only a torn last line is repaired automatically — fix or "
                         "remove that line by hand")
        self.path = path
        self.line = line
        self.offset = offset


@dataclass(frozen=True, slots=True)
class AppendReport:
    """What ``append_jsonl`` did: the repair made before appending, and how much it wrote."""

    path: Path
    repair: Repair
    removed_bytes: int
    appended: int

    def warning(self) -> str | None:
        """A sentence for stderr when a torn tail was cut off, else None."""
        if self.repair != "torn_tail_removed":
            return None
        return (f"{self.path}: removed a torn last line of {self.removed_bytes} byte(s) "
                "(an earlier writer stopped mid-record) before appending")


def _problem(raw: bytes) -> str | None:
    """Why ``raw`` is not one JSON value, or None when it is (or is blank)."""
    if not raw.strip():
        return None
    try:
        json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return f"not UTF-8: {exc.reason}"
    except ValueError as exc:
        return str(exc)
    return None


def _check(path: Path, content: bytes) -> tuple[int, bool]:
    """Validate every complete line; return (length of the valid prefix, tail is complete JSON).

    The prefix ends after the last newline; the tail is what follows it.
    """
    end = content.rfind(b"\n") + 1
    offset, line = 0, 1
    while offset < end:
        stop = content.index(b"\n", offset)
        problem = _problem(content[offset:stop])
        if problem is not None:
            raise JsonlCorrupt(path, line, offset, problem)
        offset, line = stop + 1, line + 1
    tail = content[end:]
    return end, bool(tail.strip()) and _problem(tail) is None


def append_jsonl(path: str | Path, records: Iterable[Any]) -> AppendReport:
    """Repair ``path``'s last line if needed, then append one JSON line per record.

    The file is created when missing. Records are serialised with ``json.dumps`` (UTF-8,
    non-ASCII kept, compact separators).

    Raises:
        JsonlCorrupt: a line before the last one is not JSON (nothing is written).
        TypeError: a record is not JSON-serialisable (nothing is written).
    """
    file = Path(path)
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
             for r in records]
    data = b"".join(lines)
    fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        content = os.pread(fd, size, 0) if size else b""
        valid, tail_complete = _check(file, content)
        repair: Repair = "none"
        removed = 0
        if valid < len(content):
            if tail_complete:
                repair = "newline_added"
                data = b"\n" + data
            elif content[valid:].strip():
                repair, removed = "torn_tail_removed", len(content) - valid
                os.ftruncate(fd, valid)
            else:  # trailing blanks without a newline: no record lost, keep them, end the line
                data = b"\n" + data
        if data:
            os.lseek(fd, 0, os.SEEK_END)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock
    return AppendReport(file, repair, removed, len(lines))


def read_jsonl(path: str | Path) -> list[Any]:
    """Every record of a JSON Lines file (blank lines skipped); a last line without its newline
    is read when it is complete JSON.

    Raises:
        JsonlCorrupt: any line, the last one included, is not JSON.
    """
    file = Path(path)
    content = file.read_bytes()
    records: list[Any] = []
    offset = 0
    for line, raw in enumerate(content.split(b"\n"), start=1):
        problem = _problem(raw)
        if problem is not None:
            raise JsonlCorrupt(file, line, offset, problem)
        if raw.strip():
            records.append(json.loads(raw.decode("utf-8")))
        offset += len(raw) + 1
    return records
