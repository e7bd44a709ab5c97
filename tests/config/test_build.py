"""Building runtime parts from a loaded config: model sources, hook specs and functions, retry
policies and SDK tools — imported at build time, from the config file's folder."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.assembly import (
    agent_specs,
    agent_tools,
    hook_functions,
    hook_specs,
    model_source,
    retry_policy,
    sdk_tools,
)
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.hooks.manager import HookManager
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.kernel import Kernel
from agentloom.models.gateway import ModelCallFailed
from agentloom.models.offline import ScriptModel, TestModel
from agentloom.models.ports import Connection
from agentloom.models.types import Finish, Message, ModelRequest, TextDelta
from agentloom.pipeline.retry import RetryPolicy
from agentloom.tools import Tool

SECRET = "sk-live-0123456789abcdefSECRET"

TOOLS_MODULE = """\
from agentloom import StrictInput, Tool


class EchoInput(StrictInput):
    text: str


class Echo(Tool[EchoInput]):
    name = "echo"
    description = "Say the text back."

    async def execute(self, args, ctx):
        return args.text


echo = Echo()
not_a_tool = 42
"""

HOOKS_MODULE = """\
def deny(event):
    return {"decision": "deny", "reason": "denied by the config's hook"}


def allow(event):
    return None


NOT_CALLABLE = 1
"""


@pytest.fixture
def module_name(tmp_path: Path) -> Iterator[str]:
    """A fresh module name for user code written beside the config; dropped from sys.modules after."""
    name = f"cfg_user_{uuid.uuid4().hex[:10]}"
    yield name
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


def write(folder: Path, text: str, name: str = "agentloom.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def request(text: str = "hello") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),))


async def events(model: Any) -> list[Any]:
    return [e async for e in model.stream_once(request(), None)]


# -- model sources -------------------------------------------------------------------------------


async def test_model_source_for_builtin_test_returns_a_working_test_model(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"))
    model = model_source(config, "main")
    assert isinstance(model, TestModel)
    seen = await events(model)
    text = "".join(e.text for e in seen if isinstance(e, TextDelta))
    assert text == "test model: no tools to call; last user message: 'hello'"
    assert isinstance(seen[-1], Finish)


async def test_model_source_for_builtin_script_replays_the_file_beside_the_config(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    write(tmp_path / "scripts", "model: scripted\nturns:\n  - text: scripted hello\n", "turns.yaml")
    config = load_config(write(tmp_path, """\
        version: 1
        agents:
          main:
            model: {builtin: script, path: scripts/turns.yaml}
        """))
    model = model_source(config, "main")
    assert isinstance(model, ScriptModel)
    assert model.model == "scripted"
    seen = await events(model)
    assert "".join(e.text for e in seen if isinstance(e, TextDelta)) == "scripted hello"


CONNECTED = """\
version: 1
connections:
  local: {preset: openai, base_url: "http://127.0.0.1:8000/v1", api_key_env: LOCAL_KEY}
  glm: {preset: glm}
agents:
  main:
    model: {connection: local, name: some-model, window: 32000}
  coder:
    model: {connection: glm, name: glm-4.6, variant: coding_plan}
