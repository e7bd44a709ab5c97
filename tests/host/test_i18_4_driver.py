"""Issue 18 acceptance 4 — the host does not starve its own runs: `agentloom serve` drives them
in a child `agentloom worker` process (host.driver.WorkerProcess), not on the event loop that
answers the requests. A real server on a real SQLite file, with `workers.poll_s: 3600` so only
the API's wake-up (SIGUSR1) can make the child look for a run; the child's pid is read from the
server's "worker process N started" log line. Waits are functional deadlines, never timings."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host import create_key
from agentloom.host.app import create_app
from agentloom.host.driver import InProcessDriver, WorkerProcess
from agentloom.store import open_store
from agentloom.store.holders import holder_id

from .support import make_key

DEADLINE_S = 60.0
ENDED = frozenset({"succeeded", "failed", "cancelled", "timed_out"})
NO_POLL = "workers: {poll_s: 3600}\n"
QUICK = "  - text: done\n"
SLOW = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [sleep, "3"], timeout_s: 60}
  - text: slept
"""
STARTED = re.compile(r"worker process (\d+) started")


def _project(folder: Path, turns: str, tools: str = "fs.read") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text("version: 1\nagents:\n  main:\n    model: {builtin: script, path: "
                      f"turns.yaml}}\n    tools: [{tools}]\n{NO_POLL}", encoding="utf-8")
    return config


@dataclass
class Served:
    """A running `agentloom serve`: its process, base URL, log file and a client."""

    proc: subprocess.Popen[bytes]
    base: str
    log: Path
    key: str

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def children(self) -> list[int]:
        """The worker pids the server said it started, in order."""
        return [int(pid) for pid in STARTED.findall(self.text())]

    def request(self, method: str, path: str, body: Any = None) -> Any:
        response = httpx2.request(method, self.base + path, json=body, timeout=30,
                                  headers={"Authorization": f"Bearer {self.key}"})
        assert response.status_code < 300, response.text
        return response.json()


@contextlib.contextmanager
def _serve(config: Path, url: str, *extra: str) -> Iterator[Served]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = config.parent / f"serve-{port}.log"
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "agentloom", "serve", str(config),
                                 "--store", url, "--port", str(port), *extra],
                                cwd=config.parent, env=env, stdout=sink,
                                stderr=subprocess.STDOUT)
    served = Served(proc, f"http://127.0.0.1:{port}", log, make_key(url, "alice", "acme"))
    try:
        _until(lambda: _healthy(served), "the server answers /health", served)
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _healthy(served: Served) -> bool:
    assert served.proc.poll() is None, served.text()
    with contextlib.suppress(httpx2.HTTPError):
        return httpx2.get(served.base + "/health", timeout=2).status_code == 200
    return False


def _until(check: Any, what: str, served: Served) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, f"never: {what}\n{served.text()}"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid and fields[0] != "Z":
                    found.append(int(entry.name))
    return found


def _listening(url: str, pid: int) -> bool:
    """The worker process ``pid`` has written its first heartbeat: its loop (and its SIGUSR1
    handler) is up, so a run queued from now on is found only if something wakes it."""
    store = open_store(url)
    try:
        return any(row["pid"] == pid and row["state"] == "live"
                   for row in store.query("workers"))
    finally:
        store.close()


def _row(url: str, run_id: str) -> dict[str, Any]:
    store = open_store(url)
    try:
        row = store.get("runs", {"run_id": run_id})
        assert row is not None
        return dict(row)
    finally:
        store.close()


def _ready_child(served: Served, url: str, after: int = 0) -> int:
    """The pid of the server's worker process started after the first ``after`` ones, once it
    listens."""
    _until(lambda: len(served.children()) > after, "a worker process starts", served)
    pid = served.children()[after]
    _until(lambda: _listening(url, pid), f"worker process {pid} listens", served)
    return pid


