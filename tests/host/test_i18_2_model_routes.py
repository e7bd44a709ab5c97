"""Issue 18 acceptance 2, second half (003 F13): a project's model route is used by the Planner
*and* both Executors of a delegating run, and never mixed with the default endpoint or key.

Two scripted OpenAI servers on 127.0.0.1 stand for the release's endpoint and the project's; each
records the key (``Authorization``) and the model id of every request it gets. The run is created
through a real ``agentloom serve`` with a key of project ``acme`` (which overrides the connection's
base URL, key variable and model id) and then with a key of project ``beta`` (which overrides
nothing). A route is a snapshot taken when the run is queued: it is shown on the run (no key
value), and a process without the key variable fails the run naming the variable instead of
falling back to the default endpoint.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentloom.agent.routes import route_connections
from agentloom.agent.runtime import RunError
from agentloom.assembly import runtime_from_config
from agentloom.assembly.routes import ConfigRoutes
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.refs import Principal
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import make_key, serving, wait_status
from .test_i18_api import _api

DEFAULT_KEY, ACME_KEY = "sk-default-0000", "sk-acme-1111"


def _config(folder: Path, default_url: str, acme_url: str) -> Path:
    path = folder / "agentloom.yaml"
    path.write_text(f"""\
version: 1
connections:
  llm: {{preset: openai, protocol: chat, base_url: "{default_url}", api_key_env: DEFAULT_KEY}}
agents:
  main:
    instructions: You are the planner.
    model: {{connection: llm, name: default-model, window: 100000}}
    executors: [coder, reviewer]
  coder:
    description: Writes code.
    instructions: You are the coder.
    model: {{connection: llm, name: default-model, window: 100000}}
  reviewer:
    description: Reviews code.
    instructions: You are the reviewer.
    model: {{connection: llm, name: default-model, window: 100000}}
projects:
  acme:
    connections:
      llm: {{base_url: "{acme_url}", api_key_env: ACME_KEY, model: acme-model}}
""", encoding="utf-8")
    return path


def _script_delegating_run(server: ScriptedOpenAIServer) -> None:
    """The Planner delegates to both Executors, each answers, the Planner concludes."""
    server.script(chat_turn(tool_calls=[
        ("d1", "delegate_coder", '{"task": "write it"}'),
        ("d2", "delegate_reviewer", '{"task": "review it"}')]))
    server.script(chat_turn("done"))
    server.script(chat_turn("done"))
    server.script(chat_turn("Both finished."))


def _who(server: ScriptedOpenAIServer) -> list[tuple[str, str, str]]:
    """(system prompt, key, model id) of every model request the server got."""
    seen = []
    for request in server.model_requests:
        body = request.json or {}
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        seen.append((system, request.headers.get("authorization", ""), body["model"]))
    return seen


def test_i18_2_project_route_is_used_by_the_planner_and_both_executors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEFAULT_KEY", DEFAULT_KEY)
    monkeypatch.setenv("ACME_KEY", ACME_KEY)
    store_url = f"sqlite:///{tmp_path / 'al.db'}"
    with ScriptedOpenAIServer() as default, ScriptedOpenAIServer() as acme:
        config = _config(tmp_path, default.base_url, acme.base_url)
        keys = {p: make_key(store_url, "alice", p) for p in ("acme", "beta")}
        with serving(config, store_url) as base:
            _script_delegating_run(acme)
            api = _api(base, keys["acme"])
            run = api.post("/v1/runs", body={"task": "build and review"}).json()
            done = wait_status(api, run["run_id"], {"succeeded", "failed"})
            assert done["status"] == "succeeded", done["error"]
            assert done["output"] == "Both finished."
            assert done["route"]["project"] == "acme"
            assert set(done["route"]["agents"]) == {"main", "coder", "reviewer"}
            assert {a["base_url"] for a in done["route"]["agents"].values()} == {acme.base_url}
            assert {a["api_key_env"] for a in done["route"]["agents"].values()} == {"ACME_KEY"}
            assert ACME_KEY not in str(done) and DEFAULT_KEY not in str(done)
            seen = _who(acme)
            assert sorted(s for s, _, _ in seen) == sorted([
                "You are the planner.", "You are the coder.", "You are the reviewer.",
                "You are the planner."]), seen
            assert {(k, m) for _, k, m in seen} == {(f"Bearer {ACME_KEY}", "acme-model")}
            assert default.model_requests == []  # nothing went to the default endpoint

            _script_delegating_run(default)  # a project without an override: the release's
            api = _api(base, keys["beta"])
            run = api.post("/v1/runs", body={"task": "build and review"}).json()
            done = wait_status(api, run["run_id"], {"succeeded", "failed"})
            assert done["status"] == "succeeded", done["error"]
            assert done["route"] is None
            assert {(k, m) for _, k, m in _who(default)} == {(f"Bearer {DEFAULT_KEY}",
                                                              "default-model")}
            assert len(_who(default)) == 4 and len(_who(acme)) == 4


def test_f13_a_process_without_the_route_key_does_not_drive_the_run_nor_fall_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is read where the run is driven: a process lacking it fails to drive the run (the
    failure is counted; another worker may have the key; ``recovery.max_failures`` ends it),
    naming the variable — no request goes anywhere, least of all to the default endpoint."""
    monkeypatch.setenv("DEFAULT_KEY", DEFAULT_KEY)
    monkeypatch.delenv("ACME_KEY", raising=False)
    with ScriptedOpenAIServer() as default, ScriptedOpenAIServer() as acme:
        config = load_config(_config(tmp_path, default.base_url, acme.base_url))
        runtime = runtime_from_config(config, store=f"sqlite:///{tmp_path / 'al.db'}")

        async def run() -> None:
            try:
                handle = await runtime.start("build", principal=Principal(
                    actor="alice", project="acme"))
                await handle.result()
            finally:
                await runtime.aclose()

        with pytest.raises(RunError) as refused:
            asyncio.run(run())
        assert refused.value.code == "RUN_CRASHED"
        message = str(refused.value)
        assert "MODEL_API_KEY_MISSING" in message and "ACME_KEY" in message
        assert "projects.acme" in message
        assert default.model_requests == [] and acme.model_requests == []


def test_f13_route_snapshot_names_every_part_of_the_endpoint(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1"))
    routes = ConfigRoutes(config)
    assert routes.snapshot(None) is None and routes.snapshot("beta") is None
    snap = routes.snapshot("acme")
    assert snap == {"project": "acme", "agents": {name: {
        "connection": "llm", "preset": "openai", "variant": "default",
        "base_url": "http://127.0.0.1:8/v1", "api_key_env": "ACME_KEY", "model": "acme-model"}
        for name in ("main", "coder", "reviewer")}}
    made = route_connections(snap, environ={"ACME_KEY": ACME_KEY})
    assert {c.base_url for c in made.values()} == {"http://127.0.0.1:8/v1"}
    assert {c.model for c in made.values()} == {"acme-model"}
    with pytest.raises(ConfigError) as refused:
        route_connections(snap, environ={})
    assert refused.value.code == "MODEL_API_KEY_MISSING"


def test_f13_a_project_overriding_an_unknown_connection_is_a_config_error(tmp_path: Path) -> None:
    path = _config(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1")
    text = path.read_text()
    path.write_text(text.replace("      llm: {base_url", "      lmm: {base_url"))
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert "projects.acme.connections.lmm" in str(refused.value)
    assert "did you mean 'llm'" in str(refused.value)
    path.write_text(text.replace("model: acme-model", "model: acme-model, key: x"))
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert "projects.acme.connections.llm.key" in str(refused.value)
