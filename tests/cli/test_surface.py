"""Issue #12: the command's own surface — ``--version``, help screens that show flags as flags
and name only options that exist — and a run whose model writes a nested path first (point 6).
In process (typer's CliRunner), offline."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agentloom.cli.main import app

from .support import Cli, agentloom, write_project


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


COMMANDS = [path for path, _ in _commands(typer.main.get_command(app))]


def _help(*path: str) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"}, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_12_8_version_prints_agentloom_and_the_package_version(cli: Cli, tmp_path: Path) -> None:
    result = cli("--version")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"agentloom {version('agentloom')}\n"
    assert re.fullmatch(r"agentloom \d+\.\d+\.\d+\S*\n", result.stdout)
    process = agentloom("--version", cwd=tmp_path)  # the real entry point too
    assert (process.returncode, process.stdout) == (0, result.stdout)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "agentloom")
def test_12_8_help_shows_no_value_type_after_a_flag(path: tuple[str, ...]) -> None:
    text = _help(*path)

    assert "<bool>" not in text
    for line in text.splitlines():
        if re.search(r"--(json|help|force|debug|once|version)\b", line):
            assert not re.search(r"--[a-z-]+\s+(-\w\s+)?<", line), line


def test_12_8_options_that_take_a_value_still_show_it_and_flags_do_not() -> None:
    text = _help("runs", "list")
    assert re.search(r"--store\s+URL", text) and re.search(r"--limit\s+-n\s+<int", text)
    assert re.search(r"--json\s+Print one JSON value", text), text


def test_12_8_every_help_names_only_options_its_command_has() -> None:
    named_elsewhere = {}
    for path, command in _commands(typer.main.get_command(app)):
        own = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
        mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", _help(*path)))
        if mentioned - own:
            named_elsewhere[" ".join(path) or "agentloom"] = sorted(mentioned - own)

    assert named_elsewhere == {}


def test_12_8_run_help_does_not_mention_a_config_option() -> None:
    text = _help("run")
    assert "--config" not in text
    assert "sqlite:///.agentloom/agentloom.db in the folder of CONFIG" in " ".join(text.split())


NESTED_TURNS = """\
  - tool_calls:
      - name: fs_write
        arguments: {path: notes/hello.txt, content: "hello, nested\\n"}
  - expect: {role: tool, not_contains: NOT_FOUND}
    tool_calls:
      - name: fs_read
        arguments: {path: notes/hello.txt}
  - expect: {role: tool, contains: "hello, nested"}
    text: wrote notes/hello.txt
"""


def test_12_6_a_run_whose_model_writes_notes_hello_txt_first_succeeds(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", NESTED_TURNS)

    out = cli.json("run", str(config), "keep a note", "--store", cli.store)

    assert out["status"] == "succeeded" and out["output"] == "wrote notes/hello.txt"
    ops = cli.json("runs", "show", out["run_id"], "--store", cli.store)["operations"]
    write = next(o for o in ops if o["capability"] == "fs.write")
    assert write["status"] == "succeeded" and write["executed_arguments"]["path"] == "notes/hello.txt"
    assert '"path": "notes/hello.txt"' in write["effective_result"]
