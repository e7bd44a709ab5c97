"""grep: no shell, bounded, sorted by (path, line), regex time-limited in a killable worker."""

from __future__ import annotations

from typing import Any

import pytest
from tests.workspace.layout import CANARY, Layout

from agentloom.workspace.service import GrepMatch, WorkspaceError, WorkspaceHandle, WorkspaceService


async def test_grep_is_sorted_by_path_and_line_and_truncated_at_the_limit(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    await service.mkdir(handle, "src")
    for i in reversed(range(12)):
        await service.write(handle, f"src/m{i:02d}.py", "".join(f"hit {j}\nmiss\n" for j in range(10)))
    res = await service.grep(handle, r"hit \d", paths=["src"], limit=25)
    assert res.truncated and not res.timed_out and len(res.matches) == 25
    keys = [(m.path, m.line) for m in res.matches]
    assert keys == sorted(keys)
    assert res.matches[0] == GrepMatch(path="src/m00.py", line=1, text="hit 0")
    assert res.matches[10] == GrepMatch(path="src/m01.py", line=1, text="hit 0")
    everything = await service.grep(handle, "hit", paths=["src"], literal=True, limit=1000)
    assert len(everything.matches) == 120 and not everything.truncated


async def test_grep_catastrophic_regex_finishes_with_timed_out(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    await service.write(handle, "evil.txt", "a" * 64 + "!\n")
    res = await service.grep(handle, r"(a+)+$", paths=["evil.txt"], timeout_s=0.5)
    assert res.timed_out is True
    assert res.matches == ()
    after = await service.grep(handle, r"a+!", paths=["evil.txt"])  # a fresh worker answers
    assert after.matches[0].line == 1 and not after.timed_out


async def test_grep_skips_binary_files_and_hidden_entries_unless_named(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    (layout.root / "bin.dat").write_bytes(b"needle\x00needle")
    (layout.root / "bad.txt").write_bytes(b"needle \xff\xfe")
    (layout.root / ".hidden.txt").write_text("needle\n")
    await service.write(handle, "ok.txt", "x\nneedle here\n")
    res = await service.grep(handle, "needle", literal=True)
    assert [(m.path, m.line, m.text) for m in res.matches] == [("ok.txt", 2, "needle here")]
    named = await service.grep(handle, "needle", paths=[".hidden.txt", "bin.dat"], literal=True)
    assert [m.path for m in named.matches] == [".hidden.txt"]


async def test_grep_never_follows_links_out_of_the_root(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    res = await service.grep(handle, ".", limit=1000)
    assert all(CANARY not in m.text for m in res.matches)
    assert {m.path for m in res.matches} == {"canary.txt", "decoy.txt", "inner/file.txt"}
    for outward in ("out_abs", "out_rel/canary.txt", "../outside"):
        with pytest.raises(WorkspaceError):
            await service.grep(handle, ".", paths=[outward])


async def test_grep_rejects_bad_patterns_and_bounds(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    for kwargs in ({"pattern": "("}, {"pattern": ""}, {"pattern": "a\x00"}):
        with pytest.raises(WorkspaceError) as info:
            await service.grep(handle, **kwargs)  # type: ignore[arg-type]
        assert info.value.code == "INVALID_PATTERN"
    bounds: list[dict[str, Any]] = [
        {"limit": 0},
        {"limit": 10**6},
        {"timeout_s": 0},
        {"timeout_s": 3600},
        {"paths": []},
    ]
    for bad in bounds:
        with pytest.raises(WorkspaceError) as info:
            await service.grep(handle, "x", **bad)
        assert info.value.code == "INVALID_ARGUMENTS"


async def test_grep_snippets_are_bounded_around_the_match(
    service: WorkspaceService, handle: WorkspaceHandle
) -> None:
    await service.write(handle, "long.txt", "x" * 5000 + "NEEDLE" + "y" * 5000 + "\r\n")
    (m,) = (await service.grep(handle, "NEEDLE", paths=["long.txt"])).matches
    assert "NEEDLE" in m.text and len(m.text) == 300
