"""``grep``: bounded, sorted, regex time-limited search over the workspace's text files.

Files are found with the walk of ``_search.py`` (no symlinks, no other file systems,
hidden entries only when named) and read through ``Beneath``; binary, non-UTF-8,
hardlinked and over-large files are skipped. Python's ``re`` cannot be interrupted and a
wall-clock check between lines cannot bound one pathological line, so regular expressions
run in a separate ``python -I -S`` worker process: the parent waits for each file's answer
with ``select`` until the call's deadline and SIGKILLs the worker when it passes. The
result then has ``timed_out=True`` and the matches found so far. Idle workers are pooled.
Literal searches run in process with a clock check every 4096 lines.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentloom.workspace._atomic import read_all
from agentloom.workspace._search import (
    MAX_DEPTH,
    MAX_PATTERN_CHARS,
    Budget,
    check_int,
    open_subdir,
    scan_dir,
)
from agentloom.workspace.paths import Beneath, RelPath, WorkspaceError, parse_path, refuse_reserved

MAX_GREP_LIMIT = 1000
MAX_GREP_TIMEOUT_S = 30.0
MAX_GREP_FILE_BYTES = 4 * 1024 * 1024
SNIPPET_CHARS = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class GrepMatch:
    """One matching line of ``fs.grep``: the relative path, line number and a window of text."""

    path: str
    line: int
    """1-based line number."""
    text: str
    """The line without its ending, cut to a window of ``SNIPPET_CHARS`` around the match."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GrepResult:
    """What ``fs.grep`` found, and whether it stopped early at the match limit
    (``truncated``) or at its deadline (``timed_out``)."""

    matches: tuple[GrepMatch, ...]
    truncated: bool
    timed_out: bool


# --- matchers ---------------------------------------------------------------------------

_WORKER_SOURCE = r"""
import json, re, sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
rx = None
for raw in inp:
    req = json.loads(raw)
    if "pattern" in req:
        try:
            rx = re.compile(req["pattern"])
            reply = {"ok": True}
        except re.error as exc:
            reply = {"error": str(exc)}
    else:
        found = []
        for n, line in enumerate(req["text"].split("\n"), 1):
            m = rx.search(line[:-1] if line.endswith("\r") else line)
            if m is not None:
                found.append([n, m.start()])
                if len(found) >= req["limit"]:
                    break
        reply = {"found": found}
    out.write(json.dumps(reply).encode() + b"\n")
    out.flush()
"""

Found = list[tuple[int, int]]
"""``(line number, match start)`` pairs; ``None`` from ``scan`` means the deadline passed."""


class Matcher(Protocol):
    """A search of one file's text for a pattern, bounded by a match limit and a deadline
    (a literal search in process, or a regular expression in a worker that can be killed)."""

    def scan(self, text: str, limit: int, deadline: float) -> Found | None: ...

    def close(self) -> None: ...


class LiteralMatcher:
    """A plain substring search, in process, checking the clock every 4096 lines."""

    def __init__(self, needle: str) -> None:
        self.needle = needle

    def scan(self, text: str, limit: int, deadline: float) -> Found | None:
        found: Found = []
        for n, line in enumerate(text.split("\n"), 1):
            if n % 4096 == 0 and time.monotonic() > deadline:
                return None
            at = line.find(self.needle)
            if at >= 0:
                found.append((n, at))
                if len(found) >= limit:
                    break
        return found

    def close(self) -> None:
        return None


class _Worker:
    """One ``python -I -S`` child speaking JSON lines; killed as soon as it overruns."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WORKER_SOURCE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            close_fds=True,
        )
        self.buf = b""

    def request(self, payload: dict[str, Any], deadline: float) -> dict[str, Any] | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(payload).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            return None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()
_MAX_IDLE = 2


@atexit.register
def _shutdown_workers() -> None:
    with _idle_lock:
        while _idle:
            _idle.pop().kill()


class RegexMatcher:
    """Runs ``re.search`` per line in a pooled worker process; a timeout kills the worker."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.worker: _Worker | None = None
        self.healthy = True

    def scan(self, text: str, limit: int, deadline: float) -> Found | None:
        if self.worker is None:
            with _idle_lock:
                self.worker = _idle.pop() if _idle else None
            if self.worker is None:
                self.worker = _Worker()
            reply = self.worker.request({"pattern": self.pattern}, deadline)
            if reply is None or "error" in reply:
                self.healthy = False
                return None
        reply = self.worker.request({"text": text, "limit": limit}, deadline)
        if reply is None:
            self.healthy = False
            return None
        return [(int(n), int(s)) for n, s in reply["found"]]

    def close(self) -> None:
        worker, self.worker = self.worker, None
        if worker is None:
            return
        if self.healthy:
            with _idle_lock:
                if len(_idle) < _MAX_IDLE:
                    _idle.append(worker)
                    return
        worker.kill()


