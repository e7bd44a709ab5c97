"""Issue 12, point 3: resume by id, never a hijack.

A run records the config file it was started from, so ``runs resume RUN_ID`` needs no
``--config``; a run a live process drives is refused, naming that process, unless ``--force``
(which says what may run twice); a run whose process was killed is ``interrupted`` in every
view and is resumed at once; a changed configuration is refused naming the changed key. Real
``agentloom`` processes on a SQLite store, the model on the real OpenAI wire (the scripted
server on 127.0.0.1).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.store.holders import holder_id
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import SERVER_KEY_ENV, SUBPROCESS_TIMEOUT_S, Cli, agentloom, openai_project, spawn
from .test_process import _wait_for_exec_started, run_killed_during_exec


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    with ScriptedOpenAIServer() as srv:
        yield srv


def _sleeper(tmp_path: Path, server: ScriptedOpenAIServer) -> Path:
    """A config whose model (on the real wire) runs a long exec, then answers."""
    server.script(chat_turn("", tool_calls=[
        ("s1", "exec", json.dumps({"argv": ["sleep", "15"], "timeout_s": 120}))]),
        chat_turn("the command came back"))
    return openai_project(tmp_path / "p", server.base_url, tools=["exec"])


def _killed_during_exec(tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer
                        ) -> tuple[Path, str]:
    config = _sleeper(tmp_path, server)
    return config, run_killed_during_exec(cli, config, tmp_path)


def test_12_3_a_live_run_is_refused_naming_its_holder_and_force_takes_it_over(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    config = _sleeper(tmp_path, server)
    live = spawn("run", str(config), "sleep a while", "--store", cli.store, "--json", cwd=tmp_path)
    try:
        run_id = str(_wait_for_exec_started(cli, live)["run_id"])
        holder = holder_id(live.pid)

        refused = agentloom("runs", "resume", run_id, "--store", cli.store, cwd=tmp_path)

        assert refused.returncode == 1, refused.stderr
        assert f"error: LEASE_HELD: run {run_id} is driven by a live process ({holder}" in \
            refused.stderr
        assert "its lease expires in" in refused.stderr and "--force" in refused.stderr
        assert live.poll() is None  # untouched
        assert cli.json("runs", "show", run_id, "--store", cli.store)["status"] == "running"

        forced = agentloom("runs", "resume", run_id, "--force", "--store", cli.store, "--json",
                           cwd=tmp_path)

        assert forced.returncode == 0, forced.stderr
        assert f"warning: taking run {run_id} over from {holder}" in forced.stderr
        assert "exec (op " in forced.stderr and "may run twice" in forced.stderr
        out = json.loads(forced.stdout)
        assert (out["status"], out["output"]) == ("succeeded", "the command came back")
        # the process it was taken from is fenced out and says so, without a traceback
        stdout, stderr = live.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if live.poll() is None:
            live.kill()
            live.communicate()
    assert live.returncode != 0
    assert "Traceback" not in stderr
    assert "LEASE_LOST" in stdout + stderr


def test_12_3_after_sigkill_runs_resume_with_no_config_continues_it(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    _, run_id = _killed_during_exec(tmp_path, cli, server)
    listed = cli.json("runs", "list", "--store", cli.store)
    assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "interrupted")]
    human = cli("runs", "list", "--store", cli.store)
    assert "interrupted" in human.stdout

    resumed = agentloom("runs", "resume", run_id, "--store", cli.store, "--json", cwd=tmp_path)

    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert (out["run_id"], out["status"]) == (run_id, "succeeded")
    (op,) = [o for o in cli.json("runs", "show", run_id, "--store", cli.store)["operations"]
             if o["capability"] == "exec"]
    assert op["status"] == "unknown" and op["attempts"]["count"] == 1  # not run again


def test_12_3_after_the_config_changed_resume_refuses_naming_the_changed_key(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    config, run_id = _killed_during_exec(tmp_path, cli, server)
    text = config.read_text(encoding="utf-8")
    config.write_text(text + "    instructions: Be brief.\n", encoding="utf-8")

    refused = agentloom("runs", "resume", run_id, "--store", cli.store, "--json", cwd=tmp_path)

    assert refused.returncode == 2  # the configuration is the problem
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "RELEASE_CHANGED"
    assert "changed since it started: agents.main.instructions;" in error["message"]
    assert cli.json("runs", "show", run_id, "--store", cli.store)["status"] == "interrupted"


def test_12_3_a_dead_run_is_interrupted_and_a_stopped_live_one_never_is(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    config = _sleeper(tmp_path, server)
    live = spawn("run", str(config), "sleep a while", "--store", cli.store, "--json", cwd=tmp_path)
    try:
        run_id = str(_wait_for_exec_started(cli, live)["run_id"])
        assert cli.json("runs", "show", run_id, "--store", cli.store)["status"] == "running"
        live.send_signal(signal.SIGKILL)
        live.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        if live.poll() is None:
            live.kill()
            live.communicate()
    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    assert shown["status"] == "interrupted" and shown["lease_expires_at"] > 0
    assert "interrupted" in cli("runs", "show", run_id, "--store", cli.store).stdout
