"""Issue #34 (LOW): a literal header value of a ``kind: http`` hook was stored raw in the run's
config snapshot (``runs.data.config.snapshot``), though docs/hooks.md says header values are
masked in what is recorded. Through the real CLI in a process of its own, on a real SQLite
file: the hook still sends the real values to a real server on 127.0.0.1, while every stored
copy keeps ``[redacted]`` for the literal and the ``${VAR}`` reference as written."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import agentloom, write_project

LITERAL = "sk-literal-header-value-4f1c9e"
FROM_ENV = "sk-from-the-environment-77ab2d"


@pytest.fixture
def policy_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    received: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.append(dict(self.headers))
            body = json.dumps({"decision": "allow"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def test_i34_http_hook_literal_header_is_masked_in_the_runs_config_snapshot(
    tmp_path: Path, policy_server: tuple[str, list[dict[str, str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = policy_server
    monkeypatch.setenv("I34_HOOK_TOKEN", FROM_ENV)
    config = write_project(
        tmp_path / "p", "  - tool_calls:\n      - name: fs_write\n"
        "        arguments: {path: a.txt, content: hi}\n  - expect: {role: tool}\n    text: done\n",
        tools=("fs.write",),
        extra="    hooks:\n      - hook_id: policy\n        timing: before\n"
              "        match: {capability: fs.write}\n"
              f"        handler: {{kind: http, url: \"{url}\", allow_private: true, headers: "
              f"{{X-Api-Key: {LITERAL}, Authorization: \"Bearer ${{I34_HOOK_TOKEN}}\"}}}}\n")
    db = tmp_path / "store.db"

    done = agentloom("run", str(config), "write a", "--store", f"sqlite:///{db}", "--json",
                     cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"
    (sent,) = received  # the hook ran, with the real values
    assert (sent["X-Api-Key"], sent["Authorization"]) == (LITERAL, f"Bearer {FROM_ENV}")
    with sqlite3.connect(db) as conn:
        (data,) = conn.execute("SELECT data FROM runs").fetchone()
        dump = "\n".join(conn.iterdump())
    snapshot = json.loads(data)["config"]["snapshot"]
    (hook,) = snapshot["agents"]["main"]["hooks"]
    assert hook["handler"]["headers"] == {"X-Api-Key": "[redacted]",
                                          "Authorization": "Bearer ${I34_HOOK_TOKEN}"}
    # no stored copy anywhere holds either value: not the snapshot, the hook's recorded
    # version, an event or a log row
    assert LITERAL not in dump and FROM_ENV not in dump
