"""Issue 37, point 3: the node in the call. Every call a workflow node makes — a capability
node's, an agent node's delegation and that agent's own model and tool calls — carries
``node: {workflow_run_id, name, attempt}`` in its hook event, its trace span and
``runs show --json`` (with the context's ``node_task_id``); a hook with ``match: {node: …}``
sees only that node's calls, and a call made for no node never matches it.

::

    build (capability fs.write) ─► deploy (agent deployer: fs.read, then answers)

The agent runs on a scripted OpenAI server on 127.0.0.1; the stores are memory, SQLite and
PostgreSQL; the command hook runs in the sandbox (Landlock or bubblewrap)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.agent.conftest import WAIT_S, answer, calls, connection, tool_call
from tests.cli.support import Cli
from tests.host.support import conforms, make_key
from tests.sandbox.conftest import BACKENDS, require_backend, searchable

from agentloom.agent import AgentSpec, Runtime
from agentloom.assembly.runtime import runtime_from_config
from agentloom.canonical import canonical_ascii_json
from agentloom.config.loader import load_config
from agentloom.hooks import HookDecision, hook
from agentloom.hooks.event import HookEvent
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec, config_version
from agentloom.host.app import create_app
from agentloom.refs import Principal
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.views import run_detail


def _flow() -> Workflow:
    return (Workflow("ship")
            .capability("build", "fs.write", args={"path": "dist.txt", "content": "v2"})
            .agent("deploy", "deployer", input="deploy {{ nodes.build.output }}")
            .edge("build", "deploy"))


def _script(srv: ScriptedOpenAIServer) -> None:
    srv.script(calls(tool_call("r1", "fs_read", path="notes.txt")), answer("deployed"))


class Recorder:
    """Two python hooks: ``every`` sees every call (any role, any event, before), ``deploy``
    only those of node ``deploy``; each records the events it saw."""

    def __init__(self) -> None:
        self.every: list[HookEvent] = []
        self.deploy: list[HookEvent] = []

    def hooks(self) -> list[Any]:
        @hook(event="*", match=HookMatch(), hook_id="every")
        def every(event: HookEvent) -> HookDecision:
            self.every.append(event)
            return HookDecision("allow")

        @hook(event="*", match=HookMatch(node="deploy"), hook_id="only_deploy")
        def only_deploy(event: HookEvent) -> HookDecision:
            self.deploy.append(event)
            return HookDecision("allow")

        return [every, only_deploy]


async def test_i37_3_every_call_of_a_node_carries_the_node_in_runs_show_and_its_hook_event(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        store_url: str) -> None:
    srv, solo = servers(), servers()
    _script(srv)
    solo.script(answer("alone"))
    seen = Recorder()
    rt = runtime_factory(
        [AgentSpec(name="deployer", model=connection(srv), tools=("fs.read",)),
         AgentSpec(name="solo", model=connection(solo))],
        store=store_url, programs=[WorkflowProgram(_flow().build())], hooks=seen.hooks(),
        sandbox_backend="none")

    result = await asyncio.wait_for(rt.run("go", agent="workflow:ship"), WAIT_S)
    assert result.status == "succeeded", result.error

    run_id = result.run_id
    ops = run_detail(rt.store, run_id)["operations"]  # what runs show --json prints
    by_kind = {(op["capability"], op["role"]) for op in ops}
    assert ("fs.write", "workflow:ship") in by_kind  # build
    assert ("workflow.agent.deployer", "workflow:ship") in by_kind  # deploy's delegation
    assert ("fs.read", "deployer") in by_kind  # the agent's tool call
    assert sum(op["event_type"] == "model" for op in ops) == 2  # the agent's two turns
    for op in ops:
        name = "build" if op["capability"] == "fs.write" else "deploy"
        assert op["node"] == {"workflow_run_id": run_id, "name": name, "attempt": 1}, op
        assert op["node_task_id"] == f"{run_id}/n/{name}/1"

    # the hook event of every call: the same node; the node hook saw deploy's calls only
    node_of = {op["operation_id"]: op["node"] for op in ops}
    assert {e.operation_id for e in seen.every} == set(node_of)
    for event in seen.every:
        assert dict(event["node"]) == node_of[event.operation_id]
        assert "node" in event and json.loads(json.dumps(dict(event["node"]))) == \
            node_of[event.operation_id]
    deploy_ops = {o for o, n in node_of.items() if n["name"] == "deploy"}
    assert {e.operation_id for e in seen.deploy} == deploy_ops and len(deploy_ops) == 4

    # a call made for no node: no ``node`` key, and the node hook never runs on it
    alone = await asyncio.wait_for(rt.run("hi", agent="solo"), WAIT_S)
    assert alone.status == "succeeded", alone.error
    (solo_op,) = run_detail(rt.store, alone.run_id)["operations"]
    assert solo_op["node"] is None and solo_op["node_task_id"] is None
    (solo_event,) = [e for e in seen.every if e.run_id == alone.run_id]
    assert "node" not in solo_event and "node" not in dict(solo_event)
    assert solo_event.node is None
    assert {e.operation_id for e in seen.deploy} == deploy_ops


async def test_i37_3_the_operation_span_carries_the_node(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    srv = servers()
    _script(srv)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = runtime_factory([AgentSpec(name="deployer", model=connection(srv), tools=("fs.read",))],
                         store=f"sqlite:///{tmp_path / 'a.db'}", tracer_provider=provider,
                         programs=[WorkflowProgram(_flow().build())], sandbox_backend="none")

    result = await asyncio.wait_for(rt.run("go", agent="workflow:ship"), WAIT_S)
    assert result.status == "succeeded", result.error

    spans = [s for s in exporter.get_finished_spans()
             if (s.attributes or {}).get("agentloom.capability")]  # the operations' spans
    assert len(spans) == 5  # build, the delegation, two model turns, one tool call
    for span in spans:
        attributes = dict(span.attributes or {})
        name = "build" if attributes["agentloom.capability"] == "fs.write" else "deploy"
        assert attributes["agentloom.node.name"] == name, span.name
        assert attributes["agentloom.node.attempt"] == 1
        assert attributes["agentloom.workflow_run.id"] == result.run_id
    solo = [s for s in exporter.get_finished_spans() if s.name.startswith("agentloom.run")]
    assert all("agentloom.node.name" not in (s.attributes or {}) for s in solo)


def _yaml_project(tmp_path: Path, srv: ScriptedOpenAIServer) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "agentloom.yaml").write_text(f"""\
version: 1
connections:
  local: {{preset: openai, base_url: "{srv.base_url}", api_key_env: I37_KEY}}
