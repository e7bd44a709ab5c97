"""Issue 36, point 8 over HTTP: ``POST /v1/runs`` with ``"stream": true`` answers with the run's
live events as Server-Sent Events, the model's text arriving as ``model.delta`` events while the
model writes, before the call's and the run's end; without it, no ``model.delta`` anywhere.

A real ``agentloom serve`` on 127.0.0.1; the model is the scripted OpenAI-compatible server,
which pauses before each of the answer's last two pieces. Each SSE message is timed as it is
read: the first piece must come a pause before the call ends.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from tests.cli.support import SERVER_KEY_ENV, openai_project, write_project

from agentloom.testing.openai_server import (
    Done,
    ScriptedOpenAIServer,
    Stall,
    Step,
    chat_finish,
    chat_role,
    chat_text,
    chat_usage,
)

from .support import Api, conforms, make_key, read_events, serving

PAUSE_S = 1.0
PIECES = ("First piece, ", "second piece, ", "last piece.")


def _turn() -> list[Step]:
    return [chat_role(), chat_text(PIECES[0]), Stall(PAUSE_S), chat_text(PIECES[1]),
            Stall(PAUSE_S), chat_text(PIECES[2]), chat_finish(), chat_usage(12, 6), Done()]


def _streamed_create(api: Api, body: dict[str, Any]) -> tuple[httpx2.Headers,
                                                               list[tuple[float, dict[str, Any]]]]:
    """``POST /v1/runs`` read as a stream: each message with the time it was read."""
    messages: list[tuple[float, dict[str, Any]]] = []
    with httpx2.stream("POST", api.base + "/v1/runs", content=json.dumps(body).encode(),
                       headers={"Authorization": f"Bearer {api.key}",
                                "Content-Type": "application/json"}, timeout=120) as response:
        assert response.status_code == 201, response.read()
        conforms(api.doc, "POST", "/v1/runs", response)
        current: dict[str, Any] = {}
        for line in response.iter_lines():
            if line == "":
                if current:
                    messages.append((time.monotonic(), current))
                current = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                current[name] = json.loads(value) if name == "data" else value
        return response.headers, messages


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")  # the serve process inherits it
    with ScriptedOpenAIServer() as srv:
        yield srv


def test_i36_8_post_runs_with_stream_sends_model_delta_events_before_the_end(
    tmp_path: Path, server: ScriptedOpenAIServer,
) -> None:
    config = openai_project(tmp_path / "p", server.base_url, tools=("fs.read",))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "demo")
    server.script(_turn(), _turn())
    with serving(config, store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())

        headers, timed = _streamed_create(api, {"task": "say it", "stream": True})

        messages = [m for _, m in timed]
        types = [m["event"] for m in messages]
        assert types[0] == "run.started" and types[-1] == "run.finished", types
        run_id = messages[0]["data"]["run_id"]
        assert headers["location"] == f"/v1/runs/{run_id}"
        assert [int(m["id"]) for m in messages] == list(range(1, len(messages) + 1))
        deltas = [m["data"] for m in messages if m["event"] == "model.delta"]
        assert [d["text"] for d in deltas] == list(PIECES)
        assert {(d["kind"], d["role"], d["capability"], d["attempt"]) for d in deltas} == \
            {("text", "main", "model.main", 1)}
        completed = types.index("model.call.completed")
        assert types.index("model.delta") < completed and types.count("model.delta") == 3
        assert max(i for i, t in enumerate(types) if t == "model.delta") < completed
        first_at = next(at for at, m in timed if m["event"] == "model.delta")
        completed_at = timed[completed][0]
        assert completed_at - first_at > PAUSE_S, (first_at, completed_at)  # read as it came
        assert messages[-1]["data"]["status"] == "succeeded"
        assert messages[-1]["data"]["output"] == "".join(PIECES)

        # the record: the complete answer; the stored stream never has a delta
        run = api.get("/v1/runs/{run_id}", run_id=run_id).json()
        assert (run["status"], run["output"]) == ("succeeded", "".join(PIECES))
        assert "model.delta" not in [e["event"] for e in read_events(api, run_id)]

        # without "stream": the JSON answer, and no delta on the run's event stream
        made = api.post("/v1/runs", body={"task": "say it", "wait": True})
        assert made.status_code == 201 and made.json()["status"] == "succeeded"
        plain = read_events(api, made.json()["run_id"])
        assert plain[-1]["event"] == "run.finished"
        assert "model.delta" not in [e["event"] for e in plain]


def test_i36_8_stream_with_wait_is_refused_naming_both_fields(tmp_path: Path) -> None:
    config = write_project(tmp_path / "p", "  - text: never reached\n", tools=("fs.read",))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    key = make_key(store, "alice", "demo")
    with serving(config, store) as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())

        refused = api.post("/v1/runs", body={"task": "x", "stream": True, "wait": True})
        not_a_flag = api.post("/v1/runs", body={"task": "x", "stream": "yes"})
    with serving(config, store, "--no-execute") as base:
        api = Api(base, key, httpx2.get(base + "/openapi.json").json())
        queue_only = api.post("/v1/runs", body={"task": "x", "stream": True})

    assert refused.status_code == 400
    assert "'stream'" in refused.json()["detail"] and "'wait'" in refused.json()["detail"]
    assert not_a_flag.status_code == 400 and "stream" in not_a_flag.json()["detail"]
    assert queue_only.status_code == 409 and queue_only.json()["code"] == "STREAM_UNAVAILABLE"
    assert "without 'stream'" in queue_only.json()["detail"]
