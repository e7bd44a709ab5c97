"""G2 races and concurrent writers: swapped symlinks, renamed ``..`` chains, lost updates."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.workspace.layout import CANARY, Layout, leaks, snapshot

from agentloom.workspace.service import FileVersion, WorkspaceError, WorkspaceHandle, WorkspaceService

ROUNDS = 1000


@contextmanager
def racing(step: Callable[[], None]) -> Iterator[list[int]]:
    """Run ``step`` in a tight loop on a thread (at least once) until the block ends."""
    stop = threading.Event()
    cycles = [0]

    def loop() -> None:
        while True:
            try:
                step()
            except OSError:
                pass
            cycles[0] += 1
            if stop.is_set():
                return

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield cycles
    finally:
        stop.set()
        thread.join(timeout=60)
        assert not thread.is_alive()


def naive_read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeError):
        return ""


async def test_g2_symlink_swapped_in_a_tight_loop_never_lets_read_write_list_escape(
    service: WorkspaceService, ram_layout: Layout
) -> None:
    layout = ram_layout
    root = layout.root
    handle = await service.open_view(root, scope_id="race")
    (root / "swap").mkdir()
    (root / "swap" / "file.txt").write_text("inside swap\n")
    outside_before = snapshot(layout.outside)
    targets = [str(layout.outside), "../outside"]

    def swap() -> None:
        os.rename(root / "swap", root / "swap_stash")
        os.symlink(targets[0], root / "swap")
        targets.reverse()
        os.unlink(root / "swap")
        os.rename(root / "swap_stash", root / "swap")

    escapes: list[str] = []
    outcomes: Counter[str] = Counter()
    naive_escapes = 0
    with racing(swap) as cycles:
        for i in range(ROUNDS):
            calls = (
                service.read(handle, "swap/file.txt"),
                # parents=False: a write that made a new swap/ would end the race (test_write_parents)
                service.write(handle, f"swap/new-{i}.txt", "x", parents=False),
                service.list(handle, "swap"),
            )
            for name, call in zip(("read", "write", "list"), calls, strict=True):
                try:
                    text = repr(await call)
                    outcomes[f"{name}:ok"] += 1
                except WorkspaceError as exc:
                    text = str(exc)
                    outcomes[f"{name}:{exc.code}"] += 1
                if leaks(text):
                    escapes.append(name)
            naive_escapes += CANARY in naive_read(root / "swap" / "file.txt")
    if not (root / "swap").is_dir() or (root / "swap").is_symlink():
        (root / "swap").unlink(missing_ok=True)
        os.rename(root / "swap_stash", root / "swap")
    assert cycles[0] > 0
    assert escapes == []
    assert snapshot(layout.outside) == outside_before
    assert not list(layout.outside.glob("new-*"))
    assert naive_escapes > 0, "the race never showed the outside link, so the run proves nothing"
    assert outcomes["read:ok"] > 0


async def test_g2_dotdot_chain_while_its_folder_is_renamed_outside_never_escapes(
    service: WorkspaceService, ram_layout: Layout
) -> None:
    layout = ram_layout
    root, out = layout.root, layout.outside
    deep = root.joinpath("a", *(f"n{i}" for i in range(20)))
    deep.mkdir(parents=True)
    climb = "a/" + "/".join(f"n{i}" for i in range(20)) + "/" + "../" * 21
    outside_before = snapshot(out)

    def bounce() -> None:
        os.rename(root / "a", out / "a")
        os.rename(out / "a", root / "a")

    handle = await service.open_view(root, scope_id="race")
    escapes: list[str] = []
    with racing(bounce) as cycles:
        for i in range(ROUNDS // 2):
            calls = (
                service.read(handle, climb + "canary.txt"),
                service.write(handle, climb + f"new-{i}.txt", "x"),
                service.list(handle, climb),
            )
            for call in calls:
                try:
                    text = repr(await call)
                except WorkspaceError as exc:
                    text = str(exc)
                if leaks(text):
                    escapes.append(text[:80])
    if (out / "a").exists():
        os.rename(out / "a", root / "a")
    assert cycles[0] > 0
    assert escapes == []
    after = snapshot(out)
    del after["."], outside_before["."]  # the racer's renames move the folder's own mtime
    assert after == outside_before
    assert not list(out.glob("new-*"))


async def test_concurrent_replace_with_one_etag_lets_exactly_one_writer_win(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    await service.write(handle, "shared.txt", "v0\n")
    for i in range(30):
        cur = await service.read(handle, "shared.txt")
        results = await asyncio.gather(
            service.write(handle, "shared.txt", f"A{i}\n", mode="replace", if_match=cur.etag),
            service.write(handle, "shared.txt", f"B{i}\n", mode="replace", if_match=cur.etag),
            service.edit(handle, "shared.txt", cur.content, f"C{i}\n", if_match=cur.etag),
            return_exceptions=True,
        )
        won = [r for r in results if isinstance(r, FileVersion)]
        lost = [r for r in results if isinstance(r, WorkspaceError)]
        assert len(won) == 1 and len(lost) == 2, results
        assert all(e.code == "ETAG_MISMATCH" for e in lost)
        assert (await service.read(handle, "shared.txt")).etag == won[0].etag


async def test_concurrent_edits_without_etag_lose_no_update(
    service: WorkspaceService, handle: WorkspaceHandle, layout: Layout
) -> None:
    tokens = [f"<token-{i}>" for i in range(40)]
    await service.write(handle, "many.txt", "\n".join(tokens) + "\n")
    results = await asyncio.gather(
        *(service.edit(handle, "many.txt", t, t.upper()) for t in tokens), return_exceptions=True
    )
    assert all(isinstance(r, FileVersion) for r in results), results
    assert (layout.root / "many.txt").read_text() == "\n".join(t.upper() for t in tokens) + "\n"
