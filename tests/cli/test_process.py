"""The CLI in real processes (``python -m agentloom``): init then run offline, ``runs stop``
of a run another process drives, ``runs resume`` after that process was killed."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import Put, WriteSet, open_store

from .support import SUBPROCESS_TIMEOUT_S, Cli, agentloom, spawn, write_project

SLEEP_TURNS = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [sleep, "30"], timeout_s: 120}
  - text: the command came back
"""
WAIT_S = 60.0


def _wait_for_exec_started(cli: Cli, proc: subprocess.Popen[str],
                           others: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Poll ``runs show`` until the run's exec operation has started its Attempt (the newest
    run not in ``others``)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        result = cli("runs", "list", "--store", cli.store, "--json")
        runs = json.loads(result.stdout) if result.exit_code == 0 else []
        runs = [r for r in runs if r["run_id"] not in others]
        if runs:
            shown = cli.json("runs", "show", runs[0]["run_id"], "--store", cli.store)
            ops = [o for o in shown["operations"] if o["capability"] == "exec"]
            if ops and ops[0]["attempts"]["items"]:
                return dict(shown)
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the exec call did not start within {WAIT_S}s: {proc.communicate()}")


def test_cli_python_m_agentloom_init_then_run_succeeds_offline(tmp_path: Path) -> None:
    init = agentloom("init", "proj", "--json", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["config"] == "proj/agentloom.yaml"

    run = agentloom("run", "proj/agentloom.yaml", "write a note", "--json", cwd=tmp_path)

    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["status"] == "succeeded" and out["run_id"] and out["output"]
    assert (tmp_path / "proj" / ".agentloom" / "agentloom.db").is_file()
    listed = agentloom("runs", "list", "--config", "proj/agentloom.yaml", "--json", cwd=tmp_path)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [out["run_id"]]


def test_cli_runs_stop_cancels_a_run_driven_by_another_process(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", SLEEP_TURNS, tools=["exec"])
    proc = spawn("run", str(config), "sleep a while", "--store", cli.store, "--json", cwd=tmp_path)
    try:
        shown = _wait_for_exec_started(cli, proc)
        run_id = shown["run_id"]
        assert shown["status"] == "running"
        (op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
        assert op["status"] == "running" and op["call_id"] == "call_1_1"

        supplement = cli.json("runs", "supplement", run_id, "also say hello", "--store", cli.store)
        assert supplement == {"run_id": run_id, "supplemented": True}
        stop = cli.json("runs", "stop", run_id, "--store", cli.store)  # no --config needed
        assert stop["requested"] is True

        stdout, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, stderr
    out = json.loads(stdout)
    assert out["run_id"] == run_id and out["status"] == "cancelled"
    assert out["error"]["code"] == "RUN_STOPPED"
    final = cli.json("runs", "show", run_id, "--store", cli.store)
    assert final["status"] == "cancelled"
    (op,) = [o for o in final["operations"] if o["capability"] == "exec"]
    assert op["status"] in ("cancelled", "unknown")


def run_killed_during_exec(cli: Cli, config: Path, cwd: Path,
                           others: frozenset[str] = frozenset(), *,
                           task: str = "sleep a while") -> str:
    """Start `agentloom run` of ``config`` (whose model calls a long exec) on ``task`` and
    SIGKILL it once the exec has started; the run's id."""
    proc = spawn("run", str(config), task, "--store", cli.store, "--json", cwd=cwd)
    try:
        return str(_wait_for_exec_started(cli, proc, others)["run_id"])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)


def _killed_during_exec(tmp_path: Path, cli: Cli,
                        others: frozenset[str] = frozenset()) -> tuple[Path, str]:
    """Start `agentloom run` on a long exec and SIGKILL it once the exec has started."""
    config = write_project(tmp_path / "p", SLEEP_TURNS, tools=["exec"])
    return config, run_killed_during_exec(cli, config, tmp_path, others)


@pytest.mark.kill
def test_cli_runs_resume_after_a_kill_finishes_without_running_exec_again(
    tmp_path: Path, cli: Cli
) -> None:
    config, run_id = _killed_during_exec(tmp_path, cli)

    resumed = agentloom("runs", "resume", run_id, "--config", str(config), "--store", cli.store,
                        "--json", cwd=tmp_path)

    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["run_id"] == run_id and out["status"] == "succeeded"
    assert out["output"] == "the command came back"
    (op,) = [o for o in cli.json("runs", "show", run_id, "--store", cli.store)["operations"]
             if o["capability"] == "exec"]
    assert op["status"] == "unknown"  # it may have run; it was not run a second time
    assert op["attempts"]["count"] == 1


@pytest.mark.kill
def test_12_3_runs_stop_of_an_interrupted_run_needs_no_config_and_finishes_it_cancelled(
    tmp_path: Path, cli: Cli
) -> None:
    _, run_id = _killed_during_exec(tmp_path, cli)
    assert cli.json("runs", "show", run_id, "--store", cli.store)["status"] == "interrupted"

    out = cli.json("runs", "stop", run_id, "--store", cli.store)  # the recorded config serves

    assert out == {"run_id": run_id, "requested": True, "status": "cancelled"}


def _expire_lease(cli: Cli, run_id: str) -> None:
    """What time does to a dead process's lease."""
    store = open_store(cli.store)
    try:
        store.commit_many([WriteSet((Put("runs", {"run_id": run_id, "lease_expires_at": 0.0}),))])
    finally:
        store.close()


def _epoch(cli: Cli, run_id: str) -> int:
    store = open_store(cli.store)
    try:
        row = store.get("runs", {"run_id": run_id})
        assert row is not None
        return int(row["lease_epoch"])
    finally:
        store.close()


@pytest.mark.kill
def test_cli_worker_resumes_a_run_whose_process_died_and_never_takes_a_live_or_foreign_one(
    tmp_path: Path, cli: Cli
) -> None:
    live = spawn("run", str(write_project(tmp_path / "live", SLEEP_TURNS, tools=["exec"])),
                 "sleep a while", "--store", cli.store, "--json", cwd=tmp_path)
    try:
        live_id = str(_wait_for_exec_started(cli, live)["run_id"])
        config, run_id = _killed_during_exec(tmp_path, cli, frozenset({live_id}))
        epoch = _epoch(cli, run_id)
        # a worker of another configuration leaves the dead one, and says why; the live one
        # is not even considered
        other = write_project(tmp_path / "other", SLEEP_TURNS, tools=["exec"],
                              extra="    instructions: Another agent.\n")
        assert cli.json("worker", str(other), "--once", "--store", cli.store) == {
            "resumed": [], "claimed": 0, "left": [{"run_id": run_id, "reason": "RELEASE_CHANGED"}]}
        assert _epoch(cli, run_id) == epoch  # it did not claim it

        # the killed process is gone (its lease has not run out yet): the run is taken at once
        out = cli.json("worker", str(config), "--once", "--store", cli.store)

        assert out["left"] == []
        (result,) = out["resumed"]
        assert (result["run_id"], result["status"]) == (run_id, "succeeded")
        assert result["output"] == "the command came back"
        (op,) = [o for o in cli.json("runs", "show", run_id, "--store", cli.store)["operations"]
                 if o["capability"] == "exec"]
        assert op["status"] == "unknown" and op["attempts"]["count"] == 1  # never run twice
        assert cli.json("runs", "show", live_id, "--store", cli.store)["status"] == "running"
        assert live.poll() is None  # the live run was never taken from its process
    finally:
        live.kill()
        live.communicate()
    human = cli("worker", str(config), "--once", "--store", cli.store)
    assert human.exit_code == 0


def test_cli_run_sigint_stops_the_run_as_cancelled_and_exits_1(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", SLEEP_TURNS, tools=["exec"])
    proc = spawn("run", str(config), "sleep a while", "--store", cli.store, "--json", cwd=tmp_path)
    try:
        run_id = _wait_for_exec_started(cli, proc)["run_id"]
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, stderr
    assert "SIGINT" in stderr
    out = json.loads(stdout)
    assert (out["run_id"], out["status"]) == (run_id, "cancelled")
