"""Structured output from the CLI (#12 point 7): ``output: {schema: ...}`` under an agent makes
``agentloom run --json`` print the final answer as parsed JSON (not a string), the human view
print it indented, and an answer that stays invalid after the corrective turn exit 1 with
``OUTPUT_INVALID``. Offline, on the script model."""

from __future__ import annotations

from pathlib import Path

from .support import Cli, write_project

OUTPUT = ("    output:\n"
          "      name: verdict\n"
          "      schema:\n"
          "        type: object\n"
          "        properties: {answer: {type: string}, score: {type: integer}}\n"
          "        required: [answer]\n")
VALID = """\
  - text: '{"answer": "42", "score": 7}'
"""
CORRECTED = """\
  - text: '{"score": 7}'
  - expect: {role: user, contains: "'answer' is a required property"}
    text: '{"answer": "42"}'
"""
INVALID_TWICE = """\
  - text: 'forty-two'
  - text: '{"score": "high"}'
"""


def test_12_7_cli_run_json_prints_the_structured_output_as_parsed_json(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", VALID, tools=["fs.read"], extra=OUTPUT)

    out = cli.json("run", str(config), "what is it?", "--store", cli.store)

    assert out["status"] == "succeeded"
    assert out["output"] == {"answer": "42", "score": 7}
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    assert shown["output"] == {"answer": "42", "score": 7}


def test_12_7_cli_run_prints_the_structured_output_indented(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", VALID, tools=["fs.read"], extra=OUTPUT)

    result = cli("run", str(config), "what is it?", "--store", cli.store)

    assert result.exit_code == 0, result.stderr
    assert '{\n  "answer": "42",\n  "score": 7\n}' in result.stdout


def test_12_7_cli_an_invalid_answer_is_corrected_once(tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", CORRECTED, tools=["fs.read"], extra=OUTPUT)

    out = cli.json("run", str(config), "what is it?", "--store", cli.store)

    assert out["status"] == "succeeded", out["error"]
    assert out["output"] == {"answer": "42"} and out["steps"] == 2


def test_12_7_cli_an_answer_invalid_after_the_corrective_turn_fails_with_output_invalid(
    tmp_path: Path, cli: Cli
) -> None:
    config = write_project(tmp_path / "p", INVALID_TWICE, tools=["fs.read"], extra=OUTPUT)

    out = cli.json("run", str(config), "what is it?", "--store", cli.store, exit_code=1)

    assert out["status"] == "failed" and out["output"] is None
    assert out["error"]["code"] == "OUTPUT_INVALID"
    assert "$.score: 'high' is not of type 'integer'" in out["error"]["message"]
    assert "$: 'answer' is a required property" in out["error"]["message"]