"""


def test_model_source_for_a_connection_uses_its_url_preset_and_key_variable(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONNECTED))
    connection = model_source(config, "main", environ={"LOCAL_KEY": SECRET})
    assert isinstance(connection, Connection)
    assert (connection.base_url, connection.model, connection.protocol, connection.name) == (
        "http://127.0.0.1:8000/v1", "some-model", "chat", "openai")
    assert connection.api_key == SECRET
    assert SECRET not in repr(connection)


def test_model_source_takes_the_variant_endpoint_of_the_preset(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONNECTED))
    connection = model_source(config, "coder", environ={"ZHIPUAI_API_KEY": SECRET})
    assert isinstance(connection, Connection)
    assert connection.base_url == "https://open.bigmodel.cn/api/coding/paas/v4"


@pytest.mark.parametrize("environ", [{}, {"LOCAL_KEY": ""}])
def test_model_source_with_the_api_key_variable_unset_names_the_variable_never_a_value(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    config = load_config(write(tmp_path, CONNECTED))
    with pytest.raises(ConfigError) as caught:
        model_source(config, "main", environ={**environ, "OPENAI_API_KEY": SECRET})
    message = str(caught.value)
    assert caught.value.code == "MODEL_API_KEY_MISSING"
    assert message.startswith("connections.local.api_key_env: the environment variable 'LOCAL_KEY' "
                              "is not set or is empty")
    assert "agents.main.model" in message
    assert SECRET not in message


def test_model_source_without_api_key_env_names_the_presets_variable(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONNECTED))
    with pytest.raises(ConfigError) as caught:
        model_source(config, "coder", environ={"LOCAL_KEY": SECRET})
    assert str(caught.value).startswith(
        "connections.glm.api_key_env (not set: preset 'glm' uses ZHIPUAI_API_KEY): "
        "the environment variable 'ZHIPUAI_API_KEY' is not set or is empty")
    assert SECRET not in str(caught.value)


def test_model_source_for_an_unknown_agent_lists_the_defined_ones(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, CONNECTED))
    with pytest.raises(ConfigError) as caught:
        model_source(config, "mian", environ={})
    assert "no agent named 'mian'; did you mean 'main'? defined: main, coder" in str(caught.value)


# -- hooks ---------------------------------------------------------------------------------------


def hooks_config(tmp_path: Path, module: str) -> Path:
    write(tmp_path, HOOKS_MODULE, f"{module}.py")
    return write(tmp_path, f"""\
        version: 1
        agents:
          main:
            model: {{builtin: test}}
            hooks:
              - {{timing: before, event: model, handler: {{ref: "{module}:deny"}}}}
              - {{hook_id: audit, timing: after, match: {{role: "*", status: failed}},
                  handler: {{ref: "{module}:allow"}}, timeout_s: 2.5}}
          helper:
            model: {{builtin: test}}
            hooks:
              - {{timing: before, match: {{role: main, capability: "fs.*"}},
                  handler: {{ref: "{module}:allow"}}}}
        """)


def test_hook_specs_default_the_role_to_the_agent_and_the_id_to_the_hooks_position(
    tmp_path: Path, module_name: str
) -> None:
    config = load_config(hooks_config(tmp_path, module_name))
    assert hook_specs(config) == (
        HookSpec(hook_id="main.hooks[0]", timing="before", event="model", match=HookMatch(role="main"),
                 handler=HandlerRef(kind="python", ref=f"{module_name}:deny"), timeout_s=10.0),
        HookSpec(hook_id="audit", timing="after", event="tool", match=HookMatch(role=None, status="failed"),
                 handler=HandlerRef(kind="python", ref=f"{module_name}:allow"), timeout_s=2.5),
        HookSpec(hook_id="helper.hooks[0]", timing="before", event="tool",
                 match=HookMatch(role="main", capability="fs.*"),
                 handler=HandlerRef(kind="python", ref=f"{module_name}:allow"), timeout_s=10.0),
    )


def test_hook_specs_and_functions_build_a_hook_manager_that_matches_by_agent(
    tmp_path: Path, module_name: str
) -> None:
    config = load_config(hooks_config(tmp_path, module_name))
    functions = hook_functions(config)
    assert sorted(functions) == [f"{module_name}:allow", f"{module_name}:deny"]
    manager = HookManager(hook_specs(config), functions=functions)
    assert [h.hook_id for h in manager.chain("before", "model", capability="model.main", role="main")] == [
        "main.hooks[0]"]
    assert manager.chain("before", "model", capability="model.helper", role="helper") == ()
    assert [h.hook_id for h in manager.chain("after", "tool", capability="x", role="anyone",
                                             status="failed")] == ["audit"]


@pytest.mark.parametrize(("ref", "expected"), [
    ("{m}_missing:deny", "cannot import module '{m}_missing' (ModuleNotFoundError"),
    ("{m}:nothing", "module '{m}' has no attribute 'nothing'"),
    ("{m}:NOT_CALLABLE", "'{m}:NOT_CALLABLE' is a int, not a function"),
])
def test_hook_functions_name_the_ref_key_of_a_hook_that_does_not_import(
    tmp_path: Path, module_name: str, ref: str, expected: str
) -> None:
    write(tmp_path, HOOKS_MODULE, f"{module_name}.py")
    path = write(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n    hooks:\n"
                 f"      - {{timing: before, handler: {{ref: '{ref.format(m=module_name)}'}}}}\n")
    config = load_config(path)  # loads: refs are imported at build time
    with pytest.raises(ConfigError) as caught:
        hook_functions(config)
    assert str(caught.value).startswith("agents.main.hooks[0].handler.ref: ")
    assert expected.format(m=module_name) in str(caught.value)


def test_hook_modules_of_one_name_in_two_config_folders_are_each_imported_from_their_own_folder(
    tmp_path: Path, module_name: str
) -> None:
    """Two configs in one process, each with its own ``<name>.py`` beside it (as two projects'
    ``guards.py``): each gets the functions of its own file, never the first one imported;
    the first config's functions stay as they were resolved."""
    configs = []
    for project, reason in (("one", "first project"), ("two", "second project")):
        folder = tmp_path / project
        folder.mkdir()
        write(folder, f"def guard(event):\n    return {{'decision': 'deny', 'reason': {reason!r}}}\n"
              + ("def only_here(event):\n    return None\n" if project == "two" else ""),
              f"{module_name}.py")
        hook = "guard" if project == "one" else "only_here"
        configs.append(load_config(write(
            folder, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n    hooks:\n"
            f"      - {{timing: before, handler: {{ref: '{module_name}:guard'}}}}\n"
            f"      - {{timing: before, handler: {{ref: '{module_name}:{hook}'}}}}\n")))

    first = hook_functions(configs[0])
    second = hook_functions(configs[1])  # a name the first file lacks: its own file is read

    assert first[f"{module_name}:guard"](None)["reason"] == "first project"
    assert second[f"{module_name}:guard"](None)["reason"] == "second project"
    assert second[f"{module_name}:only_here"](None) is None
    assert Path(sys.modules[module_name].__file__ or "").parent == tmp_path / "two"