def _finish(served: Served, task: str) -> dict[str, Any]:
    """Queue a run through the API and wait until it ended."""
    run_id = served.request("POST", "/v1/runs", {"task": task})["run_id"]
    seen: dict[str, Any] = {}

    def ended() -> bool:
        seen.update(served.request("GET", f"/v1/runs/{run_id}"))
        return seen["status"] in ENDED

    _until(ended, f"run {run_id} ends", served)
    return seen


def test_i18_4_a_run_created_through_the_api_wakes_the_worker_process(tmp_path: Path) -> None:
    config = _project(tmp_path / "p", QUICK)
    url = f"sqlite:///{tmp_path / 'al.db'}"
    with _serve(config, url) as served:
        child = _ready_child(served, url)
        assert child in _children_of(served.proc.pid) and child != served.proc.pid
        run = _finish(served, "hello")  # with poll_s 3600, only the wake-up finds it
        assert run["status"] == "succeeded", run
        assert run["lease_owner"] == holder_id(child)  # the child drove it


def test_i18_4_a_killed_worker_process_is_replaced_and_later_runs_finish(
        tmp_path: Path) -> None:
    config = _project(tmp_path / "p", QUICK)
    url = f"sqlite:///{tmp_path / 'al.db'}"
    with _serve(config, url) as served:
        first = _ready_child(served, url)
        ready = httpx2.get(served.base + "/ready", timeout=30).json()
        assert ready["worker"] == {"driver": "process", "running": True, "pid": first,
                                   "started": 1, "last_exit": None, "next_start_in_s": None}
        os.kill(first, signal.SIGKILL)
        second = _ready_child(served, url, after=1)
        assert second != first and not _alive(first)
        assert f"worker process {first} exited unexpectedly (killed by SIGKILL)" in served.text()
        ready = httpx2.get(served.base + "/ready", timeout=30).json()
        assert (ready["status"], ready["worker"]["pid"], ready["worker"]["started"],
                ready["worker"]["last_exit"]) == ("ready", second, 2, "killed by SIGKILL")
        for n in range(2):
            run = _finish(served, f"after the kill {n}")
            assert run["status"] == "succeeded", run
            assert run["lease_owner"] == holder_id(second)


def test_i18_4_sigterm_stops_the_worker_process_and_gives_its_run_back(tmp_path: Path) -> None:
    config = _project(tmp_path / "p", SLOW, tools="exec")
    url = f"sqlite:///{tmp_path / 'al.db'}"
    with _serve(config, url) as served:
        child = _ready_child(served, url)
        run_id = served.request("POST", "/v1/runs", {"task": "sleep"})["run_id"]
        _until(lambda: any(o["capability"] == "exec" and o["attempts"]["items"] for o in
                           served.request("GET", f"/v1/runs/{run_id}/operations")["items"]),
               "the run's exec starts", served)
        served.proc.send_signal(signal.SIGTERM)
        code = served.proc.wait(timeout=DEADLINE_S)
        assert code in (0, -signal.SIGTERM), served.text()
    assert not _alive(child), "the worker process outlived the server"
    assert f"worker process {child} stopped" in served.text()
    row = _row(url, run_id)
    # its current step (the exec) committed, then the run went back to the queue
    assert row["status"] == "pending", row
    done = subprocess.run([sys.executable, "-m", "agentloom", "worker", str(config), "--store",
                           url, "--once"], cwd=config.parent, capture_output=True, text=True,
                          timeout=DEADLINE_S * 2)
    assert done.returncode == 0, done.stderr
    assert _row(url, run_id)["status"] == "succeeded"


def test_i18_4_the_worker_process_stops_by_itself_when_the_server_is_killed(
        tmp_path: Path) -> None:
    config = _project(tmp_path / "p", QUICK)
    url = f"sqlite:///{tmp_path / 'al.db'}"
    with _serve(config, url) as served:
        child = _ready_child(served, url)
        served.proc.kill()  # no lifespan, no SIGTERM to the child: it is orphaned
        served.proc.wait(timeout=DEADLINE_S)
        _until(lambda: not _alive(child), "the orphaned worker process exits", served)
        store = open_store(url)
        try:  # it stopped the graceful way: its row says so
            rows = [r for r in store.query("workers") if r["pid"] == child]
        finally:
            store.close()
        assert [r["state"] for r in rows] == ["stopped"]