agents:
  deployer:
    model: {{connection: local, name: scripted-model, window: 128000}}
    tools: [fs.read]
workflows:
  ship:
    nodes:
      build:  {{capability: fs.write, args: {{path: dist.txt, content: v2}}}}
      deploy: {{agent: deployer, input: "deploy {{{{ nodes.build.output }}}}"}}
    edges:
      - {{from: build, to: deploy}}
sandbox: {{backend: none}}
""", encoding="utf-8")
    return folder / "agentloom.yaml"


def test_i37_3_runs_show_prints_the_node_on_the_calls_line(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I37_KEY", "test")
    srv = servers()
    _script(srv)
    config = _yaml_project(tmp_path, srv)
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")
    ran = cli.json("run", str(config), "--workflow", "ship", "go", "--store", cli.store)
    assert ran["status"] == "succeeded"
    shown = cli.json("runs", "show", ran["run_id"], "--store", cli.store)
    assert {op["node"]["name"] for op in shown["operations"]} == {"build", "deploy"}
    drawn = cli("runs", "show", ran["run_id"], "--store", cli.store).stdout
    lines = [line for line in drawn.splitlines() if "fs.read" in line and "role" in line]
    assert lines and all("[node deploy#1]" in line for line in lines), drawn


async def test_i37_3_the_hosts_operations_route_shows_the_node(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I37_KEY", "test")
    srv = servers()
    _script(srv)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    principal = Principal(actor="alice", project="acme")
    key = await asyncio.to_thread(make_key, url, principal.actor, principal.project)
    rt = runtime_from_config(load_config(_yaml_project(tmp_path, srv)), store=url)
    try:
        ran = await asyncio.wait_for(rt.run("go", agent="workflow:ship", principal=principal),
                                     WAIT_S)
        assert ran.status == "succeeded", ran.error
        app = create_app(rt, execute=False, wait_s=0.1)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                      base_url="http://host",
                                      headers={"Authorization": f"Bearer {key}"}) as client:
            doc = (await client.get("/openapi.json")).json()
            template = "/v1/runs/{run_id}/operations"
            listed = await client.get(template.format(run_id=ran.run_id))
            conforms(doc, "GET", template, listed)  # the document declares node, node_task_id
    finally:
        await rt.aclose()
    items = listed.json()["items"]
    assert len(items) == 5
    for op in items:
        name = "build" if op["capability"] == "fs.write" else "deploy"
        assert op["node"] == {"workflow_run_id": ran.run_id, "name": name, "attempt": 1}
        assert op["node_task_id"] == f"{ran.run_id}/n/{name}/1"


# -- the hook configuration's version ---------------------------------------------------------

def test_i37_3_a_hook_without_node_keeps_its_configuration_digest() -> None:
    spec = HookSpec(hook_id="g", timing="before", event="tool",
                    match=HookMatch(role="main", capability="fs.*"),
                    handler=HandlerRef(ref="m:f"), timeout_s=5.0)
    before_37 = [{"hook_id": "g", "timing": "before", "event": "tool",
                  "match": {"role": "main", "capability": "fs.*", "purpose": None,
                            "status": None},
                  "handler": spec.handler.to_dict(), "timeout_s": 5.0, "on_failure": "allow"}]
    assert canonical_ascii_json([spec.to_dict()]) == canonical_ascii_json(before_37)
    assert config_version((spec,)) == hashlib.sha256(
        canonical_ascii_json(before_37).encode()).hexdigest()[:16]
    with_node = HookSpec(hook_id="g", timing="before", match=HookMatch(node="deploy"),
                         handler=HandlerRef(ref="m:f"))
    assert with_node.to_dict()["match"] == {"role": None, "capability": None, "purpose": None,
                                            "status": None, "node": "deploy"}


def test_i37_3_a_node_hook_never_matches_a_call_without_a_node() -> None:
    match = HookMatch(node="deploy")
    assert match.matches(role="r", capability="x", purpose=None, status=None, node="deploy")
    assert not match.matches(role="r", capability="x", purpose=None, status=None, node="build")
    assert not match.matches(role="r", capability="x", purpose=None, status=None)
    assert HookMatch().matches(role="r", capability="x", purpose=None, status=None, node="b")


# -- a command hook receives the node in its JSON input ---------------------------------------

@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return str(request.param)


async def test_i37_3_a_command_hook_reads_the_node_in_its_json_input(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path, backend: str) -> None:
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    searchable(project)
    root = tmp_path / "ws"
    root.mkdir(mode=0o755)
    searchable(root)
    # exit 2: the call is denied with the command's stderr (the event it read) as the reason
    guard = HookSpec(hook_id="show", timing="before", match=HookMatch(node="build"),
                     handler=HandlerRef(kind="command", command="cat >&2; exit 2",
                                        project_dir=str(project)))
    rt = runtime_factory([AgentSpec(name="deployer", model=connection(servers()))],
                         store=f"sqlite:///{tmp_path / 'a.db'}", workspace_root=root,
                         programs=[WorkflowProgram(_flow().build())], hooks=[guard],
                         sandbox_backend=backend)

    result = await asyncio.wait_for(rt.run("go", agent="workflow:ship"), WAIT_S)

    assert result.status == "failed"
    (build,) = [op for op in run_detail(rt.store, result.run_id)["operations"]
                if op["capability"] == "fs.write"]
    assert build["status"] == "denied", build
    event = json.loads(build["reason"])
    assert event["node"] == {"workflow_run_id": result.run_id, "name": "build", "attempt": 1}
    assert event["capability"] == "fs.write" and event["role"] == "workflow:ship"
