"""Loading a config file: the documented example loads, defaults apply, relative paths are read
from the config file's folder, and every mistake fails before any run naming its key path — at
load time, or at build time for what only the provider presets or the script parser can see."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentloom.assembly import agent_specs, check_config
from agentloom.config import (
    BUILTIN_TOOLS,
    Config,
    ConnectionModelChoice,
    LimitsConfig,
    RetryConfig,
    SandboxConfig,
    ScriptModelChoice,
    TestModelChoice,
    load_config,
    parse_config,
)
from agentloom.environment import BUILTIN_TOOLS as ENVIRONMENT_TOOLS
from agentloom.errors import ConfigError
from agentloom.store import open_store

EXAMPLE = """\
version: 1
connections:
  local: {preset: openai, protocol: chat, base_url: "http://127.0.0.1:8000/v1", api_key_env: LOCAL_KEY}
agents:
  main:
    model: {connection: local, name: some-model, window: 32000}
    instructions: "You are careful."
    tools: [fs.read, fs.write, fs.list, fs.edit, exec]
    executors: [helper]
    retry: {enabled: false, max_attempts: 2, interval_s: 2}
    limits: {run_deadline_s: 3600, first_output_timeout_s: 60, batch_concurrency: 2}
    hooks:
      - {timing: before, event: tool, match: {capability: fs.write},
         handler: {kind: python, ref: "my_hooks:guard"}}
  helper:
    model: {builtin: test}
    tools: [fs.read]
  scripted:
    model: {builtin: script, path: turns.yaml}