def test_i18_4_no_execute_starts_no_worker_process(tmp_path: Path) -> None:
    config = _project(tmp_path / "p", QUICK)
    url = f"sqlite:///{tmp_path / 'al.db'}"
    with _serve(config, url, "--no-execute") as served:
        run = served.request("POST", "/v1/runs", {"task": "queued"})
        assert run["status"] == "pending"
        assert _children_of(served.proc.pid) == []
        assert served.children() == []
        assert served.request("GET", f"/v1/runs/{run['run_id']}")["status"] == "pending"


def test_i18_4_create_app_with_execute_drives_runs_on_its_own_loop(tmp_path: Path) -> None:
    """Embedders (and a memory store, which no child could open): ``create_app(runtime,
    execute=True)`` drives the runs with an in-process ``Worker`` while the app is up."""
    runtime = runtime_from_config(load_config(_project(tmp_path / "p", QUICK)),
                                  store="memory://")
    app = create_app(runtime, execute=True, concurrency=2)
    assert isinstance(app.state.worker, type(None))

    async def exercise() -> dict[str, Any]:
        _, key = await create_key(runtime.store, runtime.kernel.coordinator.commit,
                                  actor="alice", project="acme")
        headers = {"Authorization": f"Bearer {key}"}
        async with app.router.lifespan_context(app):
            assert isinstance(app.state.worker, InProcessDriver)
            async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                          base_url="http://host", headers=headers) as client:
                made = (await client.post("/v1/runs", json={"task": "in process"})).json()
                async with asyncio.timeout(DEADLINE_S):
                    while True:
                        run = (await client.get(f"/v1/runs/{made['run_id']}")).json()
                        if run["status"] in ENDED:
                            return dict(run)
                        await asyncio.sleep(0.05)

    run = asyncio.run(exercise())
    assert run["status"] == "succeeded", run
    assert run["lease_owner"] == runtime.kernel.worker_id  # this very process drove it


def test_i18_4_ready_is_503_while_the_worker_process_is_down_and_names_how_it_ended(
        tmp_path: Path) -> None:
    """Between a worker process's death and its successor the host cannot drive runs:
    ``/ready`` answers 503 ``WORKER_UNAVAILABLE`` naming how the last one ended and when the
    next starts, then ready again with the new process (a real child, the real app)."""
    config = _project(tmp_path / "p", QUICK)
    url = f"sqlite:///{tmp_path / 'al.db'}"
    runtime = runtime_from_config(load_config(config), store=url)
    driver = WorkerProcess(config, url)
    app = create_app(runtime, driver=driver)

    async def scenario() -> None:
        await driver.start()  # the ASGI transport runs no lifespan: started here
        app.state.worker = driver
        transport = httpx2.ASGITransport(app=app)
        try:
            async with httpx2.AsyncClient(transport=transport, base_url="http://host") as client:
                first = driver.pid
                assert first is not None
                assert (await client.get("/ready")).json()["worker"]["pid"] == first
                os.kill(first, signal.SIGKILL)
                deadline = time.monotonic() + DEADLINE_S
                while driver.state()["running"]:  # until the supervisor saw it die
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.005)
                down = await client.get("/ready")
                assert down.status_code == 503, down.text
                problem = down.json()
                assert problem["code"] == "WORKER_UNAVAILABLE"
                assert "the last one exited (killed by SIGKILL)" in problem["detail"]
                assert "another starts in" in problem["detail"]
                while not driver.state()["running"]:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.02)
                back = await client.get("/ready")
                assert back.status_code == 200
                assert back.json()["worker"]["pid"] not in (None, first)
        finally:
            await driver.stop()

    try:
        asyncio.run(scenario())
    finally:
        runtime.store.close()
