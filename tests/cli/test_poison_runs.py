"""Issue 11: no poison runs.

A scripted model (the real OpenAI wire, on 127.0.0.1) always answers with a response the
runtime cannot process: the store refuses the row that holds it (a trigger in the real SQLite
file / PostgreSQL schema, as a store refuses a value past its limits). Each try fails the same
way; the failure is recorded on the run, the worker backs off, and after
``recovery.max_failures`` (3) identical failures the run ends ``failed`` with the error
visible, and no worker asks the model again. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import open_store
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import SERVER_KEY_ENV, Cli, openai_project

PILL = "POISON-PILL"
REFUSED = "this store refuses the row"

SQLITE_TRIGGERS = [f"""
CREATE TRIGGER refuse_pill_{when} BEFORE {when.upper()} ON attempts
WHEN NEW.data LIKE '%{PILL}%'
BEGIN SELECT RAISE(ABORT, '{REFUSED}'); END""" for when in ("insert", "update")]

PG_TRIGGER = f"""
CREATE FUNCTION refuse_pill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.data::text LIKE '%{PILL}%' THEN
    RAISE EXCEPTION '{REFUSED}' USING ERRCODE = 'program_limit_exceeded';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER refuse_pill BEFORE INSERT OR UPDATE ON attempts
FOR EACH ROW EXECUTE FUNCTION refuse_pill();
"""


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def _refuse_the_pill(url: str) -> None:
    """The store's tables, created as the runtime creates them, then the refusing trigger."""
    store = open_store(url)
    store.close()
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///"):]) as db:
            for trigger in SQLITE_TRIGGERS:
                db.execute(trigger)
        return
    import psycopg

    base, _, schema = url.partition("?schema=")
    with psycopg.connect(base, autocommit=True) as db:
        db.execute(f'SET search_path TO "{schema}"')
        db.execute(PG_TRIGGER)


def _project(tmp_path: Path, server: ScriptedOpenAIServer, recovery: str) -> Path:
    return openai_project(tmp_path / "p", server.base_url, tools=(),
                          extra=f"recovery: {recovery}\n")


def _run_row(url: str, run_id: str) -> dict[str, Any]:
    store = open_store(url)
    try:
        row = store.get("runs", {"run_id": run_id})
        assert row is not None
        return row
    finally:
        store.close()


@pytest.fixture
def poisoned(durable_store_url: str, tmp_path: Path, server: ScriptedOpenAIServer,
             monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    _refuse_the_pill(durable_store_url)
    for _ in range(10):  # far more than the limit: the test counts how many were asked for
        server.script(chat_turn(f"the answer is {PILL}"))
    return durable_store_url


def test_i11_poison_run_ends_failed_after_the_limit_and_the_worker_stops_retrying(
    poisoned: str, tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    url = poisoned
    cli = Cli(url)
    config = _project(tmp_path, server, "{max_failures: 3, backoff_s: 0.05, max_backoff_s: 0.2}")

    first = cli("run", str(config), "answer", "--store", url, "--json")
    assert first.exit_code == 1
    error = json.loads(first.stdout)["error"]
    assert error["code"] == "RUN_CRASHED"
    assert "1 of 3 times" in error["message"] and REFUSED in error["message"]
    run_id = json.loads(cli("runs", "list", "--store", url, "--json").stdout)[0]["run_id"]
    row = _run_row(url, run_id)
    assert row["status"] == "running" and row["lease_expires_at"] < time.time()
    assert row["data"]["failures"]["count"] == 1
    assert REFUSED in row["data"]["failures"]["last"]["message"]
    assert len(server.model_requests) == 1

    counts = []
    for _ in range(2):
        time.sleep(0.3)  # past the back-off (the test's config: 0.05 s doubling, at most 0.2 s)
        swept = cli("worker", str(config), "--once", "--store", url, "--json")
        out = json.loads(swept.stdout)
        counts.append((swept.exit_code, out["left"], [r["status"] for r in out["resumed"]]))

    # the second try fails the same way (left: RUN_CRASHED), the third ends the run failed
    assert counts[0] == (0, [{"run_id": run_id, "reason": "RUN_CRASHED"}], [])
    assert counts[1] == (1, [], ["failed"])  # exit 1: a run it finished did not succeed
    row = _run_row(url, run_id)
    assert row["status"] == "failed"
    assert row["data"]["error"]["code"] == "RUN_FAILED_REPEATEDLY"
    assert REFUSED in row["data"]["error"]["message"]
    assert row["data"]["failures"]["count"] == 3
    # never more model requests than tries: one per failed try, none after the end
    assert len(server.model_requests) == 3

    time.sleep(0.3)
    again = cli.json("worker", str(config), "--once", "--store", url)
    assert again == {"resumed": [], "claimed": 0, "left": []}
    assert len(server.model_requests) == 3

    shown = cli("runs", "show", run_id, "--store", url)
    assert shown.exit_code == 0
    assert "RUN_FAILED_REPEATEDLY" in shown.stdout and "STORE_FAILED" in shown.stdout


def test_i11_poison_run_the_worker_backs_off_before_trying_again(
    poisoned: str, tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    url = poisoned
    cli = Cli(url)
    config = _project(tmp_path, server, "{backoff_s: 3600, max_backoff_s: 7200}")

    human = cli("run", str(config), "answer", "--store", url)
    assert human.exit_code == 1
    assert "error: RUN_CRASHED: the runtime failed while driving run" in human.stderr
    assert "Traceback" not in human.stderr + human.stdout
    run_id = json.loads(cli("runs", "list", "--store", url, "--json").stdout)[0]["run_id"]
    retry_at = _run_row(url, run_id)["data"]["failures"]["retry_at"]
    assert retry_at >= time.time() + 3000  # the first back-off: backoff_s

    swept = cli("worker", str(config), "--once", "--store", url)

    assert swept.exit_code == 0
    assert f"left run {run_id}: it failed lately" in swept.stderr and "BACKING_OFF" in swept.stderr
    assert len(server.model_requests) == 1  # nothing was asked while it backs off
    shown = cli("runs", "show", run_id, "--store", url)
    assert "failed 1 time(s) in a row (1 in all); a worker tries again after" in shown.stdout
    assert cli.json("runs", "show", run_id, "--store", url)["failures"]["count"] == 1
    # an explicit resume is the user's decision: it tries at once, and counts
    resumed = cli("runs", "resume", run_id, "--config", str(config), "--store", url, "--json")
    assert resumed.exit_code == 1
    assert "2 of 3 times" in json.loads(resumed.stdout)["error"]["message"]
    failures = _run_row(url, run_id)["data"]["failures"]
    assert failures["count"] == 2 and failures["retry_at"] >= time.time() + 7000  # doubled


def test_i11_recovery_config_is_checked(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")
    config = _project(tmp_path, server, "{max_failures: 0, backoff_s: 10, max_backoff_s: 1}")

    result = cli("run", str(config), "answer")

    assert result.exit_code == 2
    assert "recovery.max_failures" in result.stderr
