"""Issue #36 (11): structured output as the command line shows it.

An agent with an output schema (``agents.<name>.output``) on the offline ``script`` model
answers prose first. The live view of ``agentloom run`` says ``answer rejected: <reason>`` for
that turn (never ``final answer``); a second prose answer ends the run ``OUTPUT_INVALID``,
whose message quotes the answer — its first 200 characters, then an ellipsis.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

CONFIG = {
    "version": 1,
    "agents": {"main": {
        "model": {"builtin": "script", "path": "turns.yaml"},
        "instructions": "Answer with a verdict.",
        "output": {"name": "verdict", "schema": {
            "type": "object", "properties": {"answer": {"type": "string"}},
            "required": ["answer"]}},
    }},
}
PROSE = "Sure! The answer is yes, and here is why: " + "because " * 40  # over 200 characters


def _project(tmp_path: Path, second: str) -> Path:
    (tmp_path / "agentloom.yaml").write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    (tmp_path / "turns.yaml").write_text(yaml.safe_dump({"turns": [
        {"text": PROSE},
        {"expect": {"role": "user", "contains": "rejected"}, "text": second},
    ]}), encoding="utf-8")
    return tmp_path / "agentloom.yaml"


def _agentloom(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloom", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)


def test_i36_11_the_live_view_says_answer_rejected_for_a_rejected_answer(tmp_path: Path) -> None:
    config = _project(tmp_path, '{"answer": "yes"}')
    done = _agentloom("run", str(config), "Is it so?", "--store",
                      f"sqlite:///{tmp_path / 'r.db'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    turns = [line for line in done.stdout.splitlines() if " model " in f" {line} "]
    assert len(turns) == 2, done.stdout
    rejected, accepted = turns
    assert "answer rejected: the answer is not JSON (Expecting value): 'Sure! The answer is yes" \
        in rejected
    assert "final answer" not in rejected
    assert accepted.rstrip().endswith("final answer")


def test_i36_11_output_invalid_quotes_the_first_200_characters_of_the_answer(tmp_path: Path) -> None:
    config = _project(tmp_path, PROSE)
    done = _agentloom("run", str(config), "Is it so?", "--json", "--store",
                      f"sqlite:///{tmp_path / 'r.db'}", cwd=tmp_path)
    assert done.returncode != 0
    result = json.loads(done.stdout)
    assert result["status"] == "failed"
    error = result["error"]
    assert error["code"] == "OUTPUT_INVALID"
    quoted = repr(PROSE[:200] + "…")
    assert f"the answer is not JSON (Expecting value): {quoted}" in error["message"]
    assert PROSE[:201] not in error["message"]  # the 201st character is not shown
