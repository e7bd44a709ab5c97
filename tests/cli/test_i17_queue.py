"""Issue 17 from the command line: ``agentloom submit`` queues a run and returns at once,
``agentloom worker`` claims and drives queued runs (priority, then age), ``workers list``
shows the workers and what they hold, a SIGTERM gives a run back to the queue after its current
step, and ``runs show`` diagnoses a run that has not ended (pending, running, interrupted).
Real processes on a real SQLite file."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloom.store.holders import parse_holder

from .support import SUBPROCESS_TIMEOUT_S, Cli, spawn, write_project

TWO_TURNS = """\
  - text: done
"""
SLOW_TURNS = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [sleep, "3"], timeout_s: 60}
  - text: the command came back
"""
WAIT_S = 60.0


def _until(what: str, check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {WAIT_S}s")


def _show(cli: Cli, run_id: str) -> dict[str, Any]:
    return dict(cli.json("runs", "show", run_id, "--store", cli.store))


def test_i17_submit_returns_at_once_and_a_worker_claims_by_priority_then_age(
        tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", TWO_TURNS, tools=["fs.read"])
    first = cli.json("submit", str(config), "first task", "--store", cli.store)
    assert first["status"] == "pending" and first["priority"] == 0 and first["agent"] == "main"
    second = cli.json("submit", str(config), "urgent task", "--priority", "5",
                      "--store", cli.store)

    shown = _show(cli, first["run_id"])
    assert shown["status"] == "pending" and shown["operations"] == []
    diagnosis = shown["diagnosis"]
    assert diagnosis["state"] == "pending" and diagnosis["holder"] is None
    assert diagnosis["waiting_for"] == {"kind": "queue", "priority": 0, "position": 2,
                                        "ahead": 1}
    assert "agentloom worker" in diagnosis["next_step"]
    assert _show(cli, second["run_id"])["diagnosis"]["waiting_for"]["position"] == 1

    out = cli.json("worker", str(config), "--once", "--store", cli.store)

    assert out["claimed"] == 2
    assert {r["run_id"]: r["status"] for r in out["resumed"]} == {
        first["run_id"]: "succeeded", second["run_id"]: "succeeded"}
    # the higher priority was claimed first although it was submitted later
    assert [r["run_id"] for r in out["resumed"]] == [second["run_id"], first["run_id"]]
    ended = _show(cli, first["run_id"])
    assert ended["status"] == "succeeded" and ended["diagnosis"] is None


def test_i17_submit_of_an_unknown_agent_is_a_clear_error_and_queues_nothing(
        tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", TWO_TURNS, tools=["fs.read"])
    result = cli("submit", str(config), "task", "--agent", "nobody", "--store", cli.store)
    assert result.exit_code == 2
    assert "nobody" in result.stderr and "main" in result.stderr
    cli.json("submit", str(config), "task", "--store", cli.store)  # the store exists now
    assert [r["status"] for r in cli.json("runs", "list", "--store", cli.store)] == ["pending"]


def test_i17_sigterm_gives_the_run_back_after_its_step_and_workers_list_shows_the_holder(
        tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", SLOW_TURNS, tools=["exec"])
    run_id = cli.json("submit", str(config), "sleep a little", "--store", cli.store)["run_id"]
    proc = spawn("worker", str(config), "--store", cli.store, "--poll", "0.5", "--json",
                 cwd=tmp_path)
    try:
        def exec_started() -> dict[str, Any] | None:
            assert proc.poll() is None, proc.communicate()
            shown = _show(cli, run_id)
            ops = [o for o in shown["operations"] if o["capability"] == "exec"]
            return shown if ops and ops[0]["attempts"]["items"] else None

        shown = _until("the exec call's start", exec_started)
        diagnosis = shown["diagnosis"]
        assert shown["status"] == "running" and diagnosis["state"] == "running"
        holder = diagnosis["holder"]
        assert parse_holder(holder["worker_id"]).pid == proc.pid and holder["lease_epoch"] == 1
        assert holder["lease_left_s"] > 0
        workers = cli.json("workers", "list", "--store", cli.store)
        (me,) = [w for w in workers if w["pid"] == proc.pid]
        assert me["alive"] and me["state"] == "live" and me["held"] == [run_id]

        proc.send_signal(signal.SIGTERM)  # mid-step: the exec finishes and commits first
        stdout, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert [r["status"] for r in json.loads(stdout)["resumed"]] == ["pending"], (stdout, stderr)
    shown = _show(cli, run_id)
    assert shown["status"] == "pending"  # back in the queue, not interrupted, not cancelled
    (exec_op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
    assert exec_op["phase"] == "delivered" and exec_op["outcome"] == "succeeded"
    assert shown["diagnosis"]["last_step"]["capability"] == "exec"
    stopped = cli.json("workers", "list", "--all", "--store", cli.store)
    assert [w["state"] for w in stopped if w["pid"] == proc.pid] == ["stopped"]
    assert cli.json("workers", "list", "--store", cli.store) == []

    out = cli.json("worker", str(config), "--once", "--store", cli.store)
    assert [r["status"] for r in out["resumed"]] == ["succeeded"]
    ops = [o for o in _show(cli, run_id)["operations"] if o["capability"] == "exec"]
    assert len(ops) == 1 and ops[0]["attempts"]["count"] == 1  # the command ran once


def test_i17_runs_show_diagnoses_an_interrupted_run_with_its_unknown_call(
        tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", SLOW_TURNS.replace('"3"', '"60"'), tools=["exec"])
    run_id = cli.json("submit", str(config), "sleep long", "--store", cli.store)["run_id"]
    proc = spawn("worker", str(config), "--store", cli.store, "--poll", "0.5", cwd=tmp_path)
    try:
        def exec_started() -> bool:
            assert proc.poll() is None, proc.communicate()
            ops = [o for o in _show(cli, run_id)["operations"] if o["capability"] == "exec"]
            return bool(ops and ops[0]["attempts"]["items"])

        _until("the exec call's start", exec_started)
        proc.kill()
        proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    shown = _show(cli, run_id)
    assert shown["status"] == "interrupted"
    diagnosis = shown["diagnosis"]
    assert diagnosis["state"] == "interrupted"
    assert diagnosis["waiting_for"]["detail"] == "its holder is gone"
    (unknown,) = diagnosis["unknown_calls"]
    assert unknown["capability"] == "exec" and unknown["phase"] == "attempt_started"
    assert unknown["arguments"]["argv"] == ["sleep", "60"]
    assert f"agentloom runs resume {run_id}" in diagnosis["next_step"]
    human = cli("runs", "show", run_id, "--store", cli.store)
    assert "effect not known: exec" in human.stdout and "next: " in human.stdout
