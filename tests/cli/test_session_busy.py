"""000 §7.1.11 through the CLI: a session has one active run. ``agentloom run --session S``
while another run of S is running is refused (``error: SESSION_BUSY: …`` naming that run and
``--wait``, exit 1, nothing started); with ``--wait`` it waits for that run to end, then runs
and continues the session. Real processes, a real SQLite file, the model on the real OpenAI
wire (the scripted server on 127.0.0.1)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import SERVER_KEY_ENV, SUBPROCESS_TIMEOUT_S, Cli, agentloom, openai_project, spawn
from .test_process import _wait_for_exec_started


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")


def test_s7_1_cli_a_second_run_of_a_busy_session_is_refused_and_wait_waits(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    server.script(chat_turn("", tool_calls=[("s1", "exec", json.dumps(
        {"argv": ["sleep", "60"], "timeout_s": 120}))]))
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.read", "exec"))
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")
    first = spawn("run", str(config), "sleep", "--session", "chat", "--store", cli.store,
                  "--json", cwd=tmp_path)
    waiting: subprocess.Popen[str] | None = None
    try:
        first_id = str(_wait_for_exec_started(cli, first)["run_id"])

        refused = agentloom("run", str(config), "hello", "--session", "chat",
                            "--store", cli.store, cwd=tmp_path)

        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.startswith("error: SESSION_BUSY: "), refused.stderr
        assert first_id in refused.stderr and "--wait" in refused.stderr
        assert len(cli.json("runs", "list", "--store", cli.store)) == 1  # nothing started

        server.script(chat_turn("my turn"))
        waiting = spawn("run", str(config), "hello", "--session", "chat", "--wait",
                        "--store", cli.store, "--json", cwd=tmp_path)
        assert cli.json("runs", "stop", first_id, "--store", cli.store)["requested"] is True
        stdout, stderr = waiting.communicate(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        for proc in (first, waiting):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert waiting.returncode == 0, stderr
    second = json.loads(stdout)
    assert second["output"] == "my turn"
    runs = {r["run_id"]: r["status"] for r in cli.json("runs", "list", "--store", cli.store)}
    assert runs == {first_id: "cancelled", second["run_id"]: "succeeded"}
    # the stopped run gave no answer, so the waiting run continued from none of it
    assert [m["content"] for m in server.model_requests[-1].json["messages"]
            if m["role"] == "user"] == ["hello"]
