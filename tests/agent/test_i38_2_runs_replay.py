"""Issue 38, point 2: ``agentloom runs replay`` re-drives a finished run against the current
config and code — model turns served from the record, capabilities never executed, hooks
live — and names the first call that differs.

A real run is recorded first (the ``agentloom`` CLI, the model on the real OpenAI wire of the
scripted server on 127.0.0.1, a SQLite file or PostgreSQL): ``fs.write`` patched by a Python
before-hook, and an SDK tool with a side effect the test counts (a counter file). The replay
must execute nothing (the counter and the server's chat requests do not move), write nothing
(every table of the store is the same row for row), and report a divergence at the exact
operation a changed hook patch, changed instructions or a removed tool first affect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentloom.agent.replay import RecordedCall, first_divergence, replay_refusal
from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.store import open_store
from agentloom.store.runs import RunRecord
from agentloom.store.schema import TABLES
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

KEY_ENV = "AGENTLOOM_TEST_KEY"

COUNTER_TOOL = '''\
import os
from pathlib import Path
from agentloom.tools import StrictInput, Tool, ToolContext


class BumpInput(StrictInput):
    step: int


class Bump(Tool[BumpInput]):
    name = "bump"
    description = "Add step to the shared counter."

    async def execute(self, args: BumpInput, ctx: ToolContext) -> str:
        counter = Path(os.environ["I38_COUNTER"])
        total = int(counter.read_text()) + args.step
        counter.write_text(str(total))
        return f"counter is {total}"


bump = Bump()
'''

GUARD = '''\
def tag(event):
    return {{"decision": "allow",
            "payload_patch": [{{"op": "replace", "path": "/payload/content", "value": {value!r}}}]}}
'''


def _config(folder: Path, name: str, base_url: str, *, instructions: str = "Be brief.",
            tools: str = 'fs.write, "counter:bump"', guard: str = "guards") -> Path:
    path = folder / name
    path.write_text(
        "version: 1\n"
        f"connections:\n  local: {{preset: openai, base_url: \"{base_url}\", api_key_env: {KEY_ENV}}}\n"
        "agents:\n  main:\n    model: {connection: local, name: scripted-model}\n"
        f"    instructions: {instructions}\n    tools: [{tools}]\n"
        "    hooks:\n      - {timing: before, event: tool, match: {capability: fs.write}, "
        f"handler: {{ref: \"{guard}:tag\"}}}}\n", encoding="utf-8")
    return path


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "counter"
    path.write_text("0", encoding="utf-8")
    monkeypatch.setenv("I38_COUNTER", str(path))
    return path


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def replay(store: str, *args: str, exit_code: int) -> Any:
    result = cli("runs", "replay", *args, "--store", store, "--json")
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def rows(url: str) -> dict[str, list[str]]:
    """Every row of every table, as sorted JSON text."""
    store = open_store(url, read_only=True)
    try:
        return {t: sorted(json.dumps(r, sort_keys=True, default=str)
                          for r in store.query(t, {})) for t in TABLES}
    finally:
        store.close()


@pytest.fixture
def recorded(tmp_path: Path, server: ScriptedOpenAIServer, counter: Path,
             durable_store_url: str) -> tuple[Path, str, dict[str, str]]:
    """A project, the run it recorded, and its operation ids by ``t<n>/<call>``."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "counter.py").write_text(COUNTER_TOOL, encoding="utf-8")
    (folder / "guards.py").write_text(GUARD.format(value="patched by the hook"), encoding="utf-8")
    config = _config(folder, "agentloom.yaml", server.base_url)
    server.script(
        chat_turn("", tool_calls=[
            ("w1", "fs_write", json.dumps({"path": "notes.txt", "content": "draft"})),
            ("b1", "bump", json.dumps({"step": 2}))]),
        chat_turn("", tool_calls=[("b2", "bump", json.dumps({"step": 3}))]),
        chat_turn("", tool_calls=[
            ("w2", "fs_write", json.dumps({"path": "more.txt", "content": "x"}))]),
        chat_turn("all done"))
    result = cli("run", str(config), "write notes and count", "--store", durable_store_url,
                 "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    run_id = json.loads(result.stdout)["run_id"]
    assert counter.read_text() == "5"
    shown = json.loads(cli("runs", "show", run_id, "--store", durable_store_url,
                           "--json").stdout)
    ops = {op["logical_key"].removeprefix(f"{run_id}/"): op["operation_id"]
           for op in shown["operations"]}
    assert set(ops) == {"t1/model", "t1/c0", "t1/c1", "t2/model", "t2/c0", "t3/model",
                        "t3/c0", "t4/model"}
    return config, run_id, ops


def test_i38_2_a_run_replays_the_same_on_its_config_executing_and_writing_nothing(
    recorded: tuple[Path, str, dict[str, str]], durable_store_url: str, counter: Path,
    server: ScriptedOpenAIServer,
) -> None:
    config, run_id, _ = recorded
    server.script(chat_turn("second run"))
    second = cli("run", str(config), "say hi", "--store", durable_store_url, "--json")
    assert second.exit_code == 0, second.stderr
    second_id = json.loads(second.stdout)["run_id"]
    before, chats = rows(durable_store_url), len(server.model_requests)
    root = load_config(config).workspace_root()
    folders = sorted(root.rglob("*")) if root.exists() else []

    one = replay(durable_store_url, run_id, exit_code=0)  # the config it was started from

    assert one["same"] is True and one["divergence"] is None
    assert (one["run_id"], one["calls"], one["replayed_calls"], one["status"]) == \
        (run_id, 8, 8, "succeeded")
    both = replay(durable_store_url, run_id, second_id, "--config", str(config), exit_code=0)
    assert [(r["run_id"], r["same"]) for r in both] == [(run_id, True), (second_id, True)]
    text = cli("runs", "replay", run_id, "--store", durable_store_url)
    assert text.exit_code == 0, text.stderr
    assert f"run {run_id} (agent main): 8 recorded call(s) replay the same" in text.stdout
    # nothing executed: no tool ran, no model was asked; nothing written to the store
    assert counter.read_text() == "5"
    assert len(server.model_requests) == chats
    assert rows(durable_store_url) == before
    assert (sorted(root.rglob("*")) if root.exists() else []) == folders  # no run folder


def test_i38_2_a_changed_hook_patch_diverges_at_the_first_patched_call(
    recorded: tuple[Path, str, dict[str, str]], durable_store_url: str, counter: Path,
) -> None:
    config, run_id, ops = recorded
    (config.parent / "guards_v2.py").write_text(GUARD.format(value="patched otherwise"),
                                                encoding="utf-8")
    changed = _config(config.parent, "changed.yaml", _base_url(config), guard="guards_v2")
    before = rows(durable_store_url)

    out = replay(durable_store_url, run_id, "--config", str(changed), exit_code=1)

    found = out["divergence"]
    assert (found["kind"], found["operation_id"], found["capability"]) == \
        ("hook", ops["t1/c0"], "fs.write")
    assert found["recorded"]["patch"]["ops"] == [
        {"op": "replace", "path": "/payload/content", "value": "patched by the hook"}]
    assert found["replayed"]["patch"]["ops"] == [
        {"op": "replace", "path": "/payload/content", "value": "patched otherwise"}]
    assert counter.read_text() == "5"
    assert rows(durable_store_url) == before


def test_i38_2_changed_instructions_diverge_at_the_model_request_of_turn_1(
    recorded: tuple[Path, str, dict[str, str]], durable_store_url: str, counter: Path,
) -> None:
    config, run_id, ops = recorded
    changed = _config(config.parent, "changed.yaml", _base_url(config),
                      instructions="Be thorough.")

    out = replay(durable_store_url, run_id, "--config", str(changed), exit_code=1)

    found = out["divergence"]
    assert (found["kind"], found["operation_id"]) == ("model_request", ops["t1/model"])
    assert "the model request of turn 1 differs" in found["message"]
    assert '-   "content": "Be brief.",' in found["diff"]
    assert '+   "content": "Be thorough.",' in found["diff"]
    assert out["replayed_calls"] == 1  # it stopped there
    text = cli("runs", "replay", run_id, "--config", str(changed), "--store", durable_store_url)
    assert text.exit_code == 1
    assert f"DIVERGES at operation {ops['t1/model']}" in text.stdout
    assert counter.read_text() == "5"


def test_i38_2_a_removed_tool_diverges_at_the_first_request_offering_it(
    recorded: tuple[Path, str, dict[str, str]], durable_store_url: str, counter: Path,
) -> None:
    config, run_id, ops = recorded
    changed = _config(config.parent, "changed.yaml", _base_url(config), tools="fs.write")

    out = replay(durable_store_url, run_id, "--config", str(changed), exit_code=1)

    found = out["divergence"]
    assert (found["kind"], found["operation_id"]) == ("model_request", ops["t1/model"])
    offered = [t["name"] for t in found["replayed"]["tools"]]
    assert "bump" in [t["name"] for t in found["recorded"]["tools"]]
    assert "bump" not in offered and "fs_write" in offered
    assert any(line.startswith("-") and '"bump"' in line for line in found["diff"])
    assert counter.read_text() == "5"


def test_i38_2_bad_input_is_a_usage_error_naming_what_is_wrong(
    recorded: tuple[Path, str, dict[str, str]], durable_store_url: str,
    server: ScriptedOpenAIServer,
) -> None:
    config, run_id, _ = recorded
    missing = cli("runs", "replay", "no-such-run", "--store", durable_store_url)
    assert missing.exit_code == 2
    assert "RUN_NOT_FOUND" in missing.stderr and "no-such-run" in missing.stderr

    queued = cli("submit", str(config), "later", "--store", durable_store_url, "--json")
    assert queued.exit_code == 0, queued.stderr
    pending = json.loads(queued.stdout)["run_id"]
    unfinished = cli("runs", "replay", run_id, pending, "--store", durable_store_url)
    assert unfinished.exit_code == 2  # checked before anything is re-driven
    assert "RUN_NOT_FINISHED" in unfinished.stderr and "pending" in unfinished.stderr
    assert unfinished.stdout == ""

    server.script(chat_turn("a session turn"))
    turn = cli("run", str(config), "hello", "--session", "s1", "--store", durable_store_url,
               "--json")
    assert turn.exit_code == 0, turn.stderr
    session_run = json.loads(turn.stdout)["run_id"]
    refused = cli("runs", "replay", session_run, "--store", durable_store_url)
    assert refused.exit_code == 2
    assert "REPLAY_UNSUPPORTED" in refused.stderr and "session 's1'" in refused.stderr


def test_i38_2_last_n_replays_the_newest_runs_that_can_be_replayed(
    recorded: tuple[Path, str, dict[str, str]], durable_store_url: str,
    server: ScriptedOpenAIServer,
) -> None:
    """``--last N``: the newest N finished agent runs without a session, newest first (a
    session's turn, a run still pending are passed over); with RUN_IDs, besides them."""
    config, run_id, _ = recorded
    server.script(chat_turn("second run"), chat_turn("a session turn"))
    second = cli("run", str(config), "say hi", "--store", durable_store_url, "--json")
    assert second.exit_code == 0, second.stderr
    second_id = json.loads(second.stdout)["run_id"]
    turn = cli("run", str(config), "hello", "--session", "s1", "--store", durable_store_url,
               "--json")
    assert turn.exit_code == 0, turn.stderr
    assert cli("submit", str(config), "later", "--store", durable_store_url).exit_code == 0

    newest = replay(durable_store_url, "--last", "1", exit_code=0)
    assert (newest["run_id"], newest["same"]) == (second_id, True)
    both = replay(durable_store_url, "--last", "5", exit_code=0)
    assert [r["run_id"] for r in both] == [second_id, run_id]
    named = replay(durable_store_url, run_id, "--last", "1", exit_code=0)
    assert [r["run_id"] for r in named] == [run_id, second_id]
    neither = cli("runs", "replay", "--store", durable_store_url)
    assert neither.exit_code == 2 and "--last N" in neither.stderr


def test_i38_2_a_workflow_run_is_refused_as_unsupported() -> None:
    row = {"run_id": "r1", "status": "succeeded", "created_at": 1.0, "updated_at": 2.0,
           "lease_epoch": 1, "data": {"agent": "workflow:build", "task": "go"}}
    refused = replay_refusal(RunRecord.from_row(row), "r1")
    assert refused is not None
    assert refused[0] == "REPLAY_UNSUPPORTED" and "workflow run" in refused[1]


def _base_url(config: Path) -> str:
    text = config.read_text(encoding="utf-8")
    return text.split('base_url: "', 1)[1].split('"', 1)[0]


def _call(key: str, *, event_type: str = "tool", capability: str = "fs.write") -> RecordedCall:
    return RecordedCall(operation_id=f"op-{key}", logical_key=f"r1/{key}", capability=capability,
                        event_type=event_type, created_at=0.0, proposed={"path": key},
                        executed={"path": key}, hooks=(), outcome="succeeded", raw=None,
                        effective=None, error=None)


def test_i38_2_a_re_drive_that_stops_early_or_goes_past_the_record_diverges_there() -> None:
    model = _call("t1/model", event_type="model", capability="model.main")
    record = [model, _call("t1/c0"), _call("t2/model", event_type="model",
                                            capability="model.main")]

    assert first_divergence(record, list(record)) is None
    early = first_divergence(record, [model])
    assert early is not None
    assert (early.kind, early.operation_id) == ("stopped_early", "op-t1/c0")
    past = first_divergence(record, [*record, _call("t3/model", event_type="model",
                                                    capability="model.main")])
    assert past is not None
    assert (past.kind, past.logical_key, past.operation_id) == ("not_recorded", "r1/t3/model",
                                                                None)
    assert "a model turn past the recorded ones (3)" in past.message
