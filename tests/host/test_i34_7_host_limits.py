"""Issue #34 (7), the host's limits: `agentloom serve --max-body-bytes N` refuses a larger body
with a 413 problem before reading it — a Content-Length over N at once, a chunked body the
moment it passes N — on `/v1` and both A2A bindings (raw sockets: the rest of the body is never
sent, so a server that waited for it would never answer); an open SSE event stream ends once
its key is revoked; and the low findings: a deeply nested body, a 5,000-digit `Last-Event-ID`,
a lone surrogate or invalid UTF-8 in a task are 400 problems (no 500, no 409 naming the
database), an unknown `ListTasks` status filter is invalid params. A real `agentloom serve`
on 127.0.0.1; waits are functional deadlines, never timings."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.cli.support import write_project

from agentloom.cli import serve as serve_cli
from agentloom.errors import StoreError
from agentloom.host import revoke_key
from agentloom.host.problems import from_error
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store import open_store

from .support import Api, conforms, make_key, serving
from .test_i18_api import RUN, _api

LIMIT = 1000
DEADLINE_S = 60.0
A2A = {"A2A-Version": "1.0"}
SEND = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": True}}
BODIES = {"/v1/runs": b'{"task": "', "/a2a/jsonrpc": b'{"jsonrpc": "2.0", "id": 1, "params": "',
          "/a2a/rest/message:send": b'{"message": "'}


def _project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "p", "  - text: done\n", tools=["fs.read"])


def _raw(base: str, path: str, key: str, framing: bytes, body: bytes) -> httpx2.Response:
    """POST ``body`` to ``path`` with the ``framing`` header, over a socket left open (the
    body is never finished), and the answer the server gives before the connection closes."""
    host, port = base.removeprefix("http://").split(":")
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
            f"A2A-Version: 1.0\r\nContent-Type: application/json\r\n").encode()
    with socket.create_connection((host, int(port)), timeout=DEADLINE_S) as conn:
        conn.sendall(head + framing + b"\r\n" + body)
        received = b""
        while chunk := conn.recv(65536):  # the server closes it after the 413
            received += chunk
    header, _, content = received.partition(b"\r\n\r\n")
    status_line, *lines = header.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return httpx2.Response(int(status_line.split()[1]), headers=headers, content=content)


def _refused(response: httpx2.Response, *said: str) -> dict[str, Any]:
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["connection"] == "close"
    problem = response.json()
    assert problem["code"] == "BODY_TOO_LARGE" and problem["status"] == 413, problem
    assert all(s in problem["detail"] for s in said), problem
    return dict(problem)


def test_i34_7_serve_max_body_bytes_refuses_a_larger_body_before_reading_it(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    key = make_key(url, "alice", "acme")
    with serving(_project(tmp_path), url, "--no-execute", "--max-body-bytes", str(LIMIT)) as base:
        api = _api(base, key)
        for path, start in BODIES.items():
            # a Content-Length over the limit: answered with only the headers and a few bytes
            declared = _raw(base, path, key, b"Content-Length: 314572800\r\n", start)
            _refused(declared, "314572800 bytes", f"at most {LIMIT} bytes", "--max-body-bytes")
            # chunked: counted as it streams; refused once past the limit, the end never sent
            chunk = start + b"x" * LIMIT
            streamed = _raw(base, path, key, b"Transfer-Encoding: chunked\r\n",
                            b"%x\r\n%s\r\n" % (len(chunk), chunk))
            _refused(streamed, f"over {LIMIT} bytes")
            if path == "/v1/runs":
                conforms(api.doc, "POST", "/v1/runs", declared)
                conforms(api.doc, "POST", "/v1/runs", streamed)
        # within the limit everything is as before, on every route
        made = api.post("/v1/runs", body={"task": "small"})
        assert made.status_code == 201, made.text
        ok = httpx2.post(base + "/a2a/rest/message:send", json=SEND,
                         headers={**A2A, "Authorization": f"Bearer {key}"})
        assert ok.status_code == 200, ok.text
        assert len(api.get("/v1/runs").json()["items"]) == 2
    assert serve_cli.MAX_BODY_BYTES == 8388608  # the flag's default: 8 MiB


def _revoke(store_url: str, key: str) -> None:
    store = open_store(store_url)
    coordinator = CommitCoordinator(store)
    try:
        asyncio.run(revoke_key(store, coordinator.commit, key.split("_")[1]))
    finally:
        coordinator.close()
        store.close()


def test_i34_7_open_event_streams_end_once_their_key_is_revoked(tmp_path: Path) -> None:
    """The run's SSE events, and the A2A subscriptions to its task (both bindings)."""
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    key = make_key(url, "alice", "acme")
    other = make_key(url, "alice", "acme")  # the same principal's second key stays valid
    with serving(_project(tmp_path), url, "--no-execute") as base:
        api = _api(base, key)
        run_id = api.post("/v1/runs", body={"task": "queued, never driven"}).json()["run_id"]
        auth = {"Authorization": f"Bearer {key}", **A2A}
        opened = [("GET", f"{base}/v1/runs/{run_id}/events", None),
                  ("GET", f"{base}/a2a/rest/tasks/{run_id}:subscribe", None),
                  ("POST", f"{base}/a2a/jsonrpc", {"jsonrpc": "2.0", "id": 1,
                                                   "method": "SubscribeToTask",
                                                   "params": {"id": run_id}})]
        with contextlib.ExitStack() as streams:
            readers: list[tuple[threading.Event, list[str]]] = []
            for method, where, body in opened:
                stream = streams.enter_context(httpx2.stream(
                    method, where, json=body, headers=auth, timeout=DEADLINE_S))
                assert stream.status_code == 200, where  # open: the run waits in the queue
                ended, lines = threading.Event(), []
                readers.append((ended, lines))
                threading.Thread(target=_read, args=(stream, ended, lines), daemon=True).start()
            _revoke(url, key)
            for (ended, _), (_, where, _) in zip(readers, opened, strict=True):
                assert ended.wait(DEADLINE_S), f"the stream of a revoked key is still open: {where}"
        assert ": the API key of this stream was revoked" in readers[0][1]
        assert api.get("/v1/runs").status_code == 401
        assert _api(base, other).get(RUN, run_id=run_id).status_code == 200


