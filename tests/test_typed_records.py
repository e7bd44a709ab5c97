"""Issue 13, item 3: run and operation rows are typed records in the store API, and the closed
sets (run status, operation phase, outcome, error phase) are ``Literal`` types whose matches
end in ``assert_never``.

The records are read from the SQLite rows of a real scripted run; a damaged row is refused by
name; every closed-set function is driven through every member; and a match that leaves a
member out does not type-check.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest

from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.events import envelope_status
from agentloom.agent.leases import is_interrupted
from agentloom.errors import ERROR_PHASES, ErrorPhase, OperationError
from agentloom.models.offline import Script, ScriptModel
from agentloom.results import (
    OPERATION_PHASES,
    OUTCOMES,
    RUN_STATUSES,
    TERMINAL_RUN_STATUSES,
    OperationResult,
    ToolResult,
)
from agentloom.store import open_store
from agentloom.store.records import OperationRecord, RunRecord, get_run, operations, runs
from agentloom.views import run_detail

WAIT_S = 60.0


@dataclass(frozen=True)
class Ran:
    url: str
    db: Path
    run_id: str


def _script(*turns: dict[str, Any]) -> ScriptModel:
    return ScriptModel(Script.model_validate({"turns": list(turns)}), source="records")


async def _run(tmp: Path) -> Ran:
    model = _script(
        {"tool_calls": [{"id": "w1", "name": "fs_write",
                         "arguments": {"path": "a.txt", "content": "one"}}]},
        {"tool_calls": [{"id": "r1", "name": "fs_read", "arguments": {"path": "a.txt"}}]},
        {"expect": {"role": "tool", "contains": "one"}, "text": "a.txt says one"},
    )
    url = f"sqlite:///{tmp / 'agentloom.db'}"
    rt = Runtime([AgentSpec(name="main", model=model, tools=("fs.write", "fs.read"))],
                 store=url, workspace_root=tmp / "workspaces")
    try:
        async with asyncio.timeout(WAIT_S):
            result = await rt.run("write a.txt, then read it")
    finally:
        await rt.aclose()
    assert result.status == "succeeded", result.error
    return Ran(url, tmp / "agentloom.db", result.run_id)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    return asyncio.run(_run(tmp_path_factory.mktemp("records")))


def test_13_3_run_and_operation_records_are_read_from_the_rows_of_a_real_run(ran: Ran) -> None:
    store = open_store(ran.url, read_only=True)
    try:
        row = store.get("runs", {"run_id": ran.run_id})
        run = get_run(store, ran.run_id)
        ops = operations(store, ran.run_id)
        raw_ops = store.query("operations", {"run_id": ran.run_id}, order_by=("created_at",))
        tools = operations(store, ran.run_id, event_type="tool")
        pending = operations(store, ran.run_id, pending=True)
        listed = runs(store)
        running = runs(store, status="running")
        missing = get_run(store, "no-such-run")
    finally:
        store.close()

    assert row is not None and run is not None and missing is None
    assert run == RunRecord.from_row(row)
    assert (run.run_id, run.status, run.ended, run.running) == (
        ran.run_id, "succeeded", "succeeded", False)
    assert (run.agent, run.task, run.output, run.steps) == (
        "main", "write a.txt, then read it", "a.txt says one", 3)
    assert run.error is None and run.failures is None and run.session_id is None
    assert run.lease_epoch == row["lease_epoch"] >= 1 and run.lease_owner == row["lease_owner"]
    assert (run.created_at, run.updated_at) == (row["created_at"], row["updated_at"])
    assert run.release_id == row["data"]["release_id"] and run.data == row["data"]
    assert not is_interrupted(run) and not is_interrupted(row)  # a record or its row
    assert [r.run_id for r in listed] == [ran.run_id] and running == []

    assert [op.to_row() for op in ops] == raw_ops  # the row again, key for key
    assert [(op.event_type, op.phase, op.outcome, op.terminal) for op in ops] == [
        ("model", "delivered", "succeeded", True), ("tool", "delivered", "succeeded", True)] * 2 \
        + [("model", "delivered", "succeeded", True)]
    assert [(op.role, op.call_id, op.capability_key) for op in tools] == [
        ("main", "w1", "fs.write"), ("main", "r1", "fs.read")]
    assert {op.role for op in ops} == {"main"} and pending == []
    assert all(isinstance(op, OperationRecord) for op in ops)


def _tampered(ran: Ran, tmp_path: Path, sql: str) -> str:
    copy = tmp_path / "copy.db"
    with sqlite3.connect(ran.db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    with sqlite3.connect(copy) as db:
        db.execute(sql, (ran.run_id,))
    return f"sqlite:///{copy}"


def test_13_3_a_run_row_with_an_unknown_status_is_refused_with_a_clear_error(
    ran: Ran, tmp_path: Path
) -> None:
    url = _tampered(ran, tmp_path, "UPDATE runs SET status = 'paused' WHERE run_id = ?")
    store = open_store(url, read_only=True)
    try:
        with pytest.raises(ValueError) as refused:
            get_run(store, ran.run_id)
        with pytest.raises(ValueError):
            runs(store)
        shown = get_run(store, ran.run_id, lenient=True)  # what `runs show` prints
    finally:
        store.close()
    message = str(refused.value)
    assert repr(ran.run_id) in message and "'paused'" in message
    assert "running, succeeded, failed, cancelled, timed_out" in message
    assert shown is not None and shown.stored_status == "paused"
    assert (shown.known_status, shown.ended, shown.running) == (None, None, False)
    with pytest.raises(ValueError, match="paused"):
        _ = shown.status  # never acted on


def test_13_3_an_operation_row_with_an_unknown_phase_or_outcome_is_refused(
    ran: Ran, tmp_path: Path
) -> None:
    for sql, value in (
        ("UPDATE operations SET phase = 'done' WHERE run_id = ?", "'done'"),
        ("UPDATE operations SET outcome = 'ok' WHERE run_id = ?", "'ok'"),
    ):
        store = open_store(_tampered(ran, tmp_path, sql), read_only=True)
        try:
            with pytest.raises(ValueError, match=f"has (phase|outcome) {value}, which is not one"):
                operations(store, ran.run_id)
            # the CLI's read-only views show the row as it is stored; acting on it raises
            shown = operations(store, ran.run_id, lenient=True)
            assert value.strip("'") in {op.stored_phase for op in shown} | {
                op.stored_outcome for op in shown}
            with pytest.raises(ValueError, match=value):
                _ = [(op.phase, op.outcome) for op in shown]
            detail = run_detail(store, ran.run_id)
            assert detail is not None
        finally:
            store.close()
        (tmp_path / "copy.db").unlink()


def test_13_3_every_closed_set_function_answers_for_every_member() -> None:
    not_ended = {"running", "pending", "waiting", "suspended"}  # issue 17: the queue, HITL
    assert set(RUN_STATUSES) == {*not_ended, *TERMINAL_RUN_STATUSES}
    ended = {s: RunRecord(run_id="r", stored_status=s, lease_epoch=0, lease_owner=None,
                          lease_expires_at=None, created_at=0.0, updated_at=0.0, data={}).ended
             for s in RUN_STATUSES}
    assert ended == {s: None if s in not_ended else s for s in RUN_STATUSES}
    assert OPERATION_PHASES[0] == "intent_saved" and OPERATION_PHASES[-1] == "delivered"
    error = OperationError(code="E", category="unknown", message="boom")
    for outcome in OUTCOMES:
        raw = ToolResult.success("done") if outcome == "succeeded" else None
        envelope = OperationResult(operation_id="op", capability="c", outcome=outcome,
                                   result=raw, error=None if raw else error, reason="why")
        assert envelope.describe()  # every outcome has its account
        assert envelope_status(envelope) == ("denied" if outcome.startswith("denied") else outcome)
    phases: tuple[ErrorPhase, ...] = get_args(ErrorPhase)
    assert phases == ERROR_PHASES
    assert [OperationError(code="E", category="unknown", message="m", phase=p).phase
            for p in phases] == list(phases)
    with pytest.raises(ValueError, match="unknown error phase 'connect'"):
        OperationError.from_dict({"code": "E", "category": "unknown", "message": "m",
                                  "phase": "connect"})


def test_13_3_a_match_that_leaves_out_a_member_of_a_closed_set_does_not_type_check(
    tmp_path: Path
) -> None:
    pytest.importorskip("mypy")
    whole = textwrap.dedent("""\
        from typing import assert_never

        from agentloom.results import RunStatus


        def label(status: RunStatus) -> str:
            match status:
                case "running" | "pending" | "waiting" | "suspended":
                    return "on"
                case "succeeded" | "failed" | "cancelled"{more}:
                    return "off"
                case _:
                    assert_never(status)
        """)
    (tmp_path / "whole.py").write_text(whole.format(more=' | "timed_out"'))
    (tmp_path / "short.py").write_text(whole.format(more=""))
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir",
         str(tmp_path / "cache"), str(tmp_path / "whole.py"), str(tmp_path / "short.py")],
        capture_output=True, text=True, timeout=300, check=False)
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, checked.stdout
    assert "short.py" in errors[0] and "Literal['timed_out']" in errors[0]
