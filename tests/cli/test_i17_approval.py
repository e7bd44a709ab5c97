"""Issue 17 acceptance 3: a hook asks a person; the run waits with nobody holding it, its worker
process exits, `runs approve` answers, a new worker process resumes it and the tool runs exactly
once; a rejection tells the model it was denied; a passed deadline applies the default (deny);
a second answer is refused. Real worker processes, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .support import Cli, agentloom, asking_exec_project


def _project(tmp_path: Path, *, limits: str = "") -> Path:
    return asking_exec_project(tmp_path / "p", extra=limits + "workspace: {keep: true}\n")


def _json(*args: str, cwd: Path, code: int = 0) -> Any:
    result = agentloom(*args, "--json", cwd=cwd)
    assert result.returncode == code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def _waiting_call(cli: Cli, run_id: str) -> dict[str, Any]:
    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    assert shown["status"] == "waiting"
    (approval,) = shown["diagnosis"]["waiting_for"]["approvals"]
    assert approval["question"] == "Run it?" and approval["capability"] == "exec"
    assert approval["arguments"] == {"argv": ["touch", "ran-once"], "timeout_s": 60}
    (op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
    assert op["phase"] == "awaiting_approval" and op["attempts"]["count"] == 0
    assert op["operation_id"] == approval["operation_id"]
    return dict(approval)


def _exec_op(cli: Cli, run_id: str) -> dict[str, Any]:
    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    assert shown["status"] == "succeeded", shown
    (op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
    return dict(op)


def test_i17_approval_a_new_worker_resumes_after_approve_and_the_tool_runs_once(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    config = _project(tmp_path)
    run_id = _json("submit", str(config), "touch the file", "--store", cli.store,
                   cwd=tmp_path)["run_id"]

    first = _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    assert [(r["run_id"], r["status"]) for r in first["resumed"]] == [(run_id, "waiting")]
    approval = _waiting_call(cli, run_id)  # the worker process has exited: nobody holds it

    answered = cli.json("runs", "approve", run_id, approval["operation_id"], "--reason", "ok",
                        "--store", cli.store)
    assert answered["status"] == "approved" and answered["run_status"] == "pending"
    assert answered["actor"].startswith("cli:")
    again = cli("runs", "approve", run_id, approval["operation_id"], "--store", cli.store)
    assert again.exit_code != 0 and "APPROVAL_ALREADY_ANSWERED" in again.stderr
    assert "approved" in again.stderr

    second = _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    (result,) = second["resumed"]
    assert result["status"] == "succeeded" and result["output"] == "finished"
    op = _exec_op(cli, run_id)
    assert op["outcome"] == "succeeded" and op["attempts"]["count"] == 1
    assert (Path(result["workspace"]) / "ran-once").is_file()
    assert cli.json("runs", "show", run_id, "--store", cli.store)["diagnosis"] is None


def test_i17_approval_reject_tells_the_model_it_was_denied(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    config = _project(tmp_path)
    run = _json("run", str(config), "touch the file", "--store", cli.store, cwd=tmp_path,
                code=3)  # `agentloom run` ends: the run waits for a person
    assert run["status"] == "waiting"
    (call,) = run["waiting"]
    assert call["question"] == "Run it?"

    rejected = cli.json("runs", "reject", run["run_id"], call["operation_id"], "--reason",
                        "not today", "--store", cli.store)
    assert rejected["status"] == "rejected" and rejected["run_status"] == "pending"
    out = _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    assert [r["status"] for r in out["resumed"]] == ["succeeded"]
    op = _exec_op(cli, run["run_id"])
    assert op["outcome"] == "denied_before_execution" and op["attempts"]["count"] == 0
    assert "not today" in op["reason"]
    assert not (Path(out["resumed"][0]["workspace"]) / "ran-once").exists()
    shown = cli.json("runs", "show", run["run_id"], "--store", cli.store)
    model_calls = [o for o in shown["operations"] if o["kind"] == "model"]
    told = json.dumps(model_calls[-1]["proposed_arguments"])
    assert "not today" in told  # the model's next request carries the denial


def test_i17_approval_timeout_applies_the_default_deny(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    config = _project(tmp_path, limits="    limits: {approval_timeout_s: 0.5}\n")
    run_id = _json("submit", str(config), "touch the file", "--store", cli.store,
                   cwd=tmp_path)["run_id"]
    first = _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    assert [r["status"] for r in first["resumed"]] == ["waiting"]
    approval = _waiting_call(cli, run_id)
    assert approval["deadline"] is not None
    time.sleep(max(0.0, approval["deadline"] - time.time()) + 0.2)

    out = _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    assert [r["status"] for r in out["resumed"]] == ["succeeded"]
    op = _exec_op(cli, run_id)
    assert op["outcome"] == "denied_before_execution" and op["attempts"]["count"] == 0
    late = cli("runs", "approve", run_id, approval["operation_id"], "--store", cli.store)
    assert late.exit_code != 0 and "APPROVAL_ALREADY_ANSWERED" in late.stderr
