"""Issue 16, Claude Code hook import (acceptance 3) and the ``format: claude-code`` shim.

A real Claude Code style ``.claude/settings.json`` with two command hooks — a Python script
denying ``Bash`` commands containing ``rm -rf`` with exit 2, and one rewriting ``Write`` with
``updatedInput`` — imported with ``agentloom hooks import-claude --write``, then enforced in a
run on the script model with the hooks run in the sandbox (bubblewrap, else Landlock): the model
sees the denial reason and the executed arguments, ``runs show`` (SQLite and PostgreSQL)
records proposed vs executed arguments and the hook decisions. Then the mapping itself: field
names both ways, matchers, refusals, and the shim's reading of Claude Code answers.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from tests.cli.support import Cli
from tests.sandbox.conftest import require_backend, searchable

from agentloom.config import load_config
from agentloom.hooks import HookEvent
from agentloom.hooks.claude import (
    ClaudeHookError,
    ClaudeImportError,
    ClaudeMappingError,
    capability_globs,
    claude_decision,
    claude_event,
    from_claude_input,
    import_settings,
    to_claude_input,
)
from agentloom.hooks.claude.tools import FIELDS, KEPT
from agentloom.hooks.decision import InvalidDecision
from agentloom.tools.builtin.exec import EXEC_SCHEMA
from agentloom.tools.builtin.fs import SCHEMAS

NO_RM_RF = '''\
import json, sys
event = json.load(sys.stdin)
assert event["hook_event_name"] == "PreToolUse", event
command = event["tool_input"].get("command", "")
if event["tool_name"] == "Bash" and "rm -rf" in command:
    print(f"rm -rf is not allowed here (blocked: {command})", file=sys.stderr)
    sys.exit(2)
'''

TO_DRAFTS = '''\
import json, sys
event = json.load(sys.stdin)
tool_input = event["tool_input"]
assert event["tool_name"] == "Write" and set(tool_input) == {"file_path", "content"}, event
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse", "permissionDecision": "allow",
    "permissionDecisionReason": "writes go to drafts/",
    "updatedInput": {"file_path": "drafts/" + tool_input["file_path"],
                     "content": tool_input["content"] + "\\n-- reviewed"}}}))
'''

SETTINGS = {"hooks": {"PreToolUse": [
    {"matcher": "Bash", "hooks": [{"type": "command", "timeout": 20,
                                   "command": 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/no_rm_rf.py'}]},
    {"matcher": "Write", "hooks": [{"type": "command", "timeout": 20,
                                    "command": "python3 .claude/hooks/to_drafts.py"}]},
]}}

TURNS = """\
turns:
  - tool_calls:
      - {id: c-rm, name: exec, arguments: {argv: [rm, -rf, build]}}
  - expect: {role: tool, contains: ["rm -rf is not allowed here (blocked: rm -rf build)"]}
    tool_calls:
      - {id: c-w, name: fs_write, arguments: {path: notes.txt, content: hello}}
  - expect: {role: tool, contains: ['"path": "drafts/notes.txt"', "reviewed"]}
    text: done
"""

CONFIG = """\
version: 1
# the team's agent; hooks come from Claude Code
agents:
  main:
    model: {builtin: script, path: turns.yaml}   # scripted turns
    tools: [exec, fs.write]
