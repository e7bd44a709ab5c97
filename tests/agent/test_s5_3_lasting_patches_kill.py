"""Items 1-3 of issue #14 under SIGKILL + resume (000 §5.3, §5.5): a model before-hook's edit
of the task, committed before the process was killed, is what the resumed process shows every
later request — rebuilt from the committed message records, the hook never run on it again —
and the protection of the user's input holds across the crash. SQLite and PostgreSQL.

Real parts: ``agentloom run`` in a real subprocess on the script model, SIGKILLed while a
sandboxed ``exec`` runs; ``agentloom runs resume`` in another; the real stores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.support import Cli, agentloom, write_project
from tests.cli.test_process import SLEEP_TURNS, run_killed_during_exec

from agentloom.pipeline.records import OperationState
from agentloom.store import open_store

SECRET = "hunter2"

HOOKS = '''\
import json, os

def redact(event):
    """Redact the pasted password, only on the first model call of the run; and try to drop
    the task on any later call (refused: the user's input is protected)."""
    messages = event["payload"]["messages"]
    log = os.path.join(os.path.dirname(__file__), "calls.jsonl")
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps([m.get("content") for m in messages]) + "\\n")
    if len(messages) == 1:
        text = messages[0]["content"]
        return {"decision": "allow", "payload_patch": [{"op": "replace",
                "path": "/payload/messages/0/content", "value": text.replace("hunter2", "***")}]}
    return {"decision": "allow", "payload_patch": [{"op": "remove", "path": "/payload/messages/0"}]}
'''

HOOK_CONFIG = """\
    hooks:
      - {hook_id: redact, timing: before, event: model, handler: {kind: python, ref: "lasting_hooks:redact"}}
"""


@pytest.mark.kill
def test_s5_3_an_edit_survives_sigkill_and_resume_and_the_task_stays_protected(
    tmp_path: Path, durable_store_url: str,
) -> None:
    cli = Cli(durable_store_url)
    project = tmp_path / "p"
    config = write_project(project, SLEEP_TURNS, tools=["exec"], extra=HOOK_CONFIG)
    (project / "lasting_hooks.py").write_text(HOOKS, encoding="utf-8")
    task = f"my password is {SECRET}; sleep a while"
    run_id = run_killed_during_exec(cli, config, tmp_path, task=task)

    resumed = agentloom("runs", "resume", run_id, "--config", str(config), "--store",
                        durable_store_url, "--json", cwd=tmp_path)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    calls = [json.loads(line) for line in
             (project / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(calls) == 2  # call 1 before the kill, call 2 after the resume: never re-run
    assert SECRET in calls[0][0] and SECRET not in json.dumps(calls[1])
    store = open_store(durable_store_url)
    try:
        rows = store.query("operations", {"run_id": run_id, "event_type": "model"},
                           order_by=("created_at",))
        states = [OperationState.from_row(r, store) for r in rows]
        assert len(states) == 2
        # the resumed loop proposed the redacted task itself; the removal was refused
        proposed = states[1].request["proposed_arguments"]["messages"]
        assert proposed[0] == {"role": "user", "content": task.replace(SECRET, "***"),
                               "id": "task"}
        assert states[1].payload["messages"][0]["content"] == task.replace(SECRET, "***")
        hook_rows = store.query("hook_invocations", {"operation_id": states[1].operation_id})
        assert [r["data"]["patch_error"]["code"] for r in hook_rows] == ["HOOK_PATCH_PROTECTED"]
        records = store.query("context_records", {"record_id": "msg:task"},
                              order_by=("revision",))
        assert [(r["revision"], r["data"]["source"]) for r in records] == [
            (1, "raw"), (2, "hook:redact")]
        assert SECRET in records[0]["data"]["content"]  # the raw version is kept
    finally:
        store.close()
