"""Issue #16 / 000 §6.1 metadata policy: "``hooks`` in a skill become hook resources that must
be bound explicitly in config". A skill's front matter declares Claude Code hooks (a
PreToolUse ``Bash`` hook running a script of its ``scripts/`` folder that denies a command
holding "forbidden"); unbound they never run and the call goes through; bound with
``{skill: lint}`` (or one of them by id) the call is denied with the script's reason, the
script run with the skill's release folder as its project folder. A skill not in the agent's
``skills:``, a skill without hooks and an id the skill lacks are refused, naming the key.
Scripted model, SQLite and PostgreSQL, a real sandboxed hook process."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentloom.assembly import runtime_from_config
from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.sandbox import SandboxError, make_gateway
from agentloom.sandbox.ports import EnvironmentPolicy

from .support import write_skill

DENY_SH = """\
if grep -q forbidden; then
  echo "the lint skill forbids this command" >&2
  exit 2
fi
exit 0
"""
HOOKS = """\
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: sh "$CLAUDE_PROJECT_DIR/scripts/deny.sh"
"""
TURNS = """\
turns:
  - tool_calls:
      - {id: c-ok, name: exec, arguments: {argv: [echo, fine]}}
  - expect: {role: tool, contains: "fine"}
    tool_calls:
      - {id: c-bad, name: exec, arguments: {argv: [echo, forbidden]}}
  - expect: {role: tool, contains: "%s"}
    text: done
"""


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


@pytest.fixture
def searchable() -> Iterator[Path]:
    """A folder the sandbox uid can pass through (pytest's own are 0700): the workspace root,
    below which the skill's folder is materialised, is inside it."""
    folder = Path(tempfile.mkdtemp(prefix="agentloom-skill-hooks-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def project(root: Path, workspaces: Path, backend: str, hooks: str, expect: str, *,
            skills: str = "[lint]") -> Path:
    write_skill(root / "skills", "lint", {"scripts/deny.sh": DENY_SH},
                description="Lints commands. Use before running one.", extra=HOOKS)
    write_skill(root / "skills", "plain", description="Has no hooks. Use never.")
    (root / "turns.yaml").write_text(TURNS % expect, encoding="utf-8")
    config = root / "agentloom.yaml"
    config.write_text(
        "version: 1\nskills:\n  - {path: ./skills}\n"
        "agents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        f"    tools: [exec]\n    skills: {skills}\n{hooks}"
        f"sandbox: {{backend: {backend}}}\n"
        f"workspace: {{root: {json.dumps(str(workspaces))}}}\n", encoding="utf-8")
    return config


def run(config: Path, store: str) -> tuple[dict[str, Any], dict[str, Any]]:
    cli_json("skills", "import", "--config", str(config), "--store", store)
    out = cli_json("run", str(config), "check", "--store", store)
    assert out["status"] == "succeeded" and out["output"] == "done", out
    shown = cli_json("runs", "show", out["run_id"], "--store", store)
    return out, {o["call_id"]: o for o in shown["operations"] if o["kind"] == "tool"}


def test_issue16_a_skill_s_hooks_unbound_never_run_the_call_goes_through(
    tmp_path: Path, durable_store_url: str, searchable: Path,
) -> None:
    config = project(tmp_path / "p", searchable / "ws", "none", "", "forbidden")

    _, ops = run(config, durable_store_url)

    assert ops["c-bad"]["status"] == "succeeded" and ops["c-bad"]["hooks"] == []
    assert ops["c-ok"]["hooks"] == []


@pytest.mark.parametrize("entry", ["{skill: lint}", '{skill: lint, hook: "PreToolUse[0].hooks[0]"}'])
@pytest.mark.parametrize("backend", ["none", "bubblewrap"])
def test_issue16_a_skill_s_hooks_bound_in_config_deny_with_its_script_s_reason(
    tmp_path: Path, durable_store_url: str, searchable: Path, backend: str, entry: str,
) -> None:
    if backend != "none":
        try:
            make_gateway(EnvironmentPolicy(), backend=backend,  # type: ignore[arg-type]
                         output_dir=searchable / "probe")
        except SandboxError as exc:
            pytest.skip(f"the {backend} sandbox cannot run on this host: {exc}")
    config = project(tmp_path / "p", searchable / "ws", backend,
                     f"    hooks:\n      - {entry}\n", "the lint skill forbids this command")

    _, ops = run(config, durable_store_url)

    bad = ops["c-bad"]
    assert bad["status"] == "denied" and bad["attempts"]["count"] == 0, bad
    (row,) = bad["hooks"]
    assert (row["hook_id"], row["status"], row["decision"]) == (
        "main.skill.lint.PreToolUse[0].hooks[0]", "succeeded", "deny")
    assert "the lint skill forbids this command" in row["reason"]
    ok = ops["c-ok"]
    assert ok["status"] == "succeeded" and [h["decision"] for h in ok["hooks"]] == ["allow"]


def test_issue16_binding_a_skill_not_in_the_agent_s_skills_is_refused_naming_the_key(
    tmp_path: Path, searchable: Path,
) -> None:
    config = project(tmp_path / "p", searchable / "ws", "none", "    hooks:\n"
                     "      - {skill: lint}\n", "x", skills="[plain]")

    with pytest.raises(ConfigError) as caught:
        load_config(config)

    assert "agents.main.hooks[0].skill" in str(caught.value)
    assert "'lint' is not in agents.main.skills" in str(caught.value)


@pytest.mark.parametrize(("entry", "key", "message"), [
    ("{skill: plain}", "agents.main.hooks[0].skill", "skill 'plain'"),
    ('{skill: lint, hook: "PostToolUse[0].hooks[0]"}', "agents.main.hooks[0].hook",
     "its hooks: PreToolUse[0].hooks[0]"),
])
def test_issue16_binding_a_skill_without_those_hooks_fails_the_build_naming_the_key(
    tmp_path: Path, durable_store_url: str, searchable: Path, entry: str, key: str,
    message: str,
) -> None:
    config = project(tmp_path / "p", searchable / "ws", "none", f"    hooks:\n      - {entry}\n",
                     "x", skills="[lint, plain]")
    cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)

    with pytest.raises(ConfigError) as caught:
        runtime_from_config(load_config(config), store=durable_store_url)

    assert key in str(caught.value) and message in str(caught.value)
    if "plain" in entry:
        assert "declares no hooks" in str(caught.value)
