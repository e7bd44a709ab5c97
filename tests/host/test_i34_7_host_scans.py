"""Issue #34 (7), the event loop never blocks on a scan: listing a run's workspace walks the
folder in a worker thread (a walk held on an Event leaves `/health` answering); `GET /v1/runs`
and A2A `ListTasks` read the store in a worker thread and, for a page, read whole (decode)
only the page's runs — counted on the store, on memory, SQLite and PostgreSQL; the default
body limit (8 MiB) refuses a larger Content-Length without a call to ``receive``. The app runs
in process (uvicorn on 127.0.0.1 in a thread, or ASGI) so the scans can be watched; waits are
functional deadlines, never timings."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from tests.cli.support import write_project

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host import create_key, workspace
from agentloom.host.app import create_app
from agentloom.refs import Principal

from .support import WRITE, free_port, make_key

DEADLINE_S = 60.0
RUNS = 6
A2A = {"A2A-Version": "1.0"}


def _on_loop() -> bool:
    """Whether the calling thread runs an event loop (a scan must never)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextlib.contextmanager
def _uvicorn(app: Starlette) -> Iterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 in a thread of this process (its lifespan run);
    yields the base URL once it listens."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(),
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + DEADLINE_S
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(DEADLINE_S)


def test_i34_7_a_workspace_listing_walks_in_a_worker_thread_while_health_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    key = make_key(url, "alice", "acme")
    config = write_project(tmp_path / "p", WRITE, tools=["fs.write"],
                           extra="workspace: {keep: true}\n")
    app = create_app(runtime_from_config(load_config(config), store=url), execute=True)
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []
    listing = workspace._listing

    def held(folder: Path) -> list[dict[str, Any]]:
        seen.append(_on_loop())
        entered.set()
        release.wait(DEADLINE_S)  # a huge folder: the walk takes as long as the test says
        return listing(folder)

    monkeypatch.setattr(workspace, "_listing", held)
    auth = {"Authorization": f"Bearer {key}"}
    with _uvicorn(app) as base:
        run = httpx2.post(base + "/v1/runs", json={"task": "write", "wait": True}, headers=auth,
                          timeout=DEADLINE_S).json()
        assert run["status"] == "succeeded", run
        answers: list[httpx2.Response] = []
        lister = threading.Thread(target=lambda: answers.append(httpx2.get(
            f"{base}/v1/runs/{run['run_id']}/workspace", headers=auth, timeout=DEADLINE_S)))
        lister.start()
        try:
            assert entered.wait(DEADLINE_S), "the listing never started"
            health = httpx2.get(base + "/health", timeout=DEADLINE_S / 4)
            assert health.status_code == 200  # answered while the walk is held
            mine = httpx2.get(base + "/v1/runs", headers=auth, timeout=DEADLINE_S / 4)
            assert [r["run_id"] for r in mine.json()["items"]] == [run["run_id"]]
        finally:
            release.set()
            lister.join(DEADLINE_S)
    assert seen == [False]  # the walk ran where no event loop runs
    assert answers[0].status_code == 200
    assert [f["path"] for f in answers[0].json()["files"]] == ["hello.txt"]


async def _runs(runtime: Any, principal: Principal, count: int) -> list[str]:
    return [await runtime.submit(f"task {i}: " + "x" * 50_000, agent="main", principal=principal)
            for i in range(count)]