def test_a_config_module_never_replaces_an_installed_or_standard_module(tmp_path: Path) -> None:
    """A ``json.py`` beside a config does not push the standard library's ``json`` out of a
    process that has imported it: the ref resolves against the module already imported."""
    import json

    write(tmp_path, "def dumps(value):\n    return 'shadowed'\n", "json.py")
    config = load_config(write(
        tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n    hooks:\n"
        "      - {timing: before, handler: {ref: 'json:dumps'}}\n"))

    functions = hook_functions(config)

    assert functions["json:dumps"] is json.dumps and sys.modules["json"] is json


# -- retry ---------------------------------------------------------------------------------------


def test_retry_policy_carries_the_agents_retry_section(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                               "    retry: {enabled: true, max_attempts: 4, interval_s: 0.5}\n"
                               "  quiet:\n    model: {builtin: test}\n"))
    assert retry_policy(config.agents["main"]) == RetryPolicy(enabled=True, max_attempts=4, interval_s=0.5)
    assert retry_policy(config.agents["quiet"]) == RetryPolicy()


# -- SDK tools -----------------------------------------------------------------------------------


def test_sdk_tools_import_module_attr_entries_from_the_config_folder(
    tmp_path: Path, module_name: str
) -> None:
    write(tmp_path, TOOLS_MODULE, f"{module_name}.py")
    config = load_config(write(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                               f"    tools: [fs.read, '{module_name}:echo', exec]\n"))
    path_before = list(sys.path)

    tools = sdk_tools(config, "main")

    assert [type(t).__name__ for t in tools] == ["Echo"]
    assert isinstance(tools[0], Tool)
    assert sys.path == path_before  # the config folder was on sys.path only while importing
    mixed = agent_tools(config, "main")
    assert mixed[0] == "fs.read" and mixed[2] == "exec" and isinstance(mixed[1], Tool)


