"""docs/testing.md runs as written (issue #36, 6: "a docs page 'testing your agent'").

The page is read top to bottom and run in one fresh folder, with this checkout's virtualenv
first on ``PATH``. The HTML comment after (or before) a fenced block says what is done with it:

- ``<!-- file: PATH -->``: the block is the content of ``PATH`` (saved, as a reader would);
- a ``sh`` block without ``file``: its lines are run by ``bash -euo pipefail``;
- a ``python`` block without ``file``: run by ``python -`` in the folder;
- ``<!-- expect: TEXT -->``: the output of the block just run holds ``TEXT``;
- ``<!-- not run: WHY -->``: the block is only shown, for the reason given.

A ``yaml`` block must be saved (``file``) or marked ``not run``: every fenced block is one of
these, so a snippet nobody runs fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "testing.md"
DIRECTIVE = re.compile(r"^<!--\s*(file|expect|not run):\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\w*)\s*$")
TIMEOUT_S = 300


@dataclass
class Block:
    lang: str
    text: str
    line: int
    file: str | None = None
    not_run: str | None = None
    expect: list[str] = field(default_factory=list)


def blocks(page: str) -> list[Block]:
    """The fenced blocks with the directives that follow each (up to the next block)."""
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
            if kind == "file":
                block.file = value
            elif kind == "not run":
                block.not_run = value
            else:
                block.expect.append(value)
        i += 1
    return out


def test_i36_6_every_block_of_the_page_is_saved_run_or_marked() -> None:
    found = blocks(PAGE.read_text(encoding="utf-8"))
    assert len(found) >= 6
    for block in found:
        assert block.file or block.not_run or block.lang in ("sh", "python"), (
            f"docs/testing.md line {block.line}: a {block.lang} block must be saved with "
            "<!-- file: PATH --> or marked <!-- not run: WHY -->")


def test_i36_6_the_testing_page_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_TOKEN"))}
    env.pop("AGENTLOOM_STORE", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    ran = 0
    for block in blocks(PAGE.read_text(encoding="utf-8")):
        where = f"docs/testing.md line {block.line}"
        if block.not_run:
            continue
        if block.file:
            path = tmp_path / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text, encoding="utf-8")
            assert not block.expect, f"{where}: a saved file has no output to expect"
            continue
        command = ["bash", "-euo", "pipefail", "-c", block.text] if block.lang == "sh" else [
            sys.executable, "-"]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              input=None if block.lang == "sh" else block.text, timeout=TIMEOUT_S)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{where} exited {done.returncode}:\n{output}"
        for text in block.expect:
            assert text in output, f"{where}: expected {text!r} in:\n{output}"
        ran += 1
    assert ran >= 4