class _Reads:
    """Counts what the app reads of the ``runs`` table: whole rows (their ``data`` decoded),
    and, for each scan (a query; not a lookup by id), whether it ran on an event loop."""

    def __init__(self, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.whole = 0
        self.scans_on_loop: list[bool] = []
        inside = threading.local()  # a SQL store's ``get`` is a ``query`` of one row
        query, get = store.query, store.get

        def counted_query(table: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            rows: list[dict[str, Any]] = query(table, *args, **kwargs)
            if table == "runs" and not getattr(inside, "get", False):
                self.scans_on_loop.append(_on_loop())
                self.whole += sum(1 for r in rows if "data" in r)
            return rows

        def counted_get(table: str, key: Any) -> dict[str, Any] | None:
            inside.get = True
            try:
                row: dict[str, Any] | None = get(table, key)
            finally:
                inside.get = False
            if table == "runs" and row is not None:
                self.whole += 1
            return row

        monkeypatch.setattr(store, "query", counted_query)
        monkeypatch.setattr(store, "get", counted_get)


def test_i34_7_list_tasks_reads_whole_only_the_page_and_never_on_the_loop(
        tmp_path: Path, store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_project(tmp_path / "p", "  - text: done\n", tools=["fs.read"])
    runtime = runtime_from_config(load_config(config), store=store_url)
    app = create_app(runtime, execute=False)

    async def scenario() -> None:
        commit = runtime.kernel.coordinator.commit
        _, key = await create_key(runtime.store, commit, actor="alice", project="acme")
        ids = await _runs(runtime, Principal(actor="alice", project="acme"), RUNS)
        await _runs(runtime, Principal(actor="bob", project="acme"), 2)
        reads = _Reads(runtime.store, monkeypatch)
        headers = {"Authorization": f"Bearer {key}", **A2A}
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                      base_url="http://host", headers=headers) as client:
            seen: list[str] = []
            token = ""
            while True:  # every page of one: each reads one run whole
                reads.whole = 0
                answer = (await client.post("/a2a/jsonrpc", json={
                    "jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                    "params": {"pageSize": 1, "pageToken": token}})).json()["result"]
                assert answer["totalSize"] == RUNS and len(answer["tasks"]) == 1, answer
                assert reads.whole == 1, reads.whole
                seen.append(answer["tasks"][0]["id"])
                token = answer["nextPageToken"]
                if not token:
                    break
            assert seen == list(reversed(ids))  # the latest change first, each once
            rest = (await client.get("/a2a/rest/tasks", params={
                "pageSize": "2", "status": "TASK_STATE_SUBMITTED"})).json()
            assert rest["totalSize"] == RUNS and len(rest["tasks"]) == 2
            none = (await client.get("/a2a/rest/tasks", params={
                "status": "TASK_STATE_COMPLETED"})).json()
            assert none["totalSize"] == 0 and none.get("tasks", []) == []

            reads.whole = 0
            page = (await client.get("/v1/runs", params={"limit": "2"})).json()
            assert [r["run_id"] for r in page["items"]] == list(reversed(ids))[:2]
            assert reads.whole == 2, reads.whole  # the page's runs only
            rest_of = (await client.get("/v1/runs", params={"cursor": page["next_cursor"]}))
            assert [r["run_id"] for r in rest_of.json()["items"]] == list(reversed(ids))[2:]
        assert reads.scans_on_loop and not any(reads.scans_on_loop)  # all in worker threads

    try:
        asyncio.run(scenario())
    finally:
        asyncio.run(runtime.aclose())


def test_i34_7_the_default_body_limit_refuses_a_larger_content_length_unread(
        tmp_path: Path) -> None:
    config = write_project(tmp_path / "p", "  - text: done\n", tools=["fs.read"])
    runtime = runtime_from_config(load_config(config), store="memory://")
    app = create_app(runtime, execute=False)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body was read")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def call(path: str, length: int) -> None:
        await app({"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                   "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
                   "root_path": "", "query_string": b"", "server": ("127.0.0.1", 80),
                   "client": ("127.0.0.1", 1), "headers": [
                       (b"content-length", str(length).encode()),
                       (b"content-type", b"application/json")]}, receive, send)

    try:
        for path in ("/v1/runs", "/a2a/jsonrpc", "/a2a/rest/message:send"):
            sent.clear()
            asyncio.run(call(path, 8 * 1024 * 1024 + 1))
            assert sent[0]["status"] == 413, (path, sent)
            assert b"BODY_TOO_LARGE" in sent[1]["body"] and b"8388609 bytes" in sent[1]["body"]
    finally:
        asyncio.run(runtime.aclose())
