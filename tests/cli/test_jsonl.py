"""Spec 003 F04: a crash left a half JSONL last line, then appends continued after it.

``append_jsonl`` repairs the tail before it appends: a torn last line is cut (and reported with
its byte count), a complete last line without its newline is kept, a corrupt line anywhere
else stops the append. All on real files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloom.cli.jsonl import JsonlCorrupt, append_jsonl, read_jsonl

from .support import Cli

GOOD = b'{"type":"run.started","n":1}\n{"type":"tool.call.started","n":2}\n'


def test_f04_torn_tail_is_cut_then_appends_continue_and_the_whole_file_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    torn = b'{"type":"tool.call.completed","summary":"hal'
    path.write_bytes(GOOD + torn)

    report = append_jsonl(path, [{"type": "a", "n": 3}, {"type": "b", "n": 4}])

    assert report.repair == "torn_tail_removed"
    assert report.removed_bytes == len(torn)
    assert report.appended == 2
    assert report.warning() is not None and f"{len(torn)} byte(s)" in (report.warning() or "")
    assert [r["n"] for r in read_jsonl(path)] == [1, 2, 3, 4]
    assert path.read_bytes().endswith(b'{"type":"b","n":4}\n')


def test_f04_torn_tail_inside_a_multibyte_character_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    torn = '{"summary":"café'.encode()[:-1]  # the é cut in half
    path.write_bytes(GOOD + torn)

    report = append_jsonl(path, [{"n": 3}])

    assert report.repair == "torn_tail_removed" and report.removed_bytes == len(torn)
    assert [r["n"] for r in read_jsonl(path)] == [1, 2, 3]


def test_f04_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(GOOD + b'{"n":3}')

    report = append_jsonl(path, [{"n": 4}])

    assert report.repair == "newline_added" and report.removed_bytes == 0
    assert [r["n"] for r in read_jsonl(path)] == [1, 2, 3, 4]
    assert path.read_bytes() == GOOD + b'{"n":3}\n{"n":4}\n'


def test_f04_corrupt_middle_line_raises_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    # the F04 damage itself: a torn record that later appends were glued after
    damaged = b'{"n":1}\n{"n":2,"summary":"hal{"n":3}\n{"n":4}\n'
    path.write_bytes(damaged)

    with pytest.raises(JsonlCorrupt) as caught:
        append_jsonl(path, [{"n": 5}])

    assert caught.value.line == 2 and caught.value.offset == len(b'{"n":1}\n')
    assert "line 2" in str(caught.value)
    assert path.read_bytes() == damaged


def test_f04_clean_file_and_missing_file_are_appended_to_without_repair(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    first = append_jsonl(path, [{"n": 1}])
    second = append_jsonl(path, [{"n": 2}, {"n": "ü"}])

    assert (first.repair, second.repair) == ("none", "none")
    assert read_jsonl(path) == [{"n": 1}, {"n": 2}, {"n": "ü"}]


def test_f04_runs_events_append_to_repairs_a_torn_tail_and_says_so_on_stderr(
    tmp_path: Path, project: Path, cli: Cli
) -> None:
    run = cli.json("run", str(project / "agentloom.yaml"), "write a note", "--store", cli.store)
    path = tmp_path / "events.jsonl"
    torn = b'{"type":"run.sta'
    path.write_bytes(b'{"type":"earlier"}\n' + torn)

    result = cli("runs", "events", run["run_id"], "--store", cli.store, "--append-to", str(path),
                 "--json")

    assert result.exit_code == 0, result.stderr
    assert f"{len(torn)} byte(s)" in result.stderr
    printed = json.loads(result.stdout)
    records = read_jsonl(path)
    assert records == [{"type": "earlier"}, *printed]
    assert records[1]["type"] == "run.started" and records[-1]["type"] == "run.finished"


def test_f04_runs_events_append_to_a_corrupt_file_fails_and_names_the_line(
    tmp_path: Path, project: Path, cli: Cli
) -> None:
    run = cli.json("run", str(project / "agentloom.yaml"), "write a note", "--store", cli.store)
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"a":1}\nnot json\n{"b":2}\n')

    result = cli("runs", "events", run["run_id"], "--store", cli.store, "--append-to", str(path))

    assert result.exit_code == 1
    assert "line 2" in result.stderr
    assert path.read_bytes() == b'{"a":1}\nnot json\n{"b":2}\n'
