"""Issue 18, the HTTP API core: `agentloom serve` runs a real uvicorn server; a principal's
key creates a run, waits for it, reads it, its operations, its events as SSE (Last-Event-ID
honoured) and its workspace files (beneath the root only); lists page newest first with an
opaque cursor; stop; approve / reject a call a hook asked about; problem details with the
CLI's codes. Every response is checked against the server's /openapi.json."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2

from .support import RUN, Api, hello_project, make_key, read_events, serving, wait_status


def _project(tmp_path: Path, *, asking: bool = False) -> Path:
    return hello_project(tmp_path / "p", asking=asking, extra="workspace: {keep: true}\n")


def _api(base: str, key: str | None) -> Api:
    doc = httpx2.get(base + "/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    return Api(base, key, doc)


def test_i18_1_a_run_created_over_http_shows_its_operations_events_and_files(
        tmp_path: Path, durable_store_url: str) -> None:
    config = _project(tmp_path)
    key = make_key(durable_store_url, "alice", "acme")
    with serving(config, durable_store_url) as base:
        api = _api(base, key)
        created = api.post("/v1/runs", body={"task": "write the file", "wait": True})
        assert created.status_code == 201
        run = created.json()
        assert (run["status"], run["output"]) == ("succeeded", "done")
        assert (run["actor"], run["project"]) == ("alice", "acme")
        assert "operations" not in run and run["diagnosis"] is None
        run_id = run["run_id"]
        assert api.get(RUN, run_id=run_id).json() == run

        ops = api.get(RUN + "/operations", run_id=run_id).json()["items"]
        (write,) = [o for o in ops if o["capability"] == "fs.write"]
        assert write["status"] == "succeeded" and write["attempts"]["count"] == 1
        assert write["executed_arguments"] == write["proposed_arguments"] == {
            "path": "hello.txt", "content": "hi there"}
        assert [o["kind"] for o in ops] == ["model", "tool", "model"]

        events = read_events(api, run_id)
        assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
        assert events[0]["event"] == "run.started" and events[-1]["event"] == "run.finished"
        assert events[-1]["data"]["status"] == "succeeded"
        assert all(e["data"]["type"] == e["event"] and e["data"]["run_id"] == run_id
                   for e in events)
        assert "tool.call.completed" in [e["event"] for e in events]
        again = read_events(api, run_id, last_id=str(len(events) - 2))
        assert again == events[-2:]

        files = api.get(RUN + "/workspace", run_id=run_id).json()["files"]
        assert [f["path"] for f in files] == ["hello.txt"] and files[0]["size"] == 8
        body = api.get(RUN + "/workspace/{path}", run_id=run_id, path="hello.txt")
        assert body.status_code == 200 and body.content == b"hi there"
        up = "%2E%2E/" * 7  # work → run → invocations → agent → agents → root → workspaces
        folder = Path(events[-1]["data"]["workspace"])
        above = Path(os.path.normpath(folder.joinpath(*[".."] * 7)))
        (above / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
        assert (folder.joinpath(*[".."] * 7, "secret.txt")).read_text() == "TOP-SECRET"
        for hostile in (up + "secret.txt", "%2Fetc%2Fpasswd", up.replace("/", "%2F") + "secret.txt",
                        "..%2F..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd", "missing.txt",
                        ".locks/x"):
            refused = api.get(RUN + "/workspace/{path}", run_id=run_id, path=hostile)
            assert refused.status_code in (400, 404), (hostile, refused.text)
            assert refused.headers["content-type"] == "application/problem+json"
            assert b"TOP-SECRET" not in refused.content and b"root:" not in refused.content


def test_i18_1_lists_page_newest_first_and_a_stop_cancels_a_queued_run(
        tmp_path: Path, durable_store_url: str) -> None:
    config = _project(tmp_path)
    key = make_key(durable_store_url, "alice", "acme")
    with serving(config, durable_store_url, "--no-execute") as base:  # runs stay queued
        api = _api(base, key)
        made = [api.post("/v1/runs", body={"task": f"task {i}", "priority": i}).json()
                for i in range(5)]
        assert {m["status"] for m in made} == {"pending"}
        assert made[0]["diagnosis"]["waiting_for"]["kind"] == "queue"
        seen, cursor, pages = [], None, 0
        while True:
            params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
            page = api.get("/v1/runs", params=params).json()
            seen += [r["run_id"] for r in page["items"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert pages == 3 and seen == [m["run_id"] for m in reversed(made)]
        assert api.get("/v1/runs", params={"status": "succeeded"}).json()["items"] == []
        for bad in ({"cursor": "not-a-cursor"}, {"limit": "0"}, {"status": "done"}):
            refused = api.get("/v1/runs", params=bad)
            assert refused.status_code == 400, bad
            assert refused.json()["code"] in ("INVALID_CURSOR", "INVALID_REQUEST")
            assert next(iter(bad)) in refused.json()["detail"]

        stopped = api.post(RUN + "/stop", run_id=made[0]["run_id"], body={"reason": "no"})
        assert stopped.status_code == 202 and stopped.json()["status"] == "cancelled"
        shown = api.get(RUN, run_id=made[0]["run_id"]).json()
        assert shown["status"] == "cancelled" and "no" in shown["error"]["message"]
        late = api.post(RUN + "/supplement", run_id=made[0]["run_id"], body={"text": "more"})
        assert late.status_code == 409 and late.json()["code"] == "RUN_NOT_RUNNING"
        events = read_events(api, made[0]["run_id"])
        assert events[-1]["event"] == "run.finished"
        assert events[-1]["data"]["status"] == "cancelled"


def test_i18_1_a_call_a_hook_asks_about_is_approved_or_rejected_over_http(
        tmp_path: Path, durable_store_url: str) -> None:
    config = _project(tmp_path, asking=True)
    key = make_key(durable_store_url, "alice", "acme")
    with serving(config, durable_store_url) as base:
        api = _api(base, key)
        waiting = api.post("/v1/runs", body={"task": "write", "wait": True}).json()
        assert waiting["status"] == "waiting"
        (asked,) = waiting["diagnosis"]["waiting_for"]["approvals"]
        assert asked["question"] == "Write it?" and asked["capability"] == "fs.write"
        op = asked["operation_id"]
        with ThreadPoolExecutor(1) as pool:  # a subscriber follows the waiting run live
            live = pool.submit(read_events, api, waiting["run_id"])
            time.sleep(1)
            assert not live.done()
            answered = api.post(RUN + "/operations/{operation_id}/approve",
                                run_id=waiting["run_id"], operation_id=op,
                                body={"reason": "ok"})
            streamed = live.result(timeout=120)
        assert streamed[-1]["event"] == "run.finished"
        assert streamed[-1]["data"]["status"] == "succeeded"
        assert [int(e["id"]) for e in streamed] == list(range(1, len(streamed) + 1))
        assert answered.status_code == 200
        assert (answered.json()["status"], answered.json()["actor"]) == ("approved", "alice")
        twice = api.post(RUN + "/operations/{operation_id}/reject", run_id=waiting["run_id"],
                         operation_id=op)
        assert twice.status_code == 409
        assert twice.json()["code"] == "APPROVAL_ALREADY_ANSWERED"
        done = wait_status(api, waiting["run_id"], {"succeeded", "failed"})
        assert done["status"] == "succeeded"
        files = api.get(RUN + "/workspace", run_id=waiting["run_id"]).json()["files"]
        assert [f["path"] for f in files] == ["hello.txt"]
        unknown = api.post(RUN + "/operations/{operation_id}/approve",
                           run_id=waiting["run_id"], operation_id="no-such-op")
        assert unknown.status_code == 404 and unknown.json()["code"] == "APPROVAL_NOT_FOUND"

        second = api.post("/v1/runs", body={"task": "write", "wait": True}).json()
        (asked,) = second["diagnosis"]["waiting_for"]["approvals"]
        api.post(RUN + "/operations/{operation_id}/reject", run_id=second["run_id"],
                 operation_id=asked["operation_id"], body={"reason": "not today"})
        assert wait_status(api, second["run_id"], {"succeeded", "failed"})["status"] == \
            "succeeded"
        ops = api.get(RUN + "/operations", run_id=second["run_id"]).json()["items"]
        (write,) = [o for o in ops if o["capability"] == "fs.write"]
        assert write["outcome"] == "denied_before_execution" and "not today" in write["reason"]
        assert api.get(RUN + "/workspace", run_id=second["run_id"]).json()["files"] == []


def test_i18_1_errors_are_problem_details_with_the_cli_codes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    config = _project(tmp_path)
    key = make_key(url, "alice", "acme")
    with serving(config, url, "--no-execute") as base:
        api = _api(base, key)
        for who in (None, "Bearer alk_0000000000000000_" + "x" * 43, f"Basic {key}"):
            anon = Api(base, None, api.doc)
            headers = {"Authorization": who} if who else None
            refused = anon.get("/v1/runs", headers=headers)
            assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHENTICATED"
            assert refused.headers["www-authenticate"] == "Bearer"
            assert refused.headers["content-type"] == "application/problem+json"
        assert httpx2.get(base + "/health").json() == {"status": "ok"}
        # --no-execute: this process drives no run, so readiness is the store's alone
        assert httpx2.get(base + "/ready").json() == {"status": "ready", "worker": None}

        cases = [(b"{not json", "JSON"), (b"[1]", "object"), (b"{}", "'task'"),
                 (b'{"task": 3}', "'task'"), (b'{"task": "t", "wait": "yes"}', "'wait'"),
                 (b'{"task": "t", "priority": 1.5}', "'priority'"),
                 (b'{"task": "t", "priority": 99999999999999999999}', "'priority'"),
                 (b'{"task": "t", "agent": "nobody"}', "'agent'")]
        for raw, named in cases:
            bad = api.post("/v1/runs", raw=raw)
            assert bad.status_code == 400, raw
            problem = bad.json()
            assert problem["code"] == "INVALID_REQUEST" and named in problem["detail"], problem
            assert problem["status"] == 400 and problem["title"] == "Bad Request"
        missing = api.get(RUN, run_id="nope")
        assert missing.status_code == 404 and missing.json()["code"] == "RUN_NOT_FOUND"
        run_id = api.post("/v1/runs", body={"task": "t"}).json()["run_id"]
        no_text = api.post(RUN + "/supplement", run_id=run_id, body={})
        assert no_text.status_code == 400 and "'text'" in no_text.json()["detail"]
        no_route = httpx2.get(base + "/v1/nothing", headers={"Authorization": f"Bearer {key}"})
        assert no_route.status_code == 404 and no_route.json()["code"] == "NOT_FOUND"
        bad_id = httpx2.get(f"{base}/v1/runs/{run_id}/events",
                            headers={"Authorization": f"Bearer {key}", "Last-Event-ID": "x"})
        assert bad_id.status_code == 400 and "Last-Event-ID" in bad_id.json()["detail"]
