"""Issue 36 point 4, the CLI side: `agentloom runs events` carries ``run.waiting`` (the
approval, the call, the question) while a run waits for a person and ``run.resumed`` (who
answered, the decision, why) once the answer lets it go on; `runs show`'s ``next_step`` names
the CLI's commands. The Python API: a run handle's live events end with ``run.waiting``,
``Runtime.events`` (the stored events) has both. Real worker processes, a SQLite file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config

from .support import Cli, agentloom, asking_exec_project


def _json(*args: str, cwd: Path) -> Any:
    result = agentloom(*args, "--json", cwd=cwd)
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def test_i36_4_runs_events_carries_run_waiting_then_run_resumed_and_next_step_names_commands(
        tmp_path: Path, store_url: str) -> None:
    cli = Cli(store_url)
    config = asking_exec_project(tmp_path / "p")
    run_id = _json("submit", str(config), "touch the file", "--store", store_url,
                   cwd=tmp_path)["run_id"]
    _json("worker", str(config), "--once", "--store", store_url, cwd=tmp_path)

    events = cli.json("runs", "events", run_id, "--store", store_url)
    assert "run.resumed" not in _types(events) and "run.finished" not in _types(events)
    (waiting,) = [e for e in events if e["type"] == "run.waiting"]
    op_id = waiting["operation_id"]
    assert waiting == {"type": "run.waiting", "run_id": run_id, "at": waiting["at"],
                       "approval_id": op_id, "operation_id": op_id, "capability": "exec",
                       "question": "Run it?", "deadline": None}
    assert _types(events)[-1] == "run.waiting"  # the last thing that happened
    shown = cli.json("runs", "show", run_id, "--store", store_url)
    assert f"agentloom runs approve {run_id} {op_id}" in shown["diagnosis"]["next_step"]
    assert "POST /v1" not in shown["diagnosis"]["next_step"]
    assert "asked: Run it?" in cli("runs", "events", run_id, "--store", store_url).stdout

    cli.json("runs", "approve", run_id, op_id, "--reason", "go ahead", "--as", "bob",
             "--store", store_url)
    answered = cli.json("runs", "events", run_id, "--store", store_url)
    (resumed,) = [e for e in answered if e["type"] == "run.resumed"]
    assert {k: resumed[k] for k in ("approval_id", "operation_id", "capability", "status",
                                    "decision", "actor", "reason")} == {
        "approval_id": op_id, "operation_id": op_id, "capability": "exec",
        "status": "approved", "decision": "approve", "actor": "bob", "reason": "go ahead"}
    assert _types(answered)[-2:] == ["run.waiting", "run.resumed"]

    _json("worker", str(config), "--once", "--store", store_url, cwd=tmp_path)
    ended = _types(cli.json("runs", "events", run_id, "--store", store_url))
    assert ended.index("run.waiting") < ended.index("run.resumed") < ended.index("run.finished")
    assert ended[ended.index("run.resumed") + 1:].count("tool.call.completed") == 1  # exec ran
    text = cli("runs", "events", run_id, "--store", store_url).stdout
    assert "approved by bob: go ahead" in text


def test_i36_4_the_python_handle_streams_run_waiting_and_runtime_events_add_run_resumed(
        tmp_path: Path, store_url: str) -> None:
    config = asking_exec_project(tmp_path / "p")

    async def scenario() -> tuple[str, list[Any], list[Any]]:
        runtime = runtime_from_config(load_config(config), store=store_url)
        try:
            handle = await runtime.start("touch the file")
            live = [event async for event in handle.events()]
            assert (await handle.result()).status == "waiting"
            (waiting,) = [e for e in live if e.type == "run.waiting"]
            await runtime.approve(handle.run_id, waiting.data["operation_id"], reason="yes",
                                  actor="carol")
            return handle.run_id, live, runtime.events(handle.run_id)
        finally:
            await runtime.aclose()

    run_id, live, stored = asyncio.run(scenario())
    assert live[-1].type == "run.waiting"  # the handle's last event: what it waits for
    assert {k: live[-1].data[k] for k in ("capability", "question", "deadline")} == {
        "capability": "exec", "question": "Run it?", "deadline": None}
    (waiting,) = [e.to_dict() for e in stored if e.type == "run.waiting"]
    assert {k: waiting[k] for k in ("approval_id", "operation_id", "capability", "question")} \
        == {k: live[-1].data[k] for k in ("approval_id", "operation_id", "capability", "question")}
    (resumed,) = [e.to_dict() for e in stored if e.type == "run.resumed"]
    assert (resumed["run_id"], resumed["actor"], resumed["decision"], resumed["reason"]) == (
        run_id, "carol", "approve", "yes")


BATCH = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [touch, a], timeout_s: 60}
      - name: exec
        arguments: {argv: [touch, b], timeout_s: 60}
  - text: finished
"""


def test_i36_4_two_waiting_calls_give_one_run_resumed_after_the_last_answer(
        tmp_path: Path, store_url: str) -> None:
    cli = Cli(store_url)
    config = asking_exec_project(tmp_path / "p", BATCH)
    run_id = _json("submit", str(config), "touch both", "--store", store_url,
                   cwd=tmp_path)["run_id"]
    _json("worker", str(config), "--once", "--store", store_url, cwd=tmp_path)
    events = cli.json("runs", "events", run_id, "--store", store_url)
    first, second = [e["operation_id"] for e in events if e["type"] == "run.waiting"]

    cli.json("runs", "approve", run_id, first, "--store", store_url)
    half = cli.json("runs", "events", run_id, "--store", store_url)
    assert "run.resumed" not in _types(half)  # the other call still waits: the run too
    cli.json("runs", "reject", run_id, second, "--as", "dana", "--reason", "not b",
             "--store", store_url)
    both = cli.json("runs", "events", run_id, "--store", store_url)
    (resumed,) = [e for e in both if e["type"] == "run.resumed"]
    assert (resumed["operation_id"], resumed["status"], resumed["actor"], resumed["reason"]) == (
        second, "rejected", "dana", "not b")
    assert "rejected by dana: not b" in cli("runs", "events", run_id, "--store", store_url).stdout
