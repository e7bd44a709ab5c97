"""Issue 36 point 4 over HTTP: a run that waits for a person is not silent on its event stream
— `GET /v1/runs/{id}/events` sends ``run.waiting`` (the approval, the call, the question) while
it waits, then ``run.resumed`` (who answered, the decision, why) once the answer lets it go on,
then the rest of the run; and the API's ``diagnosis.next_step`` names the HTTP routes, never a
CLI command. A real `agentloom serve` on 127.0.0.1."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2

from .support import RUN, Api, hello_project, make_key, serving, sse, wait_status

STREAM_TIMEOUT_S = 120


def _project(tmp_path: Path) -> Path:
    return hello_project(tmp_path / "p", asking=True)


def test_i36_4_the_stream_sends_run_waiting_live_then_run_resumed_and_next_step_names_routes(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    with serving(_project(tmp_path), store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())
        run_id = api.post("/v1/runs", body={"task": "write"}).json()["run_id"]
        received: list[dict[str, Any]] = []
        run_while_waiting: dict[str, Any] = {}
        deadline = time.monotonic() + STREAM_TIMEOUT_S
        with httpx2.stream("GET", f"{base}/v1/runs/{run_id}/events", timeout=STREAM_TIMEOUT_S,
                           headers={"Authorization": f"Bearer {key}"}) as stream:
            lines: list[str] = []
            for line in stream.iter_lines():
                assert time.monotonic() < deadline, received
                lines.append(line)
                if line != "":
                    continue
                received += sse(iter(lines))
                lines = []
                last = received[-1] if received else None
                if last and last["event"] == "run.waiting" and not run_while_waiting:
                    # the stream open: what the API tells the client to do (the call waits
                    # from its commit; the run's own status follows as its worker parks it)
                    run_while_waiting = wait_status(api, run_id, {"waiting"})
                    api.post(RUN + "/operations/{operation_id}/approve", run_id=run_id,
                             operation_id=last["data"]["operation_id"], body={"reason": "fine"})
        events = [m["event"] for m in received]
        assert events[-1] == "run.finished" and received[-1]["data"]["status"] == "succeeded"
        assert events.index("run.waiting") < events.index("run.resumed") < len(events) - 1
        assert [int(m["id"]) for m in received] == list(range(1, len(received) + 1))

        waiting = received[events.index("run.waiting")]["data"]
        op_id = waiting["operation_id"]
        assert {k: waiting[k] for k in ("type", "run_id", "approval_id", "capability",
                                        "question", "deadline")} == {
            "type": "run.waiting", "run_id": run_id, "approval_id": op_id,
            "capability": "fs.write", "question": "Write it?", "deadline": None}
        resumed = received[events.index("run.resumed")]["data"]
        assert {k: resumed[k] for k in ("approval_id", "operation_id", "capability", "status",
                                        "decision", "actor", "reason")} == {
            "approval_id": op_id, "operation_id": op_id, "capability": "fs.write",
            "status": "approved", "decision": "approve", "actor": "alice", "reason": "fine"}
        after = events[events.index("run.resumed"):]
        assert "tool.call.completed" in after  # the call ran once the run went on

        next_step = run_while_waiting["diagnosis"]["next_step"]
        assert f"POST /v1/runs/{run_id}/operations/{op_id}/approve" in next_step, next_step
        assert "agentloom" not in next_step, next_step