# --- grep -------------------------------------------------------------------------------


def _walk_files(b: Beneath, fd: int, rel: RelPath, out: list[RelPath], budget: Budget, depth: int) -> None:
    for entry in scan_dir(b, fd):
        if not budget.spend():
            return
        if entry.name.startswith("."):
            continue  # hidden files and folders are searched only when named explicitly
        if entry.is_dir(follow_symlinks=False):
            if depth < MAX_DEPTH:
                sub = open_subdir(b, fd, entry.name)
                if sub is not None:
                    try:
                        _walk_files(b, sub, rel.child(entry.name), out, budget, depth + 1)
                    finally:
                        os.close(sub)
        elif entry.is_file(follow_symlinks=False):
            out.append(rel.child(entry.name))


def _collect(b: Beneath, targets: list[RelPath], budget: Budget) -> list[RelPath]:
    files: list[RelPath] = []
    for rel in targets:
        fd = b.open(rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        try:
            st = os.fstat(fd)
            b.check_device(st, rel)
            b.check_not_lock_dir(st, rel)
            if stat.S_ISDIR(st.st_mode):
                _walk_files(b, fd, rel, files, budget, 0)
            elif stat.S_ISREG(st.st_mode):
                files.append(rel)
        finally:
            os.close(fd)
    unique = {f.display: f for f in files}
    return [unique[k] for k in sorted(unique)]


def _read_text(b: Beneath, rel: RelPath) -> str | None:
    """The file's text, or ``None`` when grep skips it (binary, too big, hardlinked, gone)."""
    try:
        fd = b.open(rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except WorkspaceError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_dev != b.dev:
            return None
        data = read_all(fd, rel, max_bytes=MAX_GREP_FILE_BYTES)
    except (OSError, WorkspaceError):
        return None
    finally:
        os.close(fd)
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _snippet(line: str, start: int) -> str:
    line = line.removesuffix("\r")
    if len(line) <= SNIPPET_CHARS:
        return line
    begin = max(0, min(start - 60, len(line) - SNIPPET_CHARS))
    return line[begin : begin + SNIPPET_CHARS]


def grep_files(
    b: Beneath,
    pattern: object,
    *,
    paths: Sequence[str] | None,
    literal: bool,
    limit: object,
    timeout_s: object,
) -> GrepResult:
    size = check_int(limit, "limit", 1, MAX_GREP_LIMIT)
    if (
        not isinstance(timeout_s, int | float)
        or isinstance(timeout_s, bool)
        or not 0 < timeout_s <= MAX_GREP_TIMEOUT_S
    ):
        raise WorkspaceError(
            "INVALID_ARGUMENTS", f"timeout_s must be a number above 0 and at most {MAX_GREP_TIMEOUT_S}"
        )
    if not isinstance(pattern, str) or not pattern or "\x00" in pattern or len(pattern) > MAX_PATTERN_CHARS:
        raise WorkspaceError(
            "INVALID_PATTERN", f"pattern must be 1 to {MAX_PATTERN_CHARS} characters without NUL bytes"
        )
    if not literal:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise WorkspaceError(
                "INVALID_PATTERN", f"pattern is not a valid regular expression: {exc}"
            ) from None
    raw_paths: list[object] = ["."] if paths is None else [paths] if isinstance(paths, str) else list(paths)
    if not raw_paths:
        raise WorkspaceError(
            "INVALID_ARGUMENTS", "paths must name at least one file or folder, or be omitted"
        )
    targets = [parse_path(p) for p in raw_paths]
    for rel in targets:
        refuse_reserved(rel)
    deadline = time.monotonic() + float(timeout_s)
    budget = Budget(deadline)
    files = _collect(b, targets, budget)
    matches: list[GrepMatch] = []
    timed_out = budget.timed_out
    truncated = budget.exhausted
    matcher: Matcher = LiteralMatcher(pattern) if literal else RegexMatcher(pattern)
    try:
        for rel in files:
            if timed_out or time.monotonic() > deadline:
                timed_out = True
                break
            text = _read_text(b, rel)
            if text is None:
                continue
            found = matcher.scan(text, size + 1 - len(matches), deadline)
            if found is None:
                timed_out = True
                break
            lines = text.split("\n") if found else []
            matches.extend(
                GrepMatch(path=rel.display, line=n, text=_snippet(lines[n - 1], s)) for n, s in found
            )
            if len(matches) > size:
                truncated = True
                break
    finally:
        matcher.close()
    return GrepResult(matches=tuple(matches[:size]), truncated=truncated, timed_out=timed_out)
