"""docs/getting-started.md runs as written (issue #36, 13; acceptance 4).

The page is read top to bottom, in one fresh ``0700`` folder, with this checkout's virtualenv
first on ``PATH`` (the page's own install line is the one block not run: it would install
from PyPI). What the page's HTML comments before a fenced block say decides what is done:

- ``<!-- file: PATH -->``: the block is the content of ``PATH`` (written, as a reader would save it);
- a ``sh`` block: its lines are run by ``bash -euo pipefail`` (each block with the variables the
  earlier blocks exported);
- ``<!-- background: TEXT -->`` before a ``sh`` block: started and left running (a second
  terminal), until ``TEXT`` appears on its output; stopped when the page ends;
- ``<!-- expect: TEXT -->`` after a block: its output holds ``TEXT``;
- ``<!-- not run: WHY -->``: the block is not run, for the reason given.

Every fenced block must be one of these: a snippet nobody runs fails the test. The one change
made to the text: the port ``8700`` (``agentloom serve``'s default) becomes a free port.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentloom.sandbox.reach import can_make_mount_namespace

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting-started.md"
DIRECTIVE = re.compile(r"<!--\s*(file|background|expect|not run):\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")
PORT = "8700"


@dataclass
class Block:
    lang: str
    text: str
    line: int
    file: str | None = None
    background: str | None = None
    not_run: str | None = None
    expect: list[str] = field(default_factory=list)


def blocks(page: str) -> list[Block]:
    out: list[Block] = []
    pending: dict[str, str] = {}
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            start = i
            i += 1
            body: list[str] = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append(Block(fence.group(1), "\n".join(body) + "\n", start + 1,
                             file=pending.get("file"), background=pending.get("background"),
                             not_run=pending.get("not run")))
            pending = {}
        else:
            for kind, value in DIRECTIVE.findall(lines[i]):
                if kind == "expect" and out and not pending:
                    out[-1].expect.append(value)
                else:
                    pending[kind] = value
        i += 1
    return out


def test_i36_13_every_snippet_of_the_page_is_run_or_says_why_not() -> None:
    found = blocks(PAGE.read_text(encoding="utf-8"))
    assert len(found) > 10
    for b in found:
        where = f"docs/getting-started.md:{b.line}"
        assert not (b.file and b.not_run), f"{where}: a block is a `file:` or `not run:`, not both"
        assert b.file or b.not_run or b.lang == "sh", (
            f"{where}: a ```{b.lang} block must be a `file:`, a ```sh block or `not run:`")


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.mark.skipif(os.geteuid() == 0 and not can_make_mount_namespace(), reason=(
    "without a mount namespace the sandbox's uid 65534 cannot reach a 0700 folder: the page "
    "runs where root may make one (tests/shapes/test_i33_integrations.py tests the refusal)"))
def test_i36_13_getting_started_runs_from_top_to_bottom() -> None:
    page = PAGE.read_text(encoding="utf-8").replace(PORT, _free_port())
    base = Path(tempfile.mkdtemp(prefix="first-day-"))  # 0700, as mktemp -d makes it
    venv_bin = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOOM_")}
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(base)
    background: list[subprocess.Popen[str]] = []
    exported = base / ".exports"
    exported.write_text("")
    try:
        for b in blocks(page):
            where = f"docs/getting-started.md:{b.line}"
            if b.not_run:
                continue
            if b.file:
                path = base / b.file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(b.text, encoding="utf-8")
                continue
            script = f"set -euo pipefail\nsource {shlex.quote(str(exported))}\n{b.text}"
            if b.background:
                background.append(_start(script, base, env, b.background, where))
                continue
            script += f"export -p > {shlex.quote(str(exported))}\n"
            done = subprocess.run(["bash", "-c", script], cwd=base, env=env, capture_output=True,
                                  text=True, timeout=300, check=False)
            output = done.stdout + done.stderr
            assert done.returncode == 0, f"{where}: exit {done.returncode}\n{b.text}\n{output}"
            for text in b.expect:
                assert text in output, f"{where}: {text!r} not in the output of\n{b.text}\n{output}"
    finally:
        for proc in background:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in background:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        subprocess.run(["rm", "-rf", str(base)], check=False)


def _start(script: str, cwd: Path, env: dict[str, str], ready: str, where: str) -> subprocess.Popen[str]:
    log = cwd / f".background-{len(list(cwd.glob('.background-*')))}.log"
    handle = log.open("w")
    proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdout=handle,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ready in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"{where}: {ready!r} never appeared\n{log.read_text(errors='replace')}")
