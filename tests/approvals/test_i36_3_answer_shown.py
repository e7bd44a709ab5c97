"""Issue 36 point 3: an approval's answer — who, when, the decision and why — is shown beside
the call it answered in `agentloom runs show` (``--json`` and the human text): a person
answers with `runs approve|reject --reason TEXT` as the OS user (``cli:<user>``) or as
``--as NAME``. Real worker processes, on SQLite and PostgreSQL."""

from __future__ import annotations

import getpass
import json
import time
from pathlib import Path
from typing import Any

from tests.cli.support import Cli, agentloom, asking_exec_project


def _waiting_run(tmp_path: Path, cli: Cli) -> tuple[Path, str, str]:
    """A run whose exec call waits for a person (its worker process has exited): the config,
    the run id and the call's operation id."""
    config = asking_exec_project(tmp_path / "p")
    run_id = _json("submit", str(config), "touch the file", "--store", cli.store,
                   cwd=tmp_path)["run_id"]
    _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    op = _exec_op(cli, run_id)
    return config, run_id, op["operation_id"]


def _json(*args: str, cwd: Path) -> Any:
    result = agentloom(*args, "--json", cwd=cwd)
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def _exec_op(cli: Cli, run_id: str) -> dict[str, Any]:
    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    (op,) = [o for o in shown["operations"] if o["capability"] == "exec"]
    return dict(op)


def test_i36_3_runs_show_gives_the_approval_answer_beside_the_call_json_and_text(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    config, run_id, op_id = _waiting_run(tmp_path, cli)
    asked = _exec_op(cli, run_id)["approval"]
    assert asked["status"] == "pending" and asked["question"] == "Run it?"
    assert asked["approval_id"] == op_id and len(asked["asked_by"]) == 1, asked  # the hook
    assert (asked["decision"], asked["actor"], asked["reason"], asked["answered_at"]) == (
        None, None, None, None)
    pending_text = cli("runs", "show", run_id, "--store", cli.store).stdout
    assert "approval: pending — asked: Run it?" in pending_text

    before = time.time()
    answered = cli.json("runs", "approve", run_id, op_id, "--reason", "looks safe",
                        "--as", "alice", "--store", cli.store)
    assert (answered["actor"], answered["reason"]) == ("alice", "looks safe")
    done = _json("worker", str(config), "--once", "--store", cli.store, cwd=tmp_path)
    assert [r["status"] for r in done["resumed"]] == ["succeeded"]

    approval = _exec_op(cli, run_id)["approval"]  # kept once the run ended
    assert {k: approval[k] for k in ("status", "decision", "actor", "reason")} == {
        "status": "approved", "decision": "approve", "actor": "alice", "reason": "looks safe"}
    assert before <= approval["answered_at"] <= time.time()
    assert approval["summary"].startswith("approved by alice at ")
    text = cli("runs", "show", run_id, "--store", cli.store).stdout
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(approval["answered_at"]))
    line = next(x for x in text.splitlines() if "approval:" in x)
    assert line.strip().startswith(f"approval: approved by alice at {when}"), line
    assert "(reason: looks safe)" in line and "asked: Run it?" in line


def test_i36_3_a_rejection_records_the_os_user_and_its_reason(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    _, run_id, op_id = _waiting_run(tmp_path, cli)
    cli.json("runs", "reject", run_id, op_id, "--reason", "not on a Friday", "--store", cli.store)
    approval = _exec_op(cli, run_id)["approval"]
    assert {k: approval[k] for k in ("status", "decision", "actor", "reason")} == {
        "status": "rejected", "decision": "deny", "actor": f"cli:{getpass.getuser()}",
        "reason": "not on a Friday"}
    text = cli("runs", "show", run_id, "--store", cli.store).stdout
    assert f"approval: rejected by cli:{getpass.getuser()} at " in text
    assert "(reason: not on a Friday)" in text


def test_i36_3_an_empty_as_name_is_refused_naming_the_flag(
        tmp_path: Path, durable_store_url: str) -> None:
    cli = Cli(durable_store_url)
    _, run_id, op_id = _waiting_run(tmp_path, cli)
    refused = cli("runs", "approve", run_id, op_id, "--as", " ", "--store", cli.store)
    assert refused.exit_code != 0 and "--as is empty" in refused.stderr
    assert _exec_op(cli, run_id)["approval"]["status"] == "pending"  # nothing recorded
