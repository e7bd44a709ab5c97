"""Issue 37, point 4: YAML hooks on delegations and agent nodes. A workflow has ``hooks:`` (an
agent's hook entries; ``match.role`` defaults to ``workflow:<name>``, the role of its own
calls); ``event: delegation`` sees an agent node's delegation with the payload ``{task, agent,
node, attempt}``; ``ask`` there works as for a tool — the run waits, approved the agent node
runs, rejected the node fails; a hook may patch ``/payload/task`` but not ``/payload/agent``.

::

    build (capability fs.write) ─► deploy (agent deployer, on a scripted OpenAI server)
    workflows.ship.hooks: before delegation, match {node: deploy} → guards (python, beside
    the config file)

Stores: memory, SQLite and PostgreSQL (the Python API), SQLite through the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.conftest import WAIT_S, answer, calls, sent_messages, tool_call
from tests.cli.support import Cli

from agentloom.assembly.runtime import runtime_from_config
from agentloom.config.loader import load_config, parse_config
from agentloom.errors import ConfigError
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.views import run_detail

GUARDS = '''\
def ask(event):
    return {"decision": "ask", "reason": "Deploy " + event["payload"]["task"] + "?"}


def careful(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/task", "value": "deploy carefully"}]}


def elsewhere(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/agent", "value": "intruder"}]}
'''


def _project(tmp_path: Path, srv: ScriptedOpenAIServer, hooks: str) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "i37_guards.py").write_text(GUARDS, encoding="utf-8")
    (folder / "agentloom.yaml").write_text(f"""\
version: 1
connections:
  local: {{preset: openai, base_url: "{srv.base_url}", api_key_env: I37_KEY}}
agents:
  deployer:
    model: {{connection: local, name: scripted-model, window: 128000}}
