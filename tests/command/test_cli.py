"""``agentloom ask`` and ``agentloom commands receipt`` in real subprocesses (issue 21): the
pinned ``--json`` shape, and a receipt shown to its owner only (003 F10)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from .project import effects, write_project


def agentloom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_i21_ask_json_is_the_pinned_shape_and_the_receipt_is_its_owners_only(
        tmp_path: Path) -> None:
    config = write_project(tmp_path)
    done = agentloom("ask", str(config), "move the meeting to friday", "--json",
                     "--actor", "alice", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert list(out) == ["decision", "intent", "slots", "missing", "invalid", "receipt"]
    assert list(out["receipt"]) == ["state", "operation_id", "result"]
    assert out["decision"] == "start" and out["receipt"]["state"] == "committed"
    op = out["receipt"]["operation_id"]
    assert effects(tmp_path) == [f"move friday {op}"]

    mine = agentloom("commands", "receipt", op, "--config", str(config), "--actor", "alice",
                     "--json", cwd=tmp_path)
    assert mine.returncode == 0, mine.stderr
    assert json.loads(mine.stdout)["result"] == {"moved_to": "friday"}
    theirs = agentloom("commands", "receipt", op, "--config", str(config), "--actor", "bob",
                       "--json", cwd=tmp_path)
    assert theirs.returncode == 1
    assert "COMMAND_RECEIPT_NOT_FOUND" in theirs.stderr and "friday" not in theirs.stdout


def test_f09_ask_with_an_invalid_slot_clarifies_and_runs_nothing(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    done = agentloom("ask", str(config), "move the meeting to sunday", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["decision"], out["receipt"], out["missing"]) == ("clarify", None, [])
    assert [p["slot"] for p in out["invalid"]] == ["day"]
    assert effects(tmp_path) == []


def test_i21_the_example_confirms_a_dangerous_command_once(tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "commands", folder)
    asked = agentloom("ask", "agentloom.yaml", "cancel order 7", "--json", cwd=folder)
    assert asked.returncode == 0, asked.stderr
    receipt = json.loads(asked.stdout)["receipt"]
    assert receipt["state"] == "accepted"
    token = receipt["result"]["token"]
    runs = [agentloom("commands", "confirm", "agentloom.yaml", token, "--json", cwd=folder)
            for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    first, second = (json.loads(r.stdout) for r in runs)
    assert first == second  # the repeat shows the one receipt: it ran once
    assert (first["state"], first["result"]) == ("committed", "order 7 cancelled")
    assert first["operation_id"] == receipt["operation_id"]


def test_f10_a_declined_dangerous_command_never_runs_and_a_later_confirmation_is_refused(
        tmp_path: Path) -> None:
    folder = tmp_path / "ex"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "commands", folder)
    receipt = json.loads(agentloom("ask", "agentloom.yaml", "cancel order 8", "--json",
                                   cwd=folder).stdout)["receipt"]
    assert receipt["state"] == "accepted"
    declined = agentloom("commands", "decline", receipt["operation_id"], "--config",
                         "agentloom.yaml", "--json", cwd=folder)
    assert declined.returncode == 0, declined.stderr
    assert json.loads(declined.stdout)["state"] == "rejected"
    late = agentloom("commands", "confirm", "agentloom.yaml", receipt["result"]["token"],
                     "--json", cwd=folder)
    assert late.returncode == 1
    assert json.loads(late.stdout)["state"] == "rejected"  # the declined one: it never ran
    shown = agentloom("commands", "receipt", receipt["operation_id"], "--config",
                      "agentloom.yaml", "--json", cwd=folder)
    assert json.loads(shown.stdout)["state"] == "rejected"


def test_f10_a_command_killed_mid_attempt_is_unknown_with_its_id_and_never_replayed(
        tmp_path: Path) -> None:
    config = write_project(tmp_path)
    killed = agentloom("ask", str(config), "crash now", "--json", "--actor", "alice", cwd=tmp_path)
    assert killed.returncode == -9  # SIGKILL: no receipt was written, no answer printed
    [line] = effects(tmp_path)
    op = line.split()[1]  # the id the handler ran under, from its own side effect
    shown = [agentloom("commands", "receipt", op, "--config", str(config), "--actor", "alice",
                       "--json", cwd=tmp_path) for _ in range(2)]
    for done in shown:
        assert done.returncode == 1, done.stderr
        out = json.loads(done.stdout)
        assert (out["state"], out["operation_id"], out["command"]) == ("unknown", op, "crash.now")
    assert effects(tmp_path) == [line]  # reconciled, never run again
    other = agentloom("commands", "receipt", op, "--config", str(config), "--actor", "bob",
                      cwd=tmp_path)
    assert other.returncode == 1 and "COMMAND_RECEIPT_NOT_FOUND" in other.stderr
