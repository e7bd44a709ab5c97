"""G1: every payload of the corpus × every file tool, confined and unconfined.

Confined (the service, with openat2 and with the forced walk): 0 outside reads (no result or
message shows the canary secret or the unreferenced outside name), 0 outside writes (the
sentinel tree's snapshot never changes), every refusal a ``WorkspaceError``, and no message or
result names the host root. The unconfined control (``os.path.join(root, p)`` + plain calls)
runs the same corpus and must escape many times, which proves the detectors work.
"""

from __future__ import annotations

import glob as globmod
import os
import shutil
import stat
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from tests.workspace.corpus import payloads
from tests.workspace.layout import CANARY, Layout, build_outside, build_root, leaks, quick_state, snapshot

from agentloom.workspace._atomic import etag_of
from agentloom.workspace.service import WorkspaceError, WorkspaceHandle, WorkspaceService

CANARY_ETAG = etag_of((CANARY + "\n").encode())
INNER_ETAG = etag_of(b"inside text\n")
PATCH = f"@@ -1 +1 @@\n-{CANARY}\n+PWNED\n"

Call = Callable[[WorkspaceService, WorkspaceHandle, str], Awaitable[object]]
CALLS: dict[str, tuple[Call, ...]] = {
    "read": (lambda s, h, p: s.read(h, p),),
    "write": (
        lambda s, h, p: s.write(h, p, "PWNED\n"),
        lambda s, h, p: s.write(h, p, "PWNED\n", mode="replace", if_match=CANARY_ETAG),
    ),
    "edit": (lambda s, h, p: s.edit(h, p, CANARY, "PWNED"),),
    "apply_patch": (lambda s, h, p: s.apply_patch(h, p, PATCH),),
    "list": (lambda s, h, p: s.list(h, p),),
    "glob": (lambda s, h, p: s.glob(h, p), lambda s, h, p: s.glob(h, "**", root=p)),
    "grep": (
        lambda s, h, p: s.grep(h, ".", paths=[p]),
        lambda s, h, p: s.grep(h, CANARY[:12], paths=[p], literal=True),
    ),
    "mkdir": (lambda s, h, p: s.mkdir(h, p), lambda s, h, p: s.mkdir(h, p + "/made", parents=True)),
    "move": (  # with the right etags, so that only confinement can stop them
        lambda s, h, p: s.move(h, p, "moved_here", if_match=CANARY_ETAG),
        lambda s, h, p: s.move(h, "inner/file.txt", p, if_match=INNER_ETAG),
    ),
    "delete": (
        lambda s, h, p: s.delete(h, p, if_match=CANARY_ETAG),
        lambda s, h, p: s.delete(h, p, recursive=True),
    ),
}
MUTATING = {"write", "edit", "apply_patch", "mkdir", "move", "delete"}


def corpus_for(layout: Layout) -> list[str]:
    return payloads(str(layout.base), len(layout.root.parts) - 1)


class Tally:
    """Escapes seen by the detectors, and everything else a run must not do."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.escapes: list[tuple[str, str, str]] = []
        self.untyped: list[tuple[str, str]] = []
        self.root_named: list[str] = []
        self.first_outside = snapshot(layout.outside)
        self.outside = self.first_outside
        self.state = quick_state(layout)

    def saw(self, tool: str, payload: str, text: str) -> None:
        if leaks(text):
            self.escapes.append((tool, "read", payload))
        if str(self.layout.root) in text and str(self.layout.root) not in payload:
            self.root_named.append(payload)

    def check_and_reset(self, tool: str, payload: str) -> None:
        """Count an outside write, then put both trees back the way the next payload expects.

        The cheap fingerprint (mtimes, sizes, link counts) gates the full content snapshot;
        ``finish`` compares content hashes once more at the end of the run.
        """
        if quick_state(self.layout) == self.state:
            return
        if snapshot(self.layout.outside) != self.outside:
            self.escapes.append((tool, "write", payload))
            build_outside(self.layout.outside)
        build_root(self.layout)  # relinks the hardlinks, so the outside snapshot comes after
        self.outside = snapshot(self.layout.outside)
        self.state = quick_state(self.layout)

    def finish(self, tool: str) -> None:
        self.check_and_reset(tool, "<end of run>")
        if snapshot(self.layout.outside) != self.outside:
            self.escapes.append((tool, "write", "<end of run>"))


@pytest.mark.parametrize("tool", sorted(CALLS))
async def test_g1_escape_corpus_confined_tool_never_reads_or_writes_outside(
    tool: str, service: WorkspaceService, ram_layout: Layout
) -> None:
    layout = ram_layout
    handle = await service.open_view(layout.root, scope_id="corpus")
    corpus = corpus_for(layout)
    assert len(corpus) >= 1000
    tally = Tally(layout)
    outcomes: Counter[str] = Counter()
    for payload in corpus:
        for call in CALLS[tool]:
            try:
                text = repr(await call(service, handle, payload))
                outcomes["ok"] += 1
            except WorkspaceError as exc:
                text = f"{exc} {exc.error.details!r}"
                outcomes[exc.code] += 1
            except Exception as exc:  # anything but a typed refusal is a bug
                tally.untyped.append((payload, repr(exc)))
                continue
            tally.saw(tool, payload, text)
            if tool in MUTATING:
                tally.check_and_reset(tool, payload)
    tally.finish(tool)
    assert tally.escapes == []
    assert tally.untyped == []
    assert tally.root_named == []
    assert outcomes["PATH_ESCAPE"] + outcomes["SYMLINK_REFUSED"] > 100


# --- the unconfined control -------------------------------------------------------------


def _within(layout: Layout, *paths: str) -> bool:
    """Only let the control change things inside the test's own folder (never the host)."""
    try:
        return all(Path(os.path.realpath(p)).is_relative_to(layout.base) for p in paths)
    except (ValueError, OSError):
        return False