"""


def _project(folder: Path, settings: dict[str, Any] = SETTINGS) -> Path:
    hooks = folder / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "no_rm_rf.py").write_text(NO_RM_RF, encoding="utf-8")
    (hooks / "to_drafts.py").write_text(TO_DRAFTS, encoding="utf-8")
    (folder / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    (folder / "agentloom.yaml").write_text(CONFIG, encoding="utf-8")
    for path in (folder, folder / ".claude", hooks):  # the sandbox user reads the project
        os.chmod(path, 0o755)
    searchable(folder)
    return folder


@pytest.mark.parametrize("backend", ["bubblewrap", "landlock"])
def test_i16_3_imported_claude_hooks_deny_rm_rf_and_rewrite_a_write_in_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, durable_store_url: str,
) -> None:
    require_backend(backend)
    monkeypatch.delenv("AGENTLOOM_STORE", raising=False)
    cli = Cli(durable_store_url)
    project = _project(tmp_path / "proj")
    config = project / "agentloom.yaml"

    imported = cli("hooks", "import-claude", str(project / ".claude" / "settings.json"),
                   "--write", str(config))
    assert imported.exit_code == 0, imported.stderr
    text = config.read_text(encoding="utf-8")
    assert "# the team's agent" in text and "# scripted turns" in text  # comments kept
    hooks = load_config(config).agents["main"].hooks
    assert [(h.hook_id, h.match.capability, h.handler.format) for h in hooks] == [  # type: ignore[union-attr]
        ("claude.PreToolUse[0].hooks[0]", "exec", "claude-code"),
        ("claude.PreToolUse[1].hooks[0]", "fs.write", "claude-code")]
    assert hooks[0].hook_timeout_s == 20
    config.write_text(text + f"sandbox: {{backend: {backend}}}\n", encoding="utf-8")

    out = cli.json("run", str(config), "clean up and take a note", "--store", cli.store)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    ops = {o["call_id"]: o for o in shown["operations"] if o["kind"] == "tool"}
    rm = ops["c-rm"]
    assert rm["status"] == "denied" and rm["attempts"]["count"] == 0
    assert rm["proposed_arguments"] == {"argv": ["rm", "-rf", "build"]}
    assert rm["executed_arguments"] is None
    (row,) = rm["hooks"]
    assert (row["hook_id"], row["status"], row["decision"]) == (
        "claude.PreToolUse[0].hooks[0]", "succeeded", "deny")
    assert "rm -rf is not allowed here" in row["reason"]
    write = ops["c-w"]
    assert write["status"] == "succeeded"
    assert write["proposed_arguments"] == {"path": "notes.txt", "content": "hello"}
    assert write["executed_arguments"] == {"path": "drafts/notes.txt",
                                           "content": "hello\n-- reviewed"}
    (row,) = write["hooks"]
    assert (row["hook_id"], row["status"], row["decision"]) == (
        "claude.PreToolUse[1].hooks[0]", "succeeded", "allow")
    human = cli("runs", "show", out["run_id"], "--store", cli.store)
    assert "hook claude.PreToolUse[0].hooks[0] (before): succeeded, deny" in human.stdout


def test_i16_3_import_without_write_prints_yaml_and_refuses_other_events(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", {"hooks": {
        **SETTINGS["hooks"],
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    settings = project / ".claude" / "settings.json"
    cli = Cli("unused")

    refused = cli("hooks", "import-claude", str(settings))
    assert refused.exit_code == 2
    assert "Stop, SessionStart" in refused.stderr and "--skip-unsupported" in refused.stderr

    printed = cli("hooks", "import-claude", str(settings), "--skip-unsupported")
    assert printed.exit_code == 0, printed.stderr
    assert "skipped hook events with no AgentLoom equivalent: Stop, SessionStart" in \
        printed.stderr
    assert "format: claude-code" in printed.stdout and "capability: fs.write" in printed.stdout


def test_i16_3_import_write_refuses_a_config_outside_the_project_folder(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj")
    other = tmp_path / "elsewhere.yaml"
    other.write_text(CONFIG, encoding="utf-8")

    result = Cli("unused")("hooks", "import-claude", str(project / ".claude" / "settings.json"),
                           "--write", str(other))

    assert result.exit_code == 2 and "not the Claude Code project folder" in result.stderr
    assert other.read_text(encoding="utf-8") == CONFIG


ASK = """\
import json
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                         "permissionDecision": "ask",
                                         "permissionDecisionReason": "may I write a?"}}))
