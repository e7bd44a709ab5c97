"""Helpers for the host tests: a real `agentloom serve` process on a free port, API keys made
with `agentloom.host.create_key`, an SSE reader, and checking responses against the
server's own /openapi.json."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
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
from jsonschema import Draft202012Validator
from tests.cli.support import write_project

from agentloom.host import create_key
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store import open_store

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_key(store_url: str, actor: str, project: str) -> str:
    """A key for ``actor`` in ``project`` (the store is created when it does not exist)."""
    store = open_store(store_url)
    coordinator = CommitCoordinator(store)
    try:
        _, key = asyncio.run(create_key(store, coordinator.commit, actor=actor, project=project))
    finally:
        coordinator.close()
        store.close()
    return key


@contextlib.contextmanager
def serving(config: Path, store_url: str, *extra: str) -> Iterator[str]:
    """``agentloom serve CONFIG`` in a subprocess (cwd: the config's folder); yields its base
    URL once /health answers; SIGTERM (a graceful stop) at the end."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    log = (config.parent / f"serve-{port}.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentloom", "serve", str(config), "--store", store_url,
         "--port", str(port), *extra], cwd=config.parent, env=env, stdout=log,
        stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, (config.parent / f"serve-{port}.log").read_text()
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(base + "/health", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.1)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@dataclass
class Api:
    """A client for one principal's key that checks every response against /openapi.json."""

    base: str
    key: str | None
    doc: dict[str, Any]

    def call(self, method: str, template: str, *, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None, params: dict[str, Any] | None = None,
             **path: str) -> httpx2.Response:
        url = self.base + template.format(**path)
        sent = dict(headers or {})
        if self.key is not None:
            sent["Authorization"] = f"Bearer {self.key}"
        content = raw if raw is not None else (json.dumps(body).encode()
                                               if body is not None else None)
        if content is not None:
            sent.setdefault("Content-Type", "application/json")
        with httpx2.stream(method, url, content=content, headers=sent, params=params,
                           timeout=120) as response:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                return response  # a live stream is read by read_events, never here
            response.read()
        conforms(self.doc, method, template, response)
        return response

    def get(self, template: str, **kw: Any) -> httpx2.Response:
        return self.call("GET", template, **kw)

    def post(self, template: str, **kw: Any) -> httpx2.Response:
        return self.call("POST", template, **kw)


def conforms(doc: dict[str, Any], method: str, template: str,
             response: httpx2.Response) -> None:
    """The response is one the document declares for the route: its status, media type and
    (JSON) body schema."""
    operation = doc["paths"][template][method.lower()]
    declared = operation["responses"].get(str(response.status_code))
    assert declared is not None, (method, template, response.status_code, response.text)
    media = response.headers["content-type"].split(";")[0].strip()
    assert media in declared["content"], (media, list(declared["content"]))
    if media.endswith("json"):
        schema = {**declared["content"][media]["schema"], "components": doc["components"]}
        Draft202012Validator(schema).validate(response.json())


def sse(response_lines: Iterator[str]) -> list[dict[str, Any]]:
    """The messages of an SSE stream: ``id``, ``event`` and the JSON ``data``."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in response_lines:
        if line == "":
            if current:
                messages.append(current)
            current = {}
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            current[name] = json.loads(value) if name == "data" else value
    if current:
        messages.append(current)
    return messages


def read_events(api: Api, run_id: str, last_id: str | None = None) -> list[dict[str, Any]]:
    """The whole event stream of a run (it ends with the run's ``run.finished``)."""
    headers = {"Authorization": f"Bearer {api.key}"}
    if last_id is not None:
        headers["Last-Event-ID"] = last_id
    with httpx2.stream("GET", f"{api.base}/v1/runs/{run_id}/events", headers=headers,
                       timeout=120) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return sse(response.iter_lines())


def wait_status(api: Api, run_id: str, statuses: set[str], timeout_s: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        run = api.get("/v1/runs/{run_id}", run_id=run_id).json()
        if run["status"] in statuses:
            return dict(run)
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


# A project whose agent writes hello.txt; with ``asking`` a before-hook asks a person first.
WRITE = """\
  - tool_calls:
      - name: fs_write
        arguments: {path: hello.txt, content: hi there}
  - text: done
"""
GUARD = '''\
def ask_write(event):
    return {"decision": "ask", "reason": "Write it?"}
'''
ASKING = ("    hooks:\n      - {timing: before, event: tool, match: {capability: fs.write}, "
          "handler: {ref: \"guards:ask_write\"}}\n")
RUN = "/v1/runs/{run_id}"


def hello_project(folder: Path, *, asking: bool, extra: str = "") -> Path:
    """``folder``'s config (written): the agent writes hello.txt, asked about first if ``asking``."""
    config = write_project(folder, WRITE, tools=["fs.write"], extra=(ASKING if asking else "") + extra)
    (folder / "guards.py").write_text(GUARD, encoding="utf-8")
    return config