@pytest.mark.parametrize(("attr", "expected"), [
    ("Echo", "is the class Echo; name an instance"),
    ("not_a_tool", "is a int, not an agentloom.Tool instance"),
    ("missing", "has no attribute 'missing'"),
])
def test_sdk_tools_name_the_entry_that_is_not_a_tool(
    tmp_path: Path, module_name: str, attr: str, expected: str
) -> None:
    write(tmp_path, TOOLS_MODULE, f"{module_name}.py")
    config = load_config(write(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                               f"    tools: [fs.read, '{module_name}:{attr}']\n"))
    with pytest.raises(ConfigError) as caught:
        sdk_tools(config, "main")
    assert str(caught.value).startswith("agents.main.tools[1]: ")
    assert expected in str(caught.value)


def test_sdk_tools_report_a_module_that_fails_to_import(tmp_path: Path, module_name: str) -> None:
    write(tmp_path, "raise RuntimeError('broken on purpose')\n", f"{module_name}.py")
    config = load_config(write(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                               f"    tools: ['{module_name}:tool']\n"))
    path_before = list(sys.path)
    with pytest.raises(ConfigError) as caught:
        sdk_tools(config, "main")
    assert str(caught.value).startswith(
        f"agents.main.tools[0]: cannot import module '{module_name}' (RuntimeError: broken on purpose)")
    assert sys.path == path_before


# -- all together --------------------------------------------------------------------------------


async def test_built_parts_run_on_a_kernel_with_the_agents_hook_applying_to_that_agent_only(
    tmp_path: Path, module_name: str
) -> None:
    write(tmp_path, TOOLS_MODULE, f"{module_name}_tools.py")
    write(tmp_path, HOOKS_MODULE, f"{module_name}.py")
    config = load_config(write(tmp_path, f"""\
        version: 1
        agents:
          main:
            model: {{builtin: test}}
            tools: [fs.read, "{module_name}_tools:echo"]
            retry: {{enabled: true, max_attempts: 3}}
            hooks:
              - {{timing: before, event: model, handler: {{ref: "{module_name}:deny"}}}}
          helper:
            model: {{builtin: test}}
        """))
    kernel = Kernel("memory://", hooks=hook_specs(config), hook_functions=hook_functions(config),
                    workspace_root=config.workspace_root(),
                    sandbox_backend=config.sandbox.backend)
    try:
        for name, agent in config.agents.items():
            kernel.add_model(name, model_source(config, name),
                             first_output_timeout_s=agent.limits.first_output_timeout_s)
        kernel.publish("rel", agent_tools(config, "main"), roles={"main": ["fs.read", "echo"], "helper": []})
        lease = await kernel.start_run(workspace=False)

        def context(role: str) -> Any:
            agent = config.agents[role]
            return kernel.invocation_context(lease, release_id="rel", role=role, retry=retry_policy(agent),
                                             deadline_s=agent.limits.run_deadline_s)

        with pytest.raises(ModelCallFailed) as caught:
            await kernel.models.generate(request(), context("main"), model="main")
        assert caught.value.outcome == "denied_before_execution"
        response = await kernel.models.generate(request(), context("helper"), model="helper")
        assert response.text.startswith("test model: no tools to call")
    finally:
        kernel.close()


def test_model_window_output_limit_and_token_quota_reach_the_agent_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_KEY", SECRET)
    monkeypatch.setenv("ZHIPUAI_API_KEY", SECRET)
    text = CONNECTED.replace("window: 32000}", "window: 32000, output_limit: 8192}\n"
                             "    limits: {max_total_tokens: 50000}").replace(
        "variant: coding_plan}", "variant: coding_plan, window: 128000}")
    specs = {s.name: s for s in agent_specs(load_config(write(tmp_path, text)))}
    assert (specs["main"].window, specs["main"].output_limit) == (32000, 8192)
    assert specs["main"].limits.max_total_tokens == 50000
    # no output_limit anywhere: the platform default min(4096, W // 4), labelled as such (000 §4)
    assert (specs["coder"].window, specs["coder"].output_limit) == (128000, 4096)
    assert specs["coder"].descriptor is not None
    assert specs["coder"].descriptor.output_limit_source == "platform_default"
    assert specs["coder"].limits.max_total_tokens is None
