"""Issue #16 / 000 §6.1 metadata policy: ``arguments`` / ``argument-hint`` / ``$ARGUMENTS`` /
``$N`` rendered as text only, never a shell — Claude Code's documented semantics
(shared/research/protocols.md §4.2: ``$ARGUMENTS[N]`` and ``$N`` 0-based, shell-style
splitting, unmatched indexes left as written, ``$name`` from ``arguments``, ``\\$1`` a literal,
``ARGUMENTS: <value>`` appended when the body has no ``$ARGUMENTS``). Hostile values come out as
the characters they are; nothing is run or expanded twice. Then through the pipeline: the
scripted model calls ``skill_read`` with arguments, sees the rendered body, and the operation
is recorded with those arguments (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.skills.render import INJECTION_NOTE, render_body

from .support import write_skill

HOSTILE = ["$(rm -rf /)", "`touch /tmp/pwned`", "$1", "$ARGUMENTS", "ünï ✓ 日本", "${HOME}"]


def test_s6_1_arguments_and_positions_are_claude_code_s_0_based_substitutions() -> None:
    body = "all=$ARGUMENTS first=$0 second=$ARGUMENTS[1] third=$2 none=$7 lit=\\$1"

    out = render_body(body, 'fix "the parser" now')

    assert out == "all=fix \"the parser\" now first=fix second=the parser third=now none=$7 lit=$1"


def test_s6_1_named_arguments_take_their_position_unmatched_are_empty() -> None:
    body = "issue $issue on $branch by $owner; $issues stays"

    assert render_body(body, ["42", "main"], names=["issue", "branch", "owner"]) == \
        "issue 42 on main by ; $issues stays\n\nARGUMENTS: 42 main\n"


def test_s6_1_hostile_values_come_out_as_literal_text_never_run_nor_expanded_again(
    tmp_path: Path,
) -> None:
    canary = tmp_path / "pwned"
    values = [*HOSTILE, f"$(touch {canary})"]
    body = "A:$ARGUMENTS\n" + "".join(f"P{i}:${i}\n" for i in range(len(values)))

    out = render_body(body, values)

    assert out.splitlines()[0] == "A:" + " ".join(values)
    assert out.splitlines()[1:] == [f"P{i}:{v}" for i, v in enumerate(values)]
    assert "P2:$1" in out.splitlines()  # a substituted "$1" is not substituted again
    assert not canary.exists()


def test_s6_1_a_text_is_only_split_shell_style_never_evaluated() -> None:
    out = render_body("[$0] [$1] [$2]", "'$(id)' \"`uname`\" a\\ b")

    assert out == "[$(id)] [`uname`] [a b]\n\nARGUMENTS: '$(id)' \"`uname`\" a\\ b\n"
    assert render_body("[$0] [$1]", 'one "unbalanced') == \
        "[one] [\"unbalanced]\n\nARGUMENTS: one \"unbalanced\n"


def test_s6_1_dynamic_injection_is_left_as_text_with_a_note() -> None:
    out = render_body("Status:\n!`git status`\n```!\nls\n```\nDo $0\n", ["it"])

    assert "!`git status`" in out and "```!\nls\n```" in out and "Do it" in out
    assert out.rstrip().endswith(INJECTION_NOTE)


# -- through the pipeline ----------------------------------------------------------------------

BODY = ("# Fix\nFix issue $issue ($0) on branch $1. All: $ARGUMENTS\n"
        "Status: !`git status`\n")
TURNS = """\
turns:
  - tool_calls:
      - {id: r, name: skill_read, arguments: {name: fix, arguments: ["7", "$(rm -rf /)"]}}
  - expect:
      role: tool
      contains: ["Fix issue 7 (7) on branch $(rm -rf /). All: 7 $(rm -rf /)", "not executed",
                 "arguments: issue branch"]
    tool_calls:
      - {id: s, name: skill_read, arguments: {name: fix, arguments: "12 'feature x'"}}
  - expect: {role: tool, contains: "Fix issue 12 (12) on branch feature x. All: 12 'feature x'"}
    tool_calls:
      - {id: p, name: skill_read, arguments: {name: fix}}
  - expect: {role: tool, contains: "Fix issue $issue ($0) on branch $1. All: $ARGUMENTS"}
    tool_calls:
      - {id: q, name: skill_read, arguments: {name: fix, path: notes.md, arguments: "1"}}
  - expect: {role: tool, contains: ["failed", "SKILL.md only"]}
    text: done
"""


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    write_skill(root / "skills", "fix", {"notes.md": "notes $0\n"},
                description="Fixes an issue. Use when asked to fix one.",
                extra="arguments: issue branch\nargument-hint: \"[issue] [branch]\"\n",
                body=BODY)
    (root / "turns.yaml").write_text(TURNS, encoding="utf-8")
    path = root / "agentloom.yaml"
    path.write_text("version: 1\nskills:\n  - {path: ./skills}\n"
                    "agents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
                    "    skills: [fix]\nsandbox: {backend: none}\n", encoding="utf-8")
    return path


def test_issue16_the_model_reads_a_skill_with_arguments_and_sees_it_rendered_recorded(
    config: Path, durable_store_url: str,
) -> None:
    cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)

    out = cli_json("run", str(config), "fix it", "--store", durable_store_url)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    shown = cli_json("runs", "show", out["run_id"], "--store", durable_store_url)
    reads = [o for o in shown["operations"] if o["kind"] == "tool"]
    assert [(o["capability"], o["status"]) for o in reads] == [
        ("skill.read", "succeeded"), ("skill.read", "succeeded"), ("skill.read", "succeeded"),
        ("skill.read", "failed")]
    assert reads[0]["executed_arguments"] == {"name": "fix", "arguments": ["7", "$(rm -rf /)"]}
    assert reads[1]["executed_arguments"]["arguments"] == "12 'feature x'"
    assert "on branch $(rm -rf /)." in reads[0]["effective_result"]