def _read_regular(path: str) -> str:
    """Read like a naive tool would, but only regular files (no fifo, tty or /proc/kcore)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
        return ""
    with open(path, errors="replace") as f:
        return f.read()


def _naive(tool: str, variant: int, layout: Layout, payload: str) -> str:
    root = str(layout.root)
    t = os.path.join(root, payload)
    if tool == "read":
        return _read_regular(t)
    if tool in ("list", "glob", "grep"):
        if tool == "list":
            return repr(os.listdir(t))
        if tool == "glob":
            if variant == 0:
                return repr(globmod.glob(t))
            return repr(globmod.glob(os.path.join(t, "*")))  # one level: "**" would follow proc_root
        if os.path.isfile(t):
            return _read_regular(t)
        found: list[str] = []
        if os.path.isdir(t) and _within(layout, t):
            for dirpath, _, files in os.walk(t):
                found.extend(_read_regular(os.path.join(dirpath, name)) for name in files)
        return repr(found)
    if not _within(layout, t):
        return ""
    if tool == "write":
        with open(t, "w") as f:
            f.write("PWNED\n")
    elif tool in ("edit", "apply_patch"):
        text = _read_regular(t)
        if CANARY in text:
            with open(t, "w") as f:
                f.write(text.replace(CANARY, "PWNED"))
    elif tool == "mkdir":
        if variant:
            os.makedirs(os.path.join(t, "made"))
        else:
            os.mkdir(t)
    elif tool == "move":
        src, dst = (
            (t, os.path.join(root, "moved_here"))
            if variant == 0
            else (os.path.join(root, "inner/file.txt"), t)
        )
        os.rename(src, dst)
    elif tool == "delete":
        if os.path.isdir(t) and not os.path.islink(t):
            if variant:
                shutil.rmtree(t)
            else:
                os.rmdir(t)
        else:
            os.remove(t)
    return ""


def test_g1_escape_corpus_unconfined_control_escapes_so_the_detectors_work(ram_layout: Layout) -> None:
    layout = ram_layout
    corpus = corpus_for(layout)
    tally = Tally(layout)
    per_tool: Counter[str] = Counter()
    for tool, calls in sorted(CALLS.items()):
        for payload in corpus:
            for variant in range(len(calls)):
                before = len(tally.escapes)
                try:
                    tally.saw(tool, payload, _naive(tool, variant, layout, payload))
                except (OSError, ValueError, UnicodeError, RecursionError):
                    pass
                tally.check_and_reset(tool, payload)
                per_tool[tool] += len(tally.escapes) > before
    escaping = {payload for _, _, payload in tally.escapes}
    print(
        f"\nunconfined control: {len(corpus)} payloads, {sum(per_tool.values())} escaping calls "
        f"from {len(escaping)} payloads; per tool {dict(per_tool)}"
    )
    assert sum(per_tool.values()) >= 500 and len(escaping) >= 100
    assert all(per_tool[tool] > 0 for tool in CALLS)