workflows:
  ship:
    nodes:
      build:  {{capability: fs.write, args: {{path: dist.txt, content: v2}}}}
      deploy: {{agent: deployer, input: "deploy {{{{ nodes.build.output }}}}"}}
    edges:
      - {{from: build, to: deploy}}
    hooks:
{hooks}sandbox: {{backend: none}}
""", encoding="utf-8")
    return folder / "agentloom.yaml"


ASK = ('      - {timing: before, event: delegation, match: {node: deploy}, '
       'handler: {ref: "i37_guards:ask"}}\n')


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I37_KEY", "test")


def _delegation(store: Any, run_id: str) -> dict[str, Any]:
    (op,) = [op for op in run_detail(store, run_id)["operations"]
             if op["capability"] == "workflow.agent.deployer"]
    return op


def _nodes(store: Any, run_id: str) -> dict[str, str]:
    return {n["node"]: n["status"] for n in run_detail(store, run_id)["nodes"]}


async def test_i37_4_a_workflow_hook_asks_before_the_agent_node_and_approval_starts_it(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path, store_url: str) -> None:
    srv = servers()
    srv.script(answer("deployed"))
    rt = runtime_from_config(load_config(_project(tmp_path, srv, ASK)), store=store_url)
    try:
        first = await asyncio.wait_for(rt.run("go", agent="workflow:ship"), WAIT_S)
        assert first.status == "waiting", first.error
        (waiting,) = first.waiting
        op = _delegation(rt.store, first.run_id)
        assert op["operation_id"] == waiting["operation_id"] and op["role"] == "workflow:ship"
        task = op["proposed_arguments"]["task"]
        assert task.startswith("deploy ")  # the node's rendered input
        assert op["proposed_arguments"] == {"task": task, "agent": "deployer", "node": "deploy",
                                            "attempt": 1}
        assert op["approval"]["question"] == f"Deploy {op['proposed_arguments']['task']}?"
        assert _nodes(rt.store, first.run_id)["deploy"] == "waiting"
        assert srv.model_requests == []  # the agent has not started

        await rt.approve(first.run_id, waiting["operation_id"], reason="go ahead")
        done = await asyncio.wait_for((await rt.resume(first.run_id)).result(), WAIT_S)

        assert done.status == "succeeded", done.error
        assert _nodes(rt.store, first.run_id) == {"build": "succeeded", "deploy": "succeeded"}
        assert len(srv.model_requests) == 1
    finally:
        await rt.aclose()


async def test_i37_4_a_rejected_delegation_fails_the_agent_node(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path, store_url: str) -> None:
    srv = servers()
    rt = runtime_from_config(load_config(_project(tmp_path, srv, ASK)), store=store_url)
    try:
        first = await asyncio.wait_for(rt.run("go", agent="workflow:ship"), WAIT_S)
        assert first.status == "waiting", first.error
        await rt.reject(first.run_id, first.waiting[0]["operation_id"], reason="not today")
        done = await asyncio.wait_for((await rt.resume(first.run_id)).result(), WAIT_S)

        assert done.status == "failed"
        assert _nodes(rt.store, first.run_id) == {"build": "succeeded", "deploy": "failed"}
        op = _delegation(rt.store, first.run_id)
        assert op["status"] == "denied" and op["reason"] == "rejected by a person: not today"
        assert srv.model_requests == []  # the agent never ran
    finally:
        await rt.aclose()


async def test_i37_4_a_delegation_hook_may_patch_the_task_but_not_the_agent(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path) -> None:
    srv = servers()
    srv.script(answer("deployed"))
    hooks = ('      - {hook_id: elsewhere, timing: before, event: delegation, '
             'handler: {ref: "i37_guards:elsewhere"}}\n'
             '      - {hook_id: careful, timing: before, event: delegation, match: {node: deploy}, '
             'handler: {ref: "i37_guards:careful"}}\n')
    rt = runtime_from_config(load_config(_project(tmp_path, srv, hooks)),
                             store=f"sqlite:///{tmp_path / 'a.db'}")
    try:
        done = await asyncio.wait_for(rt.run("go", agent="workflow:ship"), WAIT_S)
        assert done.status == "succeeded", done.error
        op = _delegation(rt.store, done.run_id)
        rows = {h["hook_id"]: h for h in op["hooks"]}
        assert rows["elsewhere"]["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"
        assert "/payload/agent" in rows["elsewhere"]["patch_error"]["message"]
        assert rows["careful"]["patch_error"] is None
        assert op["executed_arguments"] == {"task": "deploy carefully", "agent": "deployer",
                                            "node": "deploy", "attempt": 1}
        user = [m for m in sent_messages(srv, 0) if m["role"] == "user"]
        assert user[-1]["content"] == "deploy carefully"  # what the agent was given
    finally:
        await rt.aclose()


def test_i37_4_cli_run_waits_runs_approve_lets_the_agent_node_start(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path) -> None:
    srv = servers()
    srv.script(answer("deployed"))
    config = _project(tmp_path, srv, ASK)
    cli = Cli(f"sqlite:///{tmp_path / 'store.db'}")
    first = cli.json("run", str(config), "--workflow", "ship", "go", "--store", cli.store,
                     exit_code=3)
    assert first["status"] == "waiting"
    shown = cli.json("runs", "show", first["run_id"], "--store", cli.store)
    (approval,) = shown["diagnosis"]["waiting_for"]["approvals"]
    answered = cli("runs", "approve", first["run_id"], approval["operation_id"],
                   "--store", cli.store)
    assert answered.exit_code == 0, answered.stderr
    done = cli.json("runs", "resume", first["run_id"], "--store", cli.store)
    assert done["status"] == "succeeded" and done["output"] == "deployed"


# -- bad input ---------------------------------------------------------------------------------

def _config(hooks: list[dict[str, Any]], *, agent_hooks: list[dict[str, Any]] | None = None,
            ) -> dict[str, Any]:
    return {"version": 1,
            "agents": {"deployer": {"model": {"builtin": "test"},
                                    "hooks": agent_hooks or []}},
            "workflows": {"ship": {
                "nodes": {"build": {"capability": "fs.read", "args": {"path": "a"}},
                          "deploy": {"agent": "deployer"}},
                "edges": [{"from": "build", "to": "deploy"}],
                "hooks": hooks}}}


HANDLER = {"ref": "m:f"}


def test_i37_4_an_unknown_event_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_config([{"timing": "before", "event": "delegate", "handler": HANDLER}]),
                     base_dir=tmp_path)
    message = str(caught.value)
    assert "workflows.ship.hooks[0].event" in message
    assert "delegation" in message  # the allowed values are named


def test_i37_4_a_match_node_the_workflow_lacks_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_config([{"timing": "before", "event": "delegation",
                               "match": {"node": "deplo"}, "handler": HANDLER}]),
                     base_dir=tmp_path)
    message = str(caught.value)
    assert "workflows.ship.hooks[0].match.node" in message
    assert "'deplo'" in message and "did you mean 'deploy'" in message


def test_i37_4_hook_ids_are_unique_across_agents_and_workflows(tmp_path: Path) -> None:
    hook = {"hook_id": "guard", "timing": "before", "handler": HANDLER}
    with pytest.raises(ConfigError) as caught:
        parse_config(_config([hook], agent_hooks=[hook]), base_dir=tmp_path)
    assert "workflows.ship.hooks[0].hook_id" in str(caught.value)
    assert "agents.deployer.hooks[0]" in str(caught.value)


def test_i37_4_workflow_hooks_compile_with_their_default_id_and_role(tmp_path: Path) -> None:
    from agentloom.assembly import hook_specs

    config = parse_config(_config(
        [{"timing": "before", "event": "delegation", "match": {"node": "deploy"},
          "handler": HANDLER},
         {"timing": "after", "event": "tool", "match": {"role": "*", "capability": "fs.*"},
          "handler": HANDLER}],
        agent_hooks=[{"timing": "before", "event": "delegation", "match": {"node": "deploy"},
                      "handler": HANDLER}]), base_dir=tmp_path)
    specs = {s.hook_id: s for s in hook_specs(config)}
    assert list(specs) == ["deployer.hooks[0]", "ship.hooks[0]", "ship.hooks[1]"]
    assert (specs["ship.hooks[0]"].event, specs["ship.hooks[0]"].match.role,
            specs["ship.hooks[0]"].match.node) == ("delegation", "workflow:ship", "deploy")
    assert specs["ship.hooks[1]"].match.role is None  # "*": every role
    # an agent's hook may name a node too: its calls made for that node
    assert (specs["deployer.hooks[0]"].match.role,
            specs["deployer.hooks[0]"].match.node) == ("deployer", "deploy")
    # a delegation hook whose capability names no delegation is allowed; it never matches
    parse_config(_config([{"timing": "before", "event": "delegation",
                           "match": {"capability": "fs.read"}, "handler": HANDLER}]),
                 base_dir=tmp_path)


async def test_i37_4_an_agents_own_delegation_hook_patches_its_executors_task(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path) -> None:
    planner, helper = servers(), servers()
    planner.script(calls(tool_call("d1", "delegate_helper", task="deploy now")),
                   answer("done"))
    helper.script(answer("deployed"))
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "i37_guards.py").write_text(GUARDS, encoding="utf-8")
    model = "{connection: %s, name: scripted-model, window: 128000}"
    (folder / "agentloom.yaml").write_text(f"""\
