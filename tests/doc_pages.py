"""Run a docs page as written (issue #36, 6 and 13): the one reader of the pages whose every
snippet CI runs (docs/getting-started.md, docs/testing.md).

A page is read top to bottom and run in one folder, with this checkout's virtualenv first on
``PATH``. The HTML comments that follow a fenced block say what is done with it:

- ``<!-- file: PATH -->``: the block is the content of ``PATH`` (saved, as a reader would);
- ``<!-- not run: WHY -->``: the block is only shown, for the reason given;
- ``<!-- background: TEXT -->`` after a ``sh`` block: started and left running (a second
  terminal) until ``TEXT`` appears on its output; stopped when the page ends;
- ``<!-- expect: TEXT -->``: the output of the block holds ``TEXT``.

Any other ``sh`` block is run by ``bash -euo pipefail`` (with the variables the earlier blocks
exported), a ``python`` block by ``python -``. A block of another language must be saved or
marked: a snippet nobody runs is an error (``unrun_blocks``).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DIRECTIVE = re.compile(r"^<!--\s*(file|background|expect|not run):\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\w*)\s*$")
RUNNABLE = ("sh", "python")
TIMEOUT_S = 300


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
    """The fenced blocks, each with the directives that follow it (up to the next block)."""
    out: list[Block] = []
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence and fence.group(1):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append(Block(fence.group(1), "\n".join(lines[i + 1:end]) + "\n", i + 1))
            i = end + 1
            continue
        directive = DIRECTIVE.match(lines[i].strip())
        if directive and out:
            kind, value = directive.groups()
            block = out[-1]
            if kind == "expect":
                block.expect.append(value)
            else:
                setattr(block, kind.replace(" ", "_"), value)
        i += 1
    return out


def unrun_blocks(name: str, found: list[Block]) -> list[str]:
    """What is wrong with the page's blocks: each one neither saved, run nor marked."""
    problems = []
    for b in found:
        if b.file and b.not_run:
            problems.append(f"{name}:{b.line}: a block is a `file:` or `not run:`, not both")
        elif not (b.file or b.not_run or b.lang in RUNNABLE):
            problems.append(f"{name}:{b.line}: a ```{b.lang} block must be saved with "
                            "<!-- file: PATH -->, be ```sh / ```python, or be marked <!-- not run: WHY -->")
    return problems


def run_page(name: str, page: str, folder: Path, env: Mapping[str, str]) -> int:
    """Run ``page`` in ``folder``; fail (``AssertionError``) at the first block that exits
    non-zero or lacks an expected text. Returns how many blocks ran."""
    env = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}
    exported = folder / ".exports"
    exported.write_text("")
    background: list[subprocess.Popen[str]] = []
    ran = 0
    try:
        for b in blocks(page):
            where = f"{name}:{b.line}"
            if b.not_run:
                continue
            if b.file:
                assert not b.expect, f"{where}: a saved file has no output to expect"
                path = folder / b.file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(b.text, encoding="utf-8")
                continue
            if b.lang == "python":
                command, stdin = [sys.executable, "-"], b.text
            else:
                script = f"set -euo pipefail\nsource {shlex.quote(str(exported))}\n{b.text}"
                if b.background:
                    background.append(_start(script, folder, env, b.background, where))
                    continue
                command = ["bash", "-c", script + f"export -p > {shlex.quote(str(exported))}\n"]
                stdin = None
            done = subprocess.run(command, cwd=folder, env=env, input=stdin, capture_output=True,
                                  text=True, timeout=TIMEOUT_S, check=False)
            output = done.stdout + done.stderr
            assert done.returncode == 0, f"{where}: exit {done.returncode}\n{b.text}\n{output}"
            for text in b.expect:
                assert text in output, f"{where}: {text!r} not in the output of\n{b.text}\n{output}"
            ran += 1
    finally:
        _stop(background)
    return ran


def _start(script: str, cwd: Path, env: Mapping[str, str], ready: str,
           where: str) -> subprocess.Popen[str]:
    log = cwd / f".background-{len(list(cwd.glob('.background-*')))}.log"
    with log.open("w") as handle:
        proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=dict(env), stdout=handle,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ready in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    _stop([proc])
    raise AssertionError(f"{where}: {ready!r} never appeared\n{log.read_text(errors='replace')}")


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