def _read(stream: httpx2.Response, ended: threading.Event, lines: list[str]) -> None:
    lines.extend(stream.iter_lines())
    ended.set()


@dataclass
class Served:
    """One `agentloom serve --no-execute` for the low findings: a key, its client, a run."""

    base: str
    key: str
    api: Api
    run_id: str
    folder: Path

    def refused(self, raw: bytes, said: str) -> None:
        """``raw`` to both routes that take a body of JSON: a 400 problem saying ``said``,
        naming neither the store nor a path."""
        for route in ("/v1/runs", RUN + "/supplement"):
            bad = self.api.post(route, raw=raw, run_id=self.run_id)
            assert bad.status_code == 400, (raw[:40], bad.text)
            assert bad.headers["content-type"] == "application/problem+json"
            problem = bad.json()
            assert problem["code"] == "INVALID_REQUEST" and said in problem["detail"], problem
            assert "sqlite" not in bad.text and str(self.folder) not in bad.text
            assert "surrogates not allowed" not in bad.text
        assert len(self.api.get("/v1/runs").json()["items"]) == 1  # nothing was queued


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("i34_7_lows")
    url = f"sqlite:///{folder / 'agentloom.db'}"
    key = make_key(url, "alice", "acme")
    with serving(_project(folder), url, "--no-execute") as base:
        api = _api(base, key)
        run_id = api.post("/v1/runs", body={"task": "t"}).json()["run_id"]
        yield Served(base, key, api, run_id, folder)


def test_i34_7_a_deeply_nested_body_is_a_400_problem(served: Served) -> None:
    served.refused(b"[" * 100_000 + b"]" * 100_000, "levels deep")
    served.refused(b'{"task": "t", "x": ' + b"[" * 65 + b"]" * 65 + b"}", "64 levels deep")


def test_i34_7_a_5000_digit_last_event_id_is_a_400_problem(served: Served) -> None:
    auth = {"Authorization": f"Bearer {served.key}"}
    for last_id in (b"9" * 5000, b"\xb2", b"1" * 19):  # '\xb2' is '²': isdigit() says yes
        bad = httpx2.get(f"{served.base}/v1/runs/{served.run_id}/events",
                         headers={**auth, "Last-Event-ID": last_id}, timeout=DEADLINE_S)
        assert bad.status_code == 400, bad.text
        conforms(served.api.doc, "GET", RUN + "/events", bad)
        assert "Last-Event-ID" in bad.json()["detail"]


def test_i34_7_a_lone_surrogate_in_a_task_is_a_400_that_names_no_path(served: Served) -> None:
    served.refused(b'{"task": "a lone \\ud800 surrogate"}', "lone surrogate (U+D800)")
    served.refused(b'{"task": "t", "\\udfff": 1}', "lone surrogate (U+DFFF)")


def test_i34_7_an_invalid_utf8_task_body_is_a_clear_400(served: Served) -> None:
    served.refused(b'{"task": "\xed\xa0\x80 an encoded surrogate"}',
                   "not UTF-8 text: invalid continuation byte at byte 10")
    served.refused(b'{"task": "\xff"}', "not UTF-8 text: invalid start byte at byte 10")


def test_i34_7_list_tasks_with_an_unknown_status_is_invalid_params(served: Served) -> None:
    headers = {"Authorization": f"Bearer {served.key}", **A2A}
    for status in ("TASK_STATE_BOGUS", 99):
        rpc = httpx2.post(served.base + "/a2a/jsonrpc", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"status": status}})
        error = rpc.json()["error"]
        assert error["code"] == -32602 and "is not a task state" in error["message"], error
        rest = httpx2.get(served.base + "/a2a/rest/tasks", headers=headers,
                          params={"status": str(status)})
        assert rest.status_code == 400, rest.text
        assert "is not a task state" in rest.json()["error"]["message"]
    listed = httpx2.get(served.base + "/a2a/rest/tasks", headers=headers,
                        params={"status": "TASK_STATE_SUBMITTED"}).json()
    assert [t["id"] for t in listed["tasks"]] == [served.run_id]
    unfiltered = httpx2.post(served.base + "/a2a/jsonrpc", headers=headers, json={
        "jsonrpc": "2.0", "id": 2, "method": "ListTasks",
        "params": {"status": "TASK_STATE_UNSPECIFIED"}}).json()
    assert unfiltered["result"]["totalSize"] == 1


def test_i34_7_a_failed_commit_is_a_500_that_does_not_name_the_store() -> None:
    failed = from_error(StoreError("commit to sqlite:////srv/secret/agentloom.db failed: 'utf-8' "
                                   "codec can't encode character '\\ud800'"))
    assert (failed.status, failed.code) == (500, "INTERNAL_ERROR")
    assert "sqlite" not in json.dumps(failed.to_dict())
    held = from_error(StoreError("run r1 is held by a live lease", code="LEASE_HELD"))
    assert (held.status, held.code) == (409, "LEASE_HELD")  # a refusal keeps its code
