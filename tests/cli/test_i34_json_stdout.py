"""Issue #34 (LOW): a hook that prints to stdout corrupted ``agentloom run --json``. With
``--json`` stdout carries only the JSON document: whatever else the process writes there — a
Python hook's or tool's ``print`` (on any thread), a write to file descriptor 1, a child
process that inherits it — goes to stderr. The real CLI in a process of its own."""

from __future__ import annotations

import json
from pathlib import Path

from .support import agentloom, write_project

NOISY = '''
import os
import subprocess
import sys

import agentloom


def sync_hook(event):
    print("noise: sync hook print")
    os.write(1, b"noise: sync hook fd 1\\n")
    subprocess.run([sys.executable, "-c", "print('noise: child of a hook')"], check=True)
    return {"decision": "allow"}


async def async_hook(event):
    print("noise: async hook print")
    return {"decision": "allow"}


@agentloom.tool
async def shout(ctx: agentloom.ToolContext, text: str) -> str:
    """Shout the text."""
    print("noise: async tool print")
    return text.upper()


@agentloom.tool
def whisper(text: str) -> str:
    """Whisper the text."""
    sys.stdout.write("noise: sync tool write\\n")
    return text.lower()
'''

NOISES = ("sync hook print", "sync hook fd 1", "child of a hook", "async hook print",
          "async tool print", "sync tool write")

TURNS = """\
  - tool_calls:
      - name: shout
        arguments: {text: hi}
      - name: whisper
        arguments: {text: HO}
  - expect: {role: tool}
    text: done
"""


def test_i34_json_stdout_holds_only_the_json_document_when_hooks_and_tools_print(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "p"
    config = write_project(
        folder, TURNS, tools=('"noisy:shout"', '"noisy:whisper"'),
        extra="    hooks:\n"
              "      - {hook_id: sync, timing: before, handler: {ref: \"noisy:sync_hook\"}}\n"
              "      - {hook_id: async, timing: after, handler: {ref: \"noisy:async_hook\"}}\n")
    (folder / "noisy.py").write_text(NOISY, encoding="utf-8")

    done = agentloom("run", str(config), "make noise", "--store",
                     f"sqlite:///{tmp_path / 'store.db'}", "--json", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)  # the whole of stdout is one JSON document
    assert out["status"] == "succeeded" and out["warnings"] == []
    assert "noise" not in done.stdout
    for noise in NOISES:  # the hooks run for both calls, each tool once
        assert done.stderr.count(f"noise: {noise}") == (2 if "hook" in noise else 1), noise


def test_i34_json_stdout_an_error_document_is_alone_on_stdout_too(tmp_path: Path) -> None:
    """A failure reported as JSON after user code printed still leaves one document."""
    folder = tmp_path / "p"
    config = write_project(
        folder, TURNS, tools=('"noisy:shout"', '"noisy:whisper"', '"noisy:missing"'))
    (folder / "noisy.py").write_text(NOISY + '\nprint("noise: at import")\n', encoding="utf-8")

    done = agentloom("run", str(config), "make noise", "--store",
                     f"sqlite:///{tmp_path / 'store.db'}", "--json", cwd=tmp_path)

    assert done.returncode != 0
    assert "error" in json.loads(done.stdout)
    assert "noise: at import" in done.stderr and "noise" not in done.stdout
