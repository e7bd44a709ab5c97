"""Issue #16 (000 §6.1, §7.3 ``skill.list/read``): what ``skill_read`` refuses, the large-result
handling it shares with every tool, ``allowed-tools`` / ``disallowed-tools`` narrowing a role's
tools, and the prompt figure of ``bench/skills.py``. Runs from a config on SQLite and
PostgreSQL with the scripted model; no sandbox needed (no ``exec`` call)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.bench.loader import load_bench
from typer.testing import CliRunner

from agentloom.assembly import runtime_from_config
from agentloom.cli.main import app
from agentloom.config import load_config

from .support import write_skill


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def project(root: Path, turns: str, *, tools: str = "exec, fs.read, fs.write",
            skills: str = '"*"') -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = root / "agentloom.yaml"
    config.write_text(
        "version: 1\nskills:\n  - {path: ./skills}\n"
        "agents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        f"    tools: [{tools}]\n    skills: {skills}\nsandbox: {{backend: none}}\n",
        encoding="utf-8")
    return config


REFUSALS = """\
  - tool_calls:
      - {id: a, name: skill_read, arguments: {name: big, path: ../big/SKILL.md}}
  - expect: {role: tool, contains: ["failed", "relative to the skill folder"]}
    tool_calls:
      - {id: b, name: skill_read, arguments: {name: big, path: /etc/passwd}}
  - expect: {role: tool, contains: ["failed", "relative to the skill folder"]}
    tool_calls:
      - {id: c, name: skill_read, arguments: {name: secret-ops}}
  - expect: {role: tool, contains: ["failed", "no skill named 'secret-ops'"]}
    tool_calls:
      - {id: d, name: skill_read, arguments: {name: big, path: references/missing.md}}
  - expect: {role: tool, contains: ["failed", "no stored file 'references/missing.md'"]}
    tool_calls:
      - {id: e, name: skill_read, arguments: {name: big, path: references/large.md}}
  - expect: {role: tool, contains: ["LARGE-HEAD", "result_read"]}
    text: done
"""


def test_issue16_skill_read_refuses_escapes_hidden_and_missing_files_and_previews_large_ones(
    tmp_path: Path, durable_store_url: str,
) -> None:
    root = tmp_path / "p"
    write_skill(root / "skills", "big", {"references/large.md": "LARGE-HEAD\n" + "x" * 40_000})
    write_skill(root / "skills", "secret-ops", extra="disable-model-invocation: true\n")
    config = project(root, REFUSALS)
    cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)

    out = cli_json("run", str(config), "read", "--store", durable_store_url)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    shown = cli_json("runs", "show", out["run_id"], "--store", durable_store_url)
    reads = [o["status"] for o in shown["operations"] if o["capability"] == "skill.read"]
    assert reads == ["failed", "failed", "failed", "failed", "succeeded"]


def test_issue16_allowed_tools_intersect_and_disallowed_tools_remove_never_grant(
    tmp_path: Path, durable_store_url: str,
) -> None:
    root = tmp_path / "p"
    write_skill(root / "skills", "reader", extra="allowed-tools: Read fs.grep exec\n")
    write_skill(root / "skills", "no-shell", extra="disallowed-tools: [Bash]\n")
    write_skill(root / "skills", "plain")
    config = project(root, "  - text: done\n", tools="exec, fs.read, fs.write",
                     skills="[reader, no-shell, plain]")
    cli_json("skills", "import", "--config", str(config), "--store", durable_store_url)

    runtime = runtime_from_config(load_config(config), store=durable_store_url)
    try:
        # fs.write: no skill allows it; exec: allowed by one, disallowed by another (Bash);
        # fs.grep: allowed, but the role never had it
        assert runtime.agents["main"].tool_keys() == ["fs.read", "skill.list", "skill.read"]
        assert asyncio.run(runtime.run("hi")).status == "succeeded"
    finally:
        runtime.kernel.close()


def test_issue16_bench_200_skills_add_at_most_2_kb_per_10_skills_and_no_body() -> None:
    bench = load_bench("skills.py")

    result = bench.measure(200)

    assert result["body_in_prompt"] is False
    assert result["bytes_per_10_skills"] <= bench.TARGET_BYTES_PER_10, result
