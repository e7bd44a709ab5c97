"""G1 and G2 through ``exec`` under Landlock (issue #10): the path-escape corpus and the
symlink race, run by a command inside the sandbox, never read or write outside its work
folder; the same script run unconfined in the same test does escape, which proves the
detectors would see it.

The outside tree is opened up (world-readable and world-writable) for these tests, so the
only thing standing between the command and the canary is Landlock, not file modes. The
layout's planted hard links to outside files are removed first: a hard link in the work
folder *is* a file of the work folder under any sandbox (bubblewrap's bind mount shows it
too); what a command must not do is make one, which the corpus tries for every payload.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.sandbox.conftest import confined_gateway, run_command, scope_for, searchable
from tests.workspace.conftest import ram_layout  # noqa: F401  (the fixture)
from tests.workspace.corpus import payloads
from tests.workspace.layout import Layout, leaks, snapshot
from tests.workspace.test_races import racing

from agentloom.sandbox import EnvironmentPolicy, ExecCommand, LandlockGateway, sandbox_identity

CORPUS_SCRIPT = r"""
import json, os, sys
# Given the test's own folder, nothing outside it is ever changed, even where confinement
# fails (the control is unconfined): payloads like /etc/passwd are only read.
only_within = sys.argv[1] if len(sys.argv) > 1 else None
def may_change(p):
    if only_within is None:
        return True
    try:
        real = os.path.realpath(os.path.join(os.getcwd(), p))
    except (ValueError, OSError):
        return False
    return real == only_within or real.startswith(only_within + "/")
results = []
def attempt(kind, fn):
    try:
        results.append(kind + ":" + repr(fn())[:300])
    except BaseException as exc:
        results.append(kind + "!" + type(exc).__name__)
payloads = json.load(open("payloads.json"))
for p in payloads:
    attempt("read", lambda: open(p, errors="replace").read())
    attempt("list", lambda: sorted(os.listdir(p)))
for i, p in enumerate(payloads):
    attempt("link", lambda: os.link(p, f"made-link-{i}") if may_change(p) else None)
for p in payloads:
    if not may_change(p):
        results += ["skipped"] * 4
        continue
    attempt("append", lambda: open(p, "a").write("PWNED\n"))
    attempt("create", lambda: open(os.path.join(p, "pwned.txt"), "w").write("PWNED\n"))
    attempt("mkdir", lambda: os.mkdir(os.path.join(p, "pwned-dir")))
    attempt("remove", lambda: os.remove(p))
print("ATTEMPTS", len(results))
sys.stdout.write("\n".join(results))
"""

RACE_SCRIPT = r"""
import sys
seen = 0
for i in range(int(sys.argv[1])):
    try:
        seen += "CANARY_" in open("swap/file.txt").read()
    except OSError:
        pass
    try:
        open(f"swap/new-{i}.txt", "w").write("x")
    except OSError:
        pass
print("SEEN", seen)
"""
RACE_ROUNDS = 3000
CONTROL_TRIES = 3


@pytest.fixture
def landlock(tmp_path: Path) -> LandlockGateway:
    gateway = confined_gateway("landlock", EnvironmentPolicy(max_preview_bytes=1 << 22), tmp_path / "out")
    assert isinstance(gateway, LandlockGateway)
    return gateway


def open_up(layout: Layout) -> None:
    """World-readable and world-writable outside tree; a searchable path down to it."""
    searchable(layout.base)
    os.chmod(layout.base, 0o755)
    for folder, _, files in os.walk(layout.outside):
        os.chmod(folder, 0o777)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o666)


def without_hard_links(layout: Layout) -> None:
    for name in ("hard_canary", "hard_sentinel"):
        (layout.root / name).unlink()


def outside_inodes(layout: Layout) -> set[int]:
    return {os.lstat(os.path.join(d, n)).st_ino for d, _, names in os.walk(layout.outside) for n in names}


def outside_inodes_in_root(layout: Layout, outside: set[int]) -> list[str]:
    """Files under the work folder that are outside files (a hard link made to one); the
    outside inodes are taken before the run, since a run may also delete outside files."""
    return [os.path.join(d, n) for d, _, names in os.walk(layout.root) for n in names
            if os.lstat(os.path.join(d, n)).st_ino in outside]


def run_unconfined(layout: Layout, *argv: str) -> str:
    """The control: the same script on the host, as the unprivileged sandbox uid when the test
    runs as root (the outside tree is world-writable, so it still escapes), and never allowed
    to change anything outside the test's own folder (a payload such as ``/etc/passwd``)."""
    identity = sandbox_identity()
    done = subprocess.run(
        ["/usr/bin/python3", *argv], cwd=layout.root, capture_output=True, text=True,
        errors="replace", timeout=300, check=False,
        user=None if identity is None else identity[0], group=None if identity is None else identity[1],
        extra_groups=None if identity is None else [])
    return done.stdout