"""


def test_i16_3_a_claude_hook_answering_ask_makes_the_run_wait_for_a_person(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGENTLOOM_STORE", raising=False)
    cli = Cli(f"sqlite:///{tmp_path / 'agentloom.db'}")
    project = _project(tmp_path / "proj")
    (project / "ask.py").write_text(ASK, encoding="utf-8")
    (project / "turns.yaml").write_text(
        "turns:\n  - tool_calls:\n      - {id: c-w, name: fs_write, arguments: {path: a, "
        "content: x}}\n  - text: done\n", encoding="utf-8")
    config = project / "agentloom.yaml"
    config.write_text(CONFIG + "    hooks:\n      - {hook_id: asks, timing: before, "
                      "on_failure: deny, handler: {kind: command, format: claude-code, "
                      "command: python3 ask.py}}\n", encoding="utf-8")

    out = cli.json("run", str(config), "write a", "--store", cli.store, exit_code=3)

    assert out["status"] == "waiting"
    (call,) = out["waiting"]
    assert call["question"] == "may I write a?"  # permissionDecisionReason
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    (write,) = [o for o in shown["operations"] if o.get("call_id") == "c-w"]
    assert write["phase"] == "awaiting_approval" and write["attempts"]["count"] == 0
    (row,) = write["hooks"]
    assert (row["status"], row["decision"]) == ("succeeded", "ask")


def test_i16_3_import_write_appends_to_an_agents_existing_hooks_keeping_comments(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path / "proj")
    config = project / "agentloom.yaml"
    config.write_text(CONFIG + "    hooks:  # ours first\n"
                      "      - {hook_id: mine, timing: before, handler: {ref: \"g:check\"}}\n"
                      "  other:  # a second agent\n    model: {builtin: test}\n",
                      encoding="utf-8")

    result = Cli("unused")("hooks", "import-claude", str(project / ".claude" / "settings.json"),
                           "--write", str(config))

    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr
    text = config.read_text(encoding="utf-8")
    assert "# ours first" in text and "# a second agent" in text
    agents = load_config(config).agents
    assert [h.hook_id for h in agents["main"].hooks] == [
        "mine", "claude.PreToolUse[0].hooks[0]", "claude.PreToolUse[1].hooks[0]"]
    assert agents["other"].hooks == ()


# -- the mapping ---------------------------------------------------------------------------------

BOTH_WAYS = [
    ("fs.write", {"path": "a.txt", "content": "x", "mode": "replace", "if_match": "e1"},
     {"file_path": "a.txt", "content": "x", "mode": "replace", "if_match": "e1"}),
    ("fs.edit", {"path": "a.txt", "old_text": "a", "new_text": "b", "expected_matches": 2},
     {"file_path": "a.txt", "old_string": "a", "new_string": "b", "expected_matches": 2}),
    ("fs.read", {"path": "a.txt", "offset": 3, "limit": 9},
     {"file_path": "a.txt", "offset": 3, "limit": 9}),
    ("exec", {"shell_script": "ls -l | wc", "timeout_s": 2.5, "cwd": "/work"},
     {"command": "ls -l | wc", "timeout": 2500, "cwd": "/work"}),
    ("exec", {"argv": ["echo", "two words"]}, {"command": "echo 'two words'"}),
    ("fs.glob", {"pattern": "**/*.py", "root": "src"}, {"pattern": "**/*.py", "path": "src"}),
    ("fs.grep", {"pattern": "TODO", "paths": ["a"], "literal": True},
     {"pattern": "TODO", "paths": ["a"], "literal": True}),
    ("mcp.s.t", {"any": 1}, {"any": 1}),
]


@pytest.mark.parametrize(("capability", "agentloom", "claude"), BOTH_WAYS)
def test_i16_3_tool_input_fields_map_both_ways_exactly(
    capability: str, agentloom: dict[str, Any], claude: dict[str, Any],
) -> None:
    assert to_claude_input(capability, agentloom) == claude
    assert from_claude_input(capability, claude, agentloom) == agentloom


def test_i16_3_the_field_tables_cover_each_tools_input_schema_exactly() -> None:
    schemas = {key: schema for key, (_, schema) in SCHEMAS.items()} | {"exec": EXEC_SCHEMA}
    for capability, fields in FIELDS.items():
        assert set(fields) | KEPT[capability] == set(schemas[capability]["properties"])
        assert not set(fields) & KEPT[capability]


def test_i16_3_unknown_updated_input_fields_are_errors_naming_them() -> None:
    with pytest.raises(ClaudeMappingError, match="'replace_all'"):
        from_claude_input("fs.edit", {"file_path": "a", "old_string": "a", "new_string": "b",
                                      "replace_all": True}, {})
    with pytest.raises(ClaudeMappingError, match="'path'"):  # AgentLoom's name of file_path
        from_claude_input("fs.write", {"path": "a", "content": "x"}, {})


@pytest.mark.parametrize(("matcher", "globs"), [
    ("Write|Edit", ("fs.write", "fs.edit")), ("Write, Edit", ("fs.write", "fs.edit")),
    ("mcp__s__t", ("mcp.s.t",)), ("*", ("*",)), ("", ("*",)), (None, ("*",)),
    ("^(Read|Grep)$", ("fs.read", "fs.grep")), ("^Bash$", ("exec",)), ("Glob", ("fs.glob",)),
    ("mcp__memory__.*", ("mcp.memory.*",)),
])
def test_i16_3_matchers_become_capability_globs(matcher: str | None,
                                                globs: tuple[str, ...]) -> None:
    assert capability_globs(matcher) == globs


@pytest.mark.parametrize(("matcher", "said"), [
    ("Edit.*", "'Edit.*' is a regex with no exact"), ("(Write|Edit)", "is a regex"),
    ("NotebookEdit", "'NotebookEdit' has no AgentLoom equivalent"),
    ("mcp__memory", "'mcp__memory' has no AgentLoom equivalent"),
])
def test_i16_3_inexact_matchers_are_refused_naming_them(matcher: str, said: str) -> None:
    with pytest.raises(ClaudeImportError, match=_re(said)):
        capability_globs(matcher)


@pytest.mark.parametrize(("hook", "said"), [
    ({"type": "prompt", "prompt": "is this safe?"}, "hook type 'prompt' is not supported"),
    ({"type": "agent", "prompt": "x"}, "hook type 'agent' is not supported"),
    ({"type": "command", "command": "x", "async": True}, "field 'async' is not supported"),
])
def test_i16_3_unsupported_hook_types_and_fields_are_refused_at_import(
    tmp_path: Path, hook: dict[str, Any], said: str,
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash",
                                                              "hooks": [hook]}]}}))
    with pytest.raises(ClaudeImportError, match=_re(said)):
        import_settings(settings)


def test_i16_3_a_script_answering_ask_imports_it_hands_the_call_to_a_person(
        tmp_path: Path) -> None:
    (tmp_path / "ask.py").write_text(ASK)
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "python3 ask.py"}]}]}}))
    (hook,) = import_settings(settings).hooks
    assert hook["handler"]["command"] == "python3 ask.py"


def test_i16_3_an_alternation_matcher_imports_one_hook_per_capability(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [
        {"type": "command", "command": "./check.sh"}]}]}}))
    hooks = import_settings(settings).hooks
    assert [(h["hook_id"], h["timing"], h["match"]) for h in hooks] == [
        ("claude.PostToolUse[0].hooks[0].fs.write", "after", {"capability": "fs.write"}),
        ("claude.PostToolUse[0].hooks[0].fs.edit", "after", {"capability": "fs.edit"})]
    assert hooks[0]["handler"] == {"kind": "command", "format": "claude-code",
                                   "command": "./check.sh", "timeout_s": 600.0}


# -- the shim ------------------------------------------------------------------------------------


def _event(capability: str, payload: dict[str, Any], *, timing: str = "before",
           result: dict[str, Any] | None = None) -> HookEvent:
    return HookEvent(timing=timing, event="tool", capability=capability,  # type: ignore[arg-type]
                     exposed_name=capability.replace(".", "_"), role="main", run_id="run-1",
                     operation_id="op-1", purpose=None, payload=MappingProxyType(payload),
                     payload_version=0, proposed_payload=MappingProxyType(payload),
                     result=None if result is None else MappingProxyType(result))


def test_i16_3_the_shim_writes_the_stdin_claude_code_scripts_expect() -> None:
    before = json.loads(claude_event(_event("exec", {"shell_script": "ls"}), cwd="/w"))
    assert before == {"session_id": "run-1", "hook_event_name": "PreToolUse", "cwd": "/w",
                      "tool_name": "Bash", "tool_input": {"command": "ls"},
                      "tool_use_id": "op-1"}
    after = json.loads(claude_event(_event("mcp.s.t", {"q": 1}, timing="after",
                                           result={"status": "succeeded"}), cwd="/w"))
    assert after["hook_event_name"] == "PostToolUse" and after["tool_name"] == "mcp__s__t"
    assert after["tool_input"] == {"q": 1} and after["tool_response"] == {"status": "succeeded"}


def _answer(out: Any, event: HookEvent) -> dict[str, Any]:
    return claude_decision(json.dumps(out).encode(), event, source="hook 'h'", scrub=str)


def test_i16_3_the_shim_reads_permission_decisions_and_updated_input_as_a_patch() -> None:
    edit = _event("fs.edit", {"path": "a", "old_text": "x", "new_text": "y", "if_match": "e"})
    assert _answer({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                           "permissionDecision": "deny",
                                           "permissionDecisionReason": "no"}}, edit) == {
        "decision": "deny", "reason": "no"}
    patched = _answer({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {
        "file_path": "b", "old_string": "x", "new_string": "z"}}}, edit)
    assert patched == {"decision": "allow", "payload_patch": {"expected_version": 0, "ops": [
        {"op": "remove", "path": "/payload/if_match"},
        {"op": "replace", "path": "/payload/path", "value": "b"},
        {"op": "replace", "path": "/payload/new_text", "value": "z"}]}}
    assert claude_decision(b"plain text is a log line", edit, source="h", scrub=str) == {
        "decision": "allow"}
    with pytest.raises(InvalidDecision, match="'replace_all'"):
        _answer({"hookSpecificOutput": {"updatedInput": {"replace_all": True}}}, edit)


def test_i16_3_the_shim_reads_post_tool_use_block_as_a_deny_after_execution() -> None:
    after = _event("fs.write", {"path": "a", "content": "x"}, timing="after",
                   result={"status": "succeeded"})
    assert _answer({"decision": "block", "reason": "leaks a key"}, after) == {
        "decision": "deny", "reason": "leaks a key"}
    assert _answer({}, after) == {"decision": "allow"}


@pytest.mark.parametrize(("out", "said"), [
    ({"hookSpecificOutput": {"permissionDecision": "defer"}}, "permissionDecision 'defer'"),
    ({"continue": False, "stopReason": "x"}, "continue: false"),
    ({"hookSpecificOutput": {"additionalContext": "x"}}, "'additionalContext'"),
    ({"systemMessage": "hi"}, "'systemMessage'"),
])
def test_i16_3_answers_without_an_agentloom_equivalent_are_hook_failures_naming_them(
    out: dict[str, Any], said: str,
) -> None:
    with pytest.raises(ClaudeHookError, match=_re(said)):
        _answer(out, _event("exec", {"argv": ["ls"]}))


def _re(text: str) -> str:
    return re.escape(text)


def test_i16_3_import_json_prints_one_object_with_or_without_write(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", {"hooks": {
        **SETTINGS["hooks"], "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}})
    settings = str(project / ".claude" / "settings.json")
    config = project / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    cli = Cli("unused")

    printed = cli("hooks", "import-claude", settings, "--skip-unsupported", "--json")
    assert printed.exit_code == 0, printed.stderr
    out = json.loads(printed.stdout)  # stdout is one JSON value, nothing else
    assert out["agent"] == "main" and out["written"] is None and out["skipped"] == ["Stop"]
    assert out["project_dir"] == str(project.resolve())
    assert [h["hook_id"] for h in out["hooks"]] == [
        "claude.PreToolUse[0].hooks[0]", "claude.PreToolUse[1].hooks[0]"]
    assert "Stop" in printed.stderr  # the warning still goes to stderr
    assert config.read_text(encoding="utf-8") == CONFIG  # nothing written without --write

    written = cli.json("hooks", "import-claude", settings, "--skip-unsupported", "--write",
                       str(config))
    assert written["written"] == str(config) and written["hooks"] == out["hooks"]
    assert [h.hook_id for h in load_config(config).agents["main"].hooks] == [
        h["hook_id"] for h in out["hooks"]]

    refused = cli("hooks", "import-claude", settings, "--json")  # Stop, without the skip flag
    assert refused.exit_code == 2
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "CLAUDE_IMPORT" and "Stop" in error["message"]
