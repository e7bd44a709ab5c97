"""Issue 36 point 3 over HTTP and on the page: `GET /v1/runs/{id}/operations` gives each call a
hook asked a person about its ``approval`` — who answered (the API key's actor), when, the
decision and why — checked against the server's /openapi.json; the run inspector shows it
beside the call in the timeline and on the call's page, in a real browser (Chromium; the test
skips with one line when no browser can be started, as the issue 18 inspector test does)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2

from .support import RUN, Api, hello_project, make_key, serving, wait_status
from .test_i18_3_ui import _playwright, browser, keyed_store

__all__ = ["browser", "keyed_store"]  # fixtures shared with the issue 18 inspector test

TIMEOUT_MS = 60_000


def _project(tmp_path: Path) -> Path:
    return hello_project(tmp_path / "p", asking=True)


def _write_call(api: Api, run_id: str) -> dict[str, Any]:
    items = api.get(RUN + "/operations", run_id=run_id).json()["items"]
    (call,) = [o for o in items if o["capability"] == "fs.write"]
    assert all(o["approval"] is None for o in items if o is not call)  # nobody asked
    return dict(call)


def _waiting(api: Api) -> tuple[str, str]:
    run = api.post("/v1/runs", body={"task": "write", "wait": True}).json()
    assert run["status"] == "waiting", run
    (asked,) = run["diagnosis"]["waiting_for"]["approvals"]
    return run["run_id"], asked["operation_id"]


def test_i36_3_the_operations_route_gives_who_answered_when_the_decision_and_why(
        tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "acme")
    with serving(_project(tmp_path), store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())  # checks every answer
        run_id, op_id = _waiting(api)
        pending = _write_call(api, run_id)["approval"]
        assert (pending["approval_id"], pending["status"], pending["question"]) == (
            op_id, "pending", "Write it?")
        assert (pending["decision"], pending["actor"], pending["answered_at"]) == (None, None, None)

        before = time.time()
        api.post(RUN + "/operations/{operation_id}/reject", run_id=run_id, operation_id=op_id,
                 body={"reason": "not in that folder"})
        assert wait_status(api, run_id, {"succeeded", "failed"})["status"] == "succeeded"
        call = _write_call(api, run_id)
        assert call["status"] == "denied"
        approval = call["approval"]
        assert {k: approval[k] for k in ("status", "decision", "actor", "reason")} == {
            "status": "rejected", "decision": "deny", "actor": "alice",
            "reason": "not in that folder"}
        assert before <= approval["answered_at"] <= time.time()
        assert approval["summary"].startswith("rejected by alice at ")


def test_i36_3_the_page_shows_the_answer_beside_the_call_it_answered(
        tmp_path: Path, keyed_store: tuple[str, str], browser: Any) -> None:
    expect = _playwright().expect
    expect.set_options(timeout=TIMEOUT_MS)
    store, key = keyed_store  # alice's key in acme, made before the browser's event loop runs
    with serving(_project(tmp_path), store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(base + "/ui")
        page.get_by_label("API key").fill(key)
        page.get_by_role("button", name="Open").click()

        run_id, op_id = _waiting(api)  # approved from the page
        page.goto(f"{base}/ui/#/runs/{run_id}")
        expect(page.get_by_test_id("run-status")).to_have_text("waiting")
        page.get_by_test_id("approval").get_by_role("button", name="Approve").click()
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        row = page.locator(f'tr[data-operation-id="{op_id}"]')
        answer = row.get_by_test_id("approval-answer")
        expect(answer).to_contain_text("approved by alice at ")
        expect(answer).to_contain_text("(reason: approved in the run inspector)")

        row.get_by_role("link", name="fs.write").click()
        detail = page.get_by_test_id("approval-detail")
        expect(detail).to_contain_text("approved by alice at ")
        expect(detail).to_contain_text("Write it?")
        expect(detail).to_contain_text("approved in the run inspector")

        rejected, rejected_op = _waiting(api)  # rejected over HTTP, seen on the page
        api.post(RUN + "/operations/{operation_id}/reject", run_id=rejected,
                 operation_id=rejected_op, body={"reason": "<b id='pwned'>no</b>"})
        page.goto(f"{base}/ui/#/runs/{rejected}")
        expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
        answer = page.locator(f'tr[data-operation-id="{rejected_op}"]').get_by_test_id(
            "approval-answer")
        expect(answer).to_contain_text("rejected by alice at ")
        expect(answer).to_contain_text("(reason: <b id='pwned'>no</b>)")  # as text
        assert page.locator("#pwned").count() == 0