"""

TURNS = "turns:\n  - text: hello\n"
MINIMAL = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n"


def write(folder: Path, text: str, name: str = "agentloom.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(folder: Path, text: str) -> ConfigError:
    """The error of loading ``text`` and checking it as a build does, before any run."""
    path = write(folder, text)
    with pytest.raises(ConfigError) as caught:
        check_config(load_config(path))
    return caught.value


# -- what loads ----------------------------------------------------------------------------------


def test_the_documented_example_loads_with_every_key_it_sets(tmp_path: Path) -> None:
    write(tmp_path, "def guard(event):\n    return None\n", "my_hooks.py")
    write(tmp_path, TURNS, "turns.yaml")
    config = load_config(write(tmp_path, EXAMPLE))

    assert list(config.agents) == ["main", "helper", "scripted"]
    local = config.connections["local"]
    assert (local.preset, local.protocol, local.base_url, local.api_key_env) == (
        "openai", "chat", "http://127.0.0.1:8000/v1", "LOCAL_KEY")
    main = config.agents["main"]
    assert main.model == ConnectionModelChoice(connection="local", name="some-model", window=32000)
    assert main.instructions == "You are careful."
    assert main.tools == ("fs.read", "fs.write", "fs.list", "fs.edit", "exec")
    assert main.executors == ("helper",)
    assert main.retry == RetryConfig(enabled=False, max_attempts=2, interval_s=2.0)
    assert main.limits.batch_concurrency == 2
    hook = main.hooks[0]
    assert (hook.timing, hook.event, hook.match.capability, hook.handler.ref) == (
        "before", "tool", "fs.write", "my_hooks:guard")
    assert config.agents["helper"].model == TestModelChoice(builtin="test")
    assert config.agents["scripted"].model == ScriptModelChoice(builtin="script", path="turns.yaml")


def test_defaults_apply_to_every_key_left_out(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL))
    agent = config.agents["main"]
    assert config.connections == {}
    assert (agent.description, agent.instructions, agent.tools, agent.executors, agent.hooks) == (
        "", "", (), (), ())
    assert agent.retry == RetryConfig(enabled=False, max_attempts=2, interval_s=2.0)
    assert agent.limits == LimitsConfig(run_deadline_s=3600, first_output_timeout_s=60,
                                        stream_idle_timeout_s=None, batch_concurrency=2, max_steps=50)
    assert config.workspace.root is None  # default: outside the project (folders.default_workspace_root)
    assert config.sandbox == SandboxConfig(backend="auto", env={}, egress=False, allow_shell=False,
                                           timeout_s=10, max_processes=512,
                                           max_file_bytes=1 << 30, max_cpu_s=3600)


def test_relative_paths_resolve_against_the_config_files_folder_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    write(project / "scripts", TURNS, "turns.yaml")
    write(project, """\
        version: 1
        workspace: {root: work/spaces}
        agents:
          main:
            model: {builtin: script, path: scripts/turns.yaml}
        """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    config = load_config(Path("..") / "project" / "agentloom.yaml")

    assert config.base_dir == project.resolve()
    assert config.base_dir.is_absolute()
    assert config.workspace_root() == project.resolve() / "work" / "spaces"
    assert config.resolve_path("scripts/turns.yaml") == project.resolve() / "scripts" / "turns.yaml"


def test_an_absolute_workspace_root_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "shared" / "workspaces"
    config = load_config(write(tmp_path, MINIMAL + f"workspace: {{root: {str(root)!r}}}\n"))
    assert config.workspace_root() == root


def test_the_default_store_is_an_absolute_sqlite_url_beside_the_config_that_open_store_accepts(
    tmp_path: Path,
) -> None:
    config = load_config(write(tmp_path, MINIMAL))
    url = config.default_store_url()
    assert url == f"sqlite:///{tmp_path.resolve()}/.agentloom/agentloom.db"
    assert url.startswith("sqlite:////")
    store = open_store(url)
    try:
        assert (tmp_path / ".agentloom" / "agentloom.db").is_file()
    finally:
        store.close()


def test_a_config_is_frozen(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL))
    with pytest.raises(ValidationError):
        config.agents["main"].limits.max_steps = 3  # type: ignore[misc]
    with pytest.raises(ValidationError):
        config.version = 2  # type: ignore[assignment]


def test_a_loaded_config_round_trips_through_its_dump(tmp_path: Path) -> None:
    write(tmp_path, TURNS, "turns.yaml")
    config = load_config(write(tmp_path, EXAMPLE))
    again = parse_config(config.model_dump(mode="json"), base_dir=tmp_path)
    # the same values; only the loaded one knows its file (``source``)
    assert again.model_dump() == config.model_dump() and again.base_dir == config.base_dir
    assert again.source() is None and config.source() is not None


def test_builtin_tool_names_are_the_ones_the_environment_serves() -> None:
    assert BUILTIN_TOOLS == ENVIRONMENT_TOOLS
    assert {"fs.read", "fs.write", "fs.list", "fs.edit", "fs.glob", "fs.grep", "exec"} <= set(BUILTIN_TOOLS)


def test_sdk_tool_entries_are_not_imported_at_load_time(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, MINIMAL + "    tools: [fs.read, no_such_module:tool]\n"))
    assert config.agents["main"].tools == ("fs.read", "no_such_module:tool")


# -- the file itself -----------------------------------------------------------------------------


def test_a_version_2_file_is_refused_naming_the_version_key(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL.replace("version: 1", "version: 2") + "skills: {}\n")
    assert error.code == "CONFIG_VERSION"
    assert "agentloom.yaml: version: this AgentLoom reads configuration version 1 only (got 2)" in str(error)
    assert "skills" not in str(error)  # another version's keys are not judged by version 1


def test_a_missing_version_says_to_add_version_1(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL.replace("version: 1\n", ""))
    assert error.code == "CONFIG_VERSION"
    assert "version: is missing; add `version: 1`" in str(error)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_file_says_it_is_empty_and_shows_a_minimal_config(tmp_path: Path, text: str) -> None:
    error = load_error(tmp_path, text)
    assert error.code == "CONFIG_EMPTY"
    assert "the file is empty" in str(error)
    assert "model: {builtin: test}" in str(error)


def test_a_yaml_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    error = load_error(tmp_path, "version: 1\nagents:\n  main:\n    model: {builtin: test\n")
    assert error.code == "CONFIG_SYNTAX"
    assert str(error).startswith(f"{tmp_path / 'agentloom.yaml'}:5:")
    assert "not valid YAML" in str(error)


def test_a_key_written_twice_is_refused_with_its_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL + "  main:\n    model: {builtin: test}\n")
    assert error.code == "CONFIG_SYNTAX"
    assert ":5:3: not valid YAML: key 'main' is written twice" in str(error)


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, "- version: 1\n")
    assert "(top level): must be a mapping" in str(error)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.yaml")
    assert caught.value.code == "CONFIG_NOT_FOUND"
    assert "nope.yaml: no such config file" in str(caught.value)


# -- every mistake names its key path and the fix ------------------------------------------------

AGENT = "version: 1\nconnections:\n  local: {preset: openai, api_key_env: LOCAL_KEY}\nagents:\n  main:\n"
HOOKS = AGENT + "    model: {builtin: test}\n    hooks:\n"

CASES = {
    "limit_below_minimum": (
        AGENT + "    model: {builtin: test}\n    limits: {batch_concurrency: 0}\n",
        "agents.main.limits.batch_concurrency: must be at least 1 (got 0)"),
    "deadline_not_positive": (
        AGENT + "    model: {builtin: test}\n    limits: {run_deadline_s: 0}\n",
        "agents.main.limits.run_deadline_s: must be greater than 0 (got 0)"),
    "idle_timeout_not_positive": (
        AGENT + "    model: {builtin: test}\n    limits: {stream_idle_timeout_s: -1}\n",
        "agents.main.limits.stream_idle_timeout_s: must be greater than 0 (got -1)"),
    "max_steps_zero": (
        AGENT + "    model: {builtin: test}\n    limits: {max_steps: 0}\n",
        "agents.main.limits.max_steps: must be at least 1 (got 0)"),
    "token_quota_zero": (
        AGENT + "    model: {builtin: test}\n    limits: {max_total_tokens: 0}\n",
        "agents.main.limits.max_total_tokens: must be at least 1 (got 0)"),
    "retry_attempts_zero": (
        AGENT + "    model: {builtin: test}\n    retry: {max_attempts: 0}\n",
        "agents.main.retry.max_attempts: must be at least 1 (got 0)"),
    "retry_interval_negative": (
        AGENT + "    model: {builtin: test}\n    retry: {interval_s: -1}\n",
        "agents.main.retry.interval_s: must be at least 0 (got -1)"),
    "retry_enabled_not_bool": (
        AGENT + "    model: {builtin: test}\n    retry: {enabled: maybe}\n",
        "agents.main.retry.enabled: must be true or false (got 'maybe')"),
    "unknown_tool": (
        AGENT + "    model: {builtin: test}\n    tools: [fs.read, fs.write, fs.raed]\n",
        "agents.main.tools[2]: unknown tool 'fs.raed'; did you mean 'fs.read'? built-ins are fs.read, "),
    "tool_listed_twice": (
        AGENT + "    model: {builtin: test}\n    tools: [fs.read, exec, fs.read]\n",
        "agents.main.tools[2]: 'fs.read' is listed twice (also at [0]); remove one"),
    "skill_read_listed_without_skills": (
        AGENT + "    model: {builtin: test}\n    tools: [skill.read]\n",
        "agents.main.tools[0]: 'skill.read' comes with skills: an agent with skills: gets "
        "skill.list and skill.read; add skills: or remove it"),
    "unknown_connection": (
        AGENT + "    model: {connection: loca, name: m}\n",
        "agents.main.model.connection: no connection named 'loca'; did you mean 'local'? defined: local"),
    "unknown_preset": (
        AGENT.replace("preset: openai", "preset: opena") + "    model: {builtin: test}\n",
        "connections.local.preset: unknown preset 'opena'; did you mean 'openai'? known presets: aliyun, "),
    "protocol_the_preset_does_not_speak": (
        AGENT.replace("preset: openai", "preset: openai, protocol: responses")
        + "    model: {builtin: test}\n",
        "connections.local.protocol: preset 'openai' speaks 'chat', not 'responses'; remove protocol, "
        "or use a preset that speaks responses: openai-responses"),
    "unknown_protocol": (
        AGENT.replace("preset: openai", "preset: openai, protocol: grpc") + "    model: {builtin: test}\n",
        "connections.local.protocol: must be 'chat' or 'responses' (got 'grpc')"),
    "unknown_variant": (
        AGENT + "    model: {connection: local, name: m, variant: coding_plan}\n",
        "agents.main.model.variant: preset 'openai' has no variant 'coding_plan'; choose one of default"),
    "api_key_written_inline": (
        AGENT.replace("api_key_env: LOCAL_KEY", "api_key_env: 'sk-abc123'") + "    model: {builtin: test}\n",
        "connections.local.api_key_env: must be an environment variable name"),
    "output_limit_fills_the_window": (
        AGENT + "    model: {connection: local, name: m, window: 1000, output_limit: 1000}\n",
        "agents.main.model.output_limit: must be less than window (1000)"),
    "missing_model": (
        AGENT + "    tools: [fs.read]\n",
        "agents.main.model: is required; add it"),
    "unknown_builtin_model": (
        AGENT + "    model: {builtin: tset}\n",
        "agents.main.model: unknown builtin model 'tset'; built-ins are test, script"),
    "model_of_no_known_form": (
        AGENT + "    model: {name: m}\n",
        "agents.main.model: must be one of {connection: <connection name>, name: <model id>}, "
        "{builtin: test} or {builtin: script, path: <turns file>}"),
    "connection_model_without_a_name": (
        AGENT + "    model: {connection: local}\n",
        "agents.main.model.name: is required; add it"),
    "script_without_a_path": (
        AGENT + "    model: {builtin: script}\n",
        "agents.main.model.path: is required; add it"),
    "script_file_missing": (
        AGENT + "    model: {builtin: script, path: missing.yaml}\n",
        "agents.main.model.path: no script file at "),
    "executor_unknown": (
        AGENT + "    model: {builtin: test}\n    executors: [helpr]\n  helper:\n    model: {builtin: test}\n",
        "agents.main.executors[0]: no agent named 'helpr'; did you mean 'helper'? defined: helper"),
    "executor_is_itself": (
        AGENT + "    model: {builtin: test}\n    executors: [main]\n",
        "agents.main.executors[0]: an agent cannot be its own executor; remove it"),
    "executor_delegates_further": (
        AGENT + "    model: {builtin: test}\n    executors: [helper]\n"
        "  helper:\n    model: {builtin: test}\n    executors: [leaf]\n  leaf:\n    model: {builtin: test}\n",
        "agents.main.executors[0]: agent 'helper' has executors of its own; delegation is one level deep"),
    "no_agents": (
        "version: 1\nagents: {}\n",
        "agents: must have at least 1 entry (got none)"),
    "agents_missing": (
        "version: 1\n",
        "agents: is required; add it"),
    "bad_agent_name": (
        "version: 1\nagents:\n  'my agent':\n    model: {builtin: test}\n",
        "agents['my agent']: a name must start with a letter"),
    "hook_timing_unknown": (
        HOOKS + "      - {timing: during, handler: {ref: 'h:f'}}\n",
        "agents.main.hooks[0].timing: must be 'before' or 'after' (got 'during')"),
    "hook_event_unknown": (
        HOOKS + "      - {timing: before, event: file, handler: {ref: 'h:f'}}\n",
        "agents.main.hooks[0].event: must be 'tool', 'model' or 'delegation' (got 'file')"),
    "hook_ref_malformed": (
        HOOKS + "      - {timing: before, handler: {ref: my_hooks.guard}}\n",
        "agents.main.hooks[0].handler.ref: must look like 'package.module:function' (got 'my_hooks.guard')"),
    "hook_kind_unknown": (
        HOOKS + "      - {timing: before, handler: {kind: wasm, ref: 'h:f'}}\n",
        "agents.main.hooks[0].handler: unknown handler kind 'wasm'; use kind: python, command, http or mcp"),
    "hook_timeout_zero": (
        HOOKS + "      - {timing: after, handler: {ref: 'h:f'}, timeout_s: 0}\n",
        "agents.main.hooks[0].timeout_s: must be greater than 0 (got 0)"),
    "hook_status_on_a_before_hook": (
        AGENT + "    model: {builtin: test}\n    hooks:\n"
        "      - {timing: before, match: {status: failed}, handler: {ref: 'h:f'}}\n",
        "agents.main.hooks[0].match.status: applies to after hooks only"),
    "hook_id_taken": (
        HOOKS + "      - {timing: before, handler: {ref: 'h:f'}}\n"
        "      - {hook_id: 'main.hooks[0]', timing: after, handler: {ref: 'h:f'}}\n",
        "agents.main.hooks[1].hook_id: hook id 'main.hooks[0]' is already used by agents.main.hooks[0]"),
    "sandbox_flag_not_bool": (
        MINIMAL + "sandbox: {egress: sometimes}\n",
        "sandbox.egress: must be true or false (got 'sometimes')"),
    "number_given_as_text": (
        AGENT + "    model: {builtin: test}\n    limits: {max_steps: '3'}\n",
        "agents.main.limits.max_steps: must be a whole number (got '3')"),
    "number_given_as_a_flag": (
        AGENT + "    model: {builtin: test}\n    limits: {batch_concurrency: true}\n",
        "agents.main.limits.batch_concurrency: must be a whole number (got true)"),
    "flag_given_as_a_number": (
        AGENT + "    model: {builtin: test}\n    retry: {enabled: 1}\n",
        "agents.main.retry.enabled: must be true or false (got 1)"),
    "limits_not_a_mapping": (
        AGENT + "    model: {builtin: test}\n    limits: 5\n",
        "agents.main.limits: must be a mapping (got 5)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_error_names_key_and_fix(tmp_path: Path, case: str) -> None:
    text, expected = CASES[case]
    error = load_error(tmp_path, text)
    assert error.code == "CONFIG_INVALID"
    assert expected in str(error)


def test_config_error_names_key_and_fix_for_an_unknown_key_listing_the_allowed_keys(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL + "    retrys: {enabled: true}\nplugins: {}\n")
    lines = str(error).splitlines()
    assert ("agents.main.retrys: unknown key 'retrys'; did you mean 'retry'? allowed keys at agents.main: "
            "description, executors, hooks, instructions, limits, model, output, retry, skills, "
            "tools") in lines
    assert ("plugins: unknown key 'plugins'; allowed keys at the top level: "
            "a2a_agents, agents, commands, connections, intents, mcp_servers, projects, recovery, "
            "sandbox, skills, telemetry, version, workers, workflows, workspace") in lines


def test_config_error_names_key_and_fix_for_an_unknown_key_inside_a_model_choice(tmp_path: Path) -> None:
    error = load_error(tmp_path, AGENT + "    model: {builtin: test, path: x.yaml}\n")
    assert ("agents.main.model.path: unknown key 'path'; allowed keys at agents.main.model: builtin"
            in str(error))


def test_config_error_names_key_and_fix_for_a_broken_script_file(tmp_path: Path) -> None:
    write(tmp_path, "turns: []\n", "turns.yaml")
    error = load_error(tmp_path, AGENT + "    model: {builtin: script, path: turns.yaml}\n")
    assert "agents.main.model.path: script " in str(error)
    assert "key 'turns'" in str(error)


def test_config_error_lists_every_problem_in_one_message_one_per_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, AGENT + "    model: {builtin: test}\n"
                       "    tools: [fs.raed]\n    limits: {batch_concurrency: 0, max_steps: 0}\n")
    lines = str(error).splitlines()
    assert lines[0] == f"{tmp_path / 'agentloom.yaml'}: 3 problems:"
    assert [line.split(":")[0] for line in lines[1:]] == [
        "agents.main.tools[0]",
        "agents.main.limits.batch_concurrency",
        "agents.main.limits.max_steps",
    ]


def test_config_error_for_one_problem_is_one_line_headed_by_the_file(tmp_path: Path) -> None:
    error = load_error(tmp_path, AGENT + "    model: {builtin: test}\n    limits: {batch_concurrency: 0}\n")
    assert str(error) == (f"{tmp_path / 'agentloom.yaml'}: agents.main.limits.batch_concurrency: "
                          "must be at least 1 (got 0)")


PRESET_AND_SCRIPT_MISTAKES = (
    "version: 1\nconnections:\n  local: {preset: opena, api_key_env: LOCAL_KEY}\n"
    "  other: {preset: openai, api_key_env: LOCAL_KEY}\nagents:\n"
    "  main:\n    model: {connection: other, name: m, variant: coding_plan}\n"
    "  scripted:\n    model: {builtin: script, path: turns.yaml}\n"
)


def test_13_6_preset_and_script_checks_run_at_build_time_every_problem_at_once(tmp_path: Path) -> None:
    """Config is core: loading it needs no provider preset or script parser. What only they can
    see fails at build time — before any run — in the load-time error format."""
    write(tmp_path, "turns: []\n", "turns.yaml")
    config = load_config(write(tmp_path, PRESET_AND_SCRIPT_MISTAKES))
    with pytest.raises(ConfigError) as caught:
        agent_specs(config)
    lines = str(caught.value).splitlines()
    assert caught.value.code == "CONFIG_INVALID"
    assert lines[0] == f"{tmp_path / 'agentloom.yaml'}: 3 problems:"
    assert [line.split(":")[0] for line in lines[1:]] == [
        "connections.local.preset", "agents.main.model.variant", "agents.scripted.model.path"]


def test_13_6_build_time_error_is_headed_by_parse_config_source(tmp_path: Path) -> None:
    data = {"version": 1, "connections": {"c": {"preset": "opena"}},
            "agents": {"main": {"model": {"builtin": "test"}}}}
    config = parse_config(data, base_dir=tmp_path, source="inline")
    assert config.origin == "inline"
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    assert str(caught.value).startswith("inline: connections.c.preset: unknown preset 'opena'; ")


def test_parse_config_names_its_source_and_resolves_against_base_dir(tmp_path: Path) -> None:
    write(tmp_path, TURNS, "turns.yaml")
    data = {"version": 1, "agents": {"main": {"model": {"builtin": "script", "path": "turns.yaml"}}}}
    config = parse_config(data, base_dir=tmp_path, source="inline")
    assert isinstance(config, Config)
    with pytest.raises(ConfigError) as caught:
        parse_config(data, base_dir=tmp_path / "elsewhere", source="inline")
    assert str(caught.value).startswith("inline: agents.main.model.path: no script file at ")


def test_i11_10_a_bare_exponent_says_yaml_reads_it_as_text_and_how_to_write_it(tmp_path: Path) -> None:
    error = load_error(tmp_path, MINIMAL + "sandbox: {max_file_bytes: 1e9}\n")
    assert "sandbox.max_file_bytes: must be" in str(error)
    assert "YAML reads 1e9 as text: write 1000000000 or 1.0e+09" in str(error)


def test_13_5_hook_keys_at_and_id_fail_to_load_naming_timing_and_hook_id(tmp_path: Path) -> None:
    error = load_error(tmp_path, HOOKS + "      - {id: guard, at: before, handler: {ref: 'h:f'}}\n")
    assert error.code == "CONFIG_INVALID"
    assert str(error).splitlines()[1:] == [
        "agents.main.hooks[0].id: `id` was renamed to `hook_id`; write `hook_id:` with the same value",
        "agents.main.hooks[0].at: `at` was renamed to `timing`; write `timing:` with the same value",
    ]


def test_13_5_hooks_are_written_with_timing_and_hook_id(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HOOKS + "      - {hook_id: guard, timing: after, "
                                         "handler: {ref: 'h:f'}}\n"))
    hook = config.agents["main"].hooks[0]
    assert (hook.hook_id, hook.timing) == ("guard", "after")
    assert config.model_dump(mode="json")["agents"]["main"]["hooks"][0]["timing"] == "after"