async def test_g1_escape_corpus_through_exec_under_landlock_never_leaves_the_work_folder(
    landlock: LandlockGateway, ram_layout: Layout  # noqa: F811
) -> None:
    layout = ram_layout
    without_hard_links(layout)
    open_up(layout)
    corpus = payloads(str(layout.base), len(layout.root.parts) - 1)
    (layout.root / "payloads.json").write_text(json.dumps(corpus))
    (layout.root / "probe.py").write_text(CORPUS_SCRIPT)
    outside_before = snapshot(layout.outside)
    inodes = outside_inodes(layout)

    handle = await landlock.ensure(scope_for(layout.root), None, 1)
    command = ExecCommand(argv=("/usr/bin/python3", "probe.py", str(layout.base)), timeout_s=600)
    result = await run_command(landlock, handle, command, deadline_s=600)
    out = (result.stdout.head + result.stdout.tail).decode(errors="replace")
    assert result.exit_code == 0, result.stderr.head.decode(errors="replace")
    assert not result.stdout.truncated
    assert f"ATTEMPTS {7 * len(corpus)}" in out  # every payload was tried
    assert not leaks(out), "a read or listing escaped the work folder"
    assert snapshot(layout.outside) == outside_before, "something outside the work folder changed"
    assert outside_inodes_in_root(layout, inodes) == [], "a hard link to an outside file was made"

    control = run_unconfined(layout, "probe.py", str(layout.base))
    assert f"ATTEMPTS {7 * len(corpus)}" in control
    assert leaks(control), "the unconfined control did not escape: the detectors prove nothing"
    assert snapshot(layout.outside) != outside_before
    assert outside_inodes_in_root(layout, inodes), "the control made no hard link to an outside file"


@pytest.fixture
def swapping(ram_layout: Layout) -> Iterator[list[int]]:  # noqa: F811
    """A host thread swapping ``swap`` between a folder and a link out, in a tight loop."""
    root = ram_layout.root
    (root / "swap").mkdir()
    (root / "swap" / "file.txt").write_text("inside swap\n")
    os.chmod(root / "swap", 0o777)

    def swap() -> None:
        os.rename(root / "swap", root / "swap_stash")
        os.symlink(ram_layout.outside, root / "swap")
        os.unlink(root / "swap")
        os.rename(root / "swap_stash", root / "swap")

    with racing(swap) as cycles:
        yield cycles


async def test_g2_symlink_race_through_exec_under_landlock_never_leaves_the_work_folder(
    landlock: LandlockGateway, ram_layout: Layout, swapping: list[int]  # noqa: F811
) -> None:
    layout = ram_layout
    open_up(layout)
    (layout.root / "race.py").write_text(RACE_SCRIPT)
    outside_before = snapshot(layout.outside)
    handle = await landlock.ensure(scope_for(layout.root), None, 1)
    result = await run_command(
        landlock, handle,
        ExecCommand(argv=("/usr/bin/python3", "race.py", str(RACE_ROUNDS)), timeout_s=300), deadline_s=300)
    out = (result.stdout.head + result.stdout.tail).decode(errors="replace")
    assert "SEEN 0" in out, out + result.stderr.head.decode(errors="replace")
    assert snapshot(layout.outside) == outside_before
    assert not list(layout.outside.glob("new-*"))

    # the control: unconfined, the same race does reach the outside link — on a busy machine a
    # run of RACE_ROUNDS may miss it, so up to CONTROL_TRIES runs (one hit proves the race real)
    controls = []
    for _ in range(CONTROL_TRIES):
        controls.append(run_unconfined(layout, "race.py", str(RACE_ROUNDS)))
        if "SEEN" in controls[-1] and "SEEN 0" not in controls[-1]:
            break
    assert swapping[0] > 0
    assert "SEEN 0" not in controls[-1] and "SEEN" in controls[-1], \
        f"the race never showed the outside link in {len(controls)} control runs: {controls}"