version: 1
connections:
  planner: {{preset: openai, base_url: "{planner.base_url}", api_key_env: I37_KEY}}
  helper: {{preset: openai, base_url: "{helper.base_url}", api_key_env: I37_KEY}}
agents:
  main:
    model: {model % "planner"}
    executors: [helper]
    hooks:
      - {{timing: before, event: delegation, handler: {{ref: "i37_guards:careful"}}}}
  helper:
    model: {model % "helper"}
sandbox: {{backend: none}}
""", encoding="utf-8")
    rt = runtime_from_config(load_config(folder / "agentloom.yaml"),
                             store=f"sqlite:///{tmp_path / 'a.db'}")
    try:
        done = await asyncio.wait_for(rt.run("go", agent="main"), WAIT_S)
        assert done.status == "succeeded", done.error
        (op,) = [o for o in run_detail(rt.store, done.run_id)["operations"]
                 if o["kind"] == "delegation"]
        assert op["node"] is None  # an agent's own delegation serves no workflow node
        assert op["executed_arguments"] == {"task": "deploy carefully"}
        user = [m for m in sent_messages(helper, 0) if m["role"] == "user"]
        assert user[-1]["content"] == "deploy carefully"
    finally:
        await rt.aclose()


def test_i37_4_an_agent_nodes_request_stored_before_the_upgrade_is_still_accepted() -> None:
    from jsonschema import Draft202012Validator

    from agentloom.squad.nodes import _AGENT_SCHEMA, _task

    validator = Draft202012Validator(_AGENT_SCHEMA)
    old = {"node": "deploy", "attempt": 1, "input": "deploy v2"}
    new = {"task": "deploy v2", "agent": "deployer", "node": "deploy", "attempt": 1}
    assert validator.is_valid(old) and validator.is_valid(new)
    assert _task(old) == _task(new) == "deploy v2"
    assert not validator.is_valid({"node": "deploy", "attempt": 1})  # no task at all
    assert not validator.is_valid({"task": "x", "node": "deploy", "attempt": 1})  # no agent
