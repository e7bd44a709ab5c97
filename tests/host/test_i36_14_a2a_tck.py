"""Issue 36 point 14, the A2A half: what the A2A TCK checks, against ``agentloom serve`` with
``examples/a2a-tck`` (a real subprocess on 127.0.0.1, raw JSON-RPC and HTTP+JSON requests as
the kit sends them): a blocking ``SendMessage`` answers a task that still works once
``AGENTLOOM_A2A_WAIT_S`` passed; a message sent to a working task is in its ``history``;
``CancelTask`` ends it ``CANCELED``; ``ListTasks`` refuses a status that is no task state on
both bindings and answers an empty page with the page size it used (spec §6.5's examples)."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentloom.errors import ConfigError
from agentloom.host.a2a.handler import WAIT_S
from agentloom.host.a2a.routes import WAIT_ENV, blocking_wait_s

from .support import make_key, serving

ROOT = Path(__file__).resolve().parents[2]
A2A = {"A2A-Version": "1.0"}


class Rpc:
    """The kit's way of calling: JSON-RPC 2.0 POSTs, an HTTP+JSON GET."""

    def __init__(self, base: str, key: str) -> None:
        self.base = base
        self.http = httpx.Client(headers={**A2A, "Authorization": f"Bearer {key}"}, timeout=60)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.http.post(self.base + "/a2a/jsonrpc", json={
            "jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params})
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = self.call(method, params)
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    def send(self, text: str, **message: Any) -> dict[str, Any]:
        task: dict[str, Any] = self.result("SendMessage", {"message": {
            "messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}],
            **message}})["task"]
        return task


@pytest.fixture(scope="module")
def rpc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rpc]:
    folder = tmp_path_factory.mktemp("tck") / "a2a-tck"
    shutil.copytree(ROOT / "examples" / "a2a-tck", folder)
    store = f"sqlite:///{folder / 'tck.db'}"
    key = make_key(store, "tck", "tck")
    with pytest.MonkeyPatch.context() as env:
        env.setenv(WAIT_ENV, "1")
        with serving(folder / "agentloom.yaml", store, "-n", "4") as base:
            rpc = Rpc(base, key)
            yield rpc
            rpc.http.close()


def _state(rpc: Rpc, task_id: str, **params: Any) -> dict[str, Any]:
    return rpc.result("GetTask", {"id": task_id, **params})


def _working(rpc: Rpc, text: str) -> dict[str, Any]:
    """A new task of the example's agent, once it works (its exec call is running)."""
    task = rpc.send(text)
    deadline = time.monotonic() + 60
    while task["status"]["state"] != "TASK_STATE_WORKING":
        assert task["status"]["state"] == "TASK_STATE_SUBMITTED", task
        assert time.monotonic() < deadline, task
        time.sleep(0.2)
        task = _state(rpc, task["id"])
    return task


def test_i36_14_a_blocking_send_answers_a_still_working_task_once_the_wait_bound_passed(
        rpc: Rpc) -> None:
    started = time.monotonic()
    task = rpc.send("work on this")  # no returnImmediately: blocking, bounded by 1 s here
    assert time.monotonic() - started < 30
    assert task["status"]["state"] in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}, task
    assert _working(rpc, "and this")["status"]["state"] == "TASK_STATE_WORKING"


def test_i36_14_a_message_sent_to_a_working_task_is_in_its_history(rpc: Rpc) -> None:
    task = _working(rpc, "first message")
    again = rpc.send("a follow-up", taskId=task["id"])
    assert again["id"] == task["id"] and again["status"]["state"] == "TASK_STATE_WORKING"
    history = _state(rpc, task["id"])["history"]
    assert [m["parts"][0]["text"] for m in history] == ["first message", "a follow-up"]
    assert {m["role"] for m in history} == {"ROLE_USER"}
    assert {m["taskId"] for m in history} == {task["id"]}
    (last,) = _state(rpc, task["id"], historyLength=1)["history"]
    assert last["parts"][0]["text"] == "a follow-up"
    listed = rpc.result("ListTasks", {"contextId": task["contextId"]})["tasks"]
    assert [len(t["history"]) for t in listed] == [2]


def test_i36_14_cancel_ends_a_working_task_as_canceled(rpc: Rpc) -> None:
    task = _working(rpc, "cancel me")
    cancelled = rpc.result("CancelTask", {"id": task["id"]})
    assert cancelled["id"] == task["id"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED", cancelled
    again = rpc.call("CancelTask", {"id": task["id"]})
    assert again["error"]["code"] == -32002  # TaskNotCancelable: it ended


def test_i36_14_list_tasks_refuses_a_status_that_is_no_task_state_on_both_bindings(
        rpc: Rpc) -> None:
    for said in ("INVALID_STATUS", "working", 99):
        error = rpc.call("ListTasks", {"status": said})["error"]
        assert error["code"] == -32602 and "is not a task state" in error["message"], error
    answer = rpc.http.get(rpc.base + "/a2a/rest/tasks", params={"status": "INVALID_STATUS"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert "TASK_STATE_WORKING" in answer.json()["error"]["message"]
    known = rpc.result("ListTasks", {"status": "TASK_STATE_REJECTED"})
    assert known["tasks"] == [] and known["totalSize"] == 0


def test_i36_14_an_empty_list_answers_the_page_size_it_used(rpc: Rpc) -> None:
    """Spec §6.5's examples answer ``pageSize`` as asked (10 with one task), not the count."""
    nowhere = f"no-such-context-{uuid.uuid4()}"
    empty = rpc.result("ListTasks", {"contextId": nowhere})
    assert (empty["tasks"], empty["totalSize"], empty["pageSize"], empty["nextPageToken"]) == (
        [], 0, 50, "")
    assert rpc.result("ListTasks", {"contextId": nowhere, "pageSize": 10})["pageSize"] == 10


def test_i36_14_the_blocking_wait_bound_is_read_from_the_environment_and_checked() -> None:
    assert blocking_wait_s(None) == WAIT_S == blocking_wait_s(" ")
    assert blocking_wait_s("2.5") == 2.5
    for bad in ("soon", "0", "-1", "nan", "inf"):
        with pytest.raises(ConfigError, match=rf"^{WAIT_ENV}='{bad}' is not a number of "
                                               r"seconds > 0: set it to e\.g\. 2"):
            blocking_wait_s(bad)


def test_i36_14_serve_refuses_a_bad_wait_bound_at_start(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "a2a-tck"
    shutil.copytree(ROOT / "examples" / "a2a-tck", folder)
    monkeypatch.setenv(WAIT_ENV, "soon")
    with (pytest.raises(AssertionError, match=f"{WAIT_ENV}='soon' is not a number"),
          serving(folder / "agentloom.yaml", f"sqlite:///{tmp_path / 's.db'}")):
        pass
