"""Issue #34 (6): a configured secret a server puts in its *result* — an ``isError`` result's
text, a successful result's content — is redacted in every stored and model-visible copy, as
in its error messages. The lab server's ``env`` tool returns the variable its ``env:`` sets
from ``${LAB_ENV_SECRET}`` (``!NAME``: inside an ``isError`` result)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_s6_2_run import _stored_bytes, cli, lab_entry, operations, project

SECRET = "env-sec-7c2e9b41d0"
TURNS = """\
  - tool_calls:
      - {id: ok, name: mcp__lab__env, arguments: {name: LAB_TOKEN}}
  - expect: {role: tool, contains: "[redacted]"}
    tool_calls:
      - {id: bad, name: mcp__lab__env, arguments: {name: "!LAB_TOKEN"}}
  - expect: {role: tool, contains: "could not use the token [redacted]"}
    text: done
"""


def test_i34_6_a_secret_in_a_successful_or_is_error_result_is_redacted_everywhere(
    tmp_path: Path, durable_store_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAB_ENV_SECRET", SECRET)
    config = project(tmp_path / "p", TURNS, tools="mcp.lab.env",
                     servers=lab_entry(env=", env: {LAB_TOKEN: \"${LAB_ENV_SECRET}\"}"))
    ran = cli("run", str(config), "read the token", "--store", durable_store_url, "--json")
    out = json.loads(ran.stdout)
    assert out["status"] == "succeeded", out  # the model saw [redacted] both times (expect)
    ops = operations(out["run_id"], durable_store_url)
    assert ops["mcp.lab.env"]["status"] in ("succeeded", "failed")
    shown = cli("runs", "show", out["run_id"], "--store", durable_store_url, "--json")
    for text in (ran.stdout, ran.stderr, shown.stdout):
        assert SECRET not in text
    assert "[redacted]" in shown.stdout
    stored = _stored_bytes(durable_store_url)
    assert stored and SECRET.encode() not in stored


READ_TURNS = """\
  - tool_calls:
      - {id: r, name: mcp__lab__resources_read, arguments: {uri: "lab://env/LAB_TOKEN"}}
  - expect: {role: tool, contains: "[redacted]"}
    text: done
"""


def test_i34_6_a_secret_in_a_resource_read_or_a_rendered_prompt_is_redacted(
    tmp_path: Path, durable_store_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAB_ENV_SECRET", SECRET)
    servers = lab_entry(env=", env: {LAB_TOKEN: \"${LAB_ENV_SECRET}\"}")
    config = project(tmp_path / "p", READ_TURNS, tools="mcp.lab.resources.read", servers=servers)
    ran = cli("run", str(config), "read the token", "--store", durable_store_url, "--json")
    out = json.loads(ran.stdout)
    assert out["status"] == "succeeded", out  # the model saw [redacted] (expect)
    shown = cli("runs", "show", out["run_id"], "--store", durable_store_url, "--json")
    assert "[redacted]" in shown.stdout
    stored = _stored_bytes(durable_store_url)
    assert stored and SECRET.encode() not in stored

    rendered = cli("mcp", "prompt", str(config), "lab", "review", "--arg", "code=x = 1",
                   "--arg", "style=env:LAB_TOKEN", "--json")
    assert rendered.exit_code == 0, rendered.stderr
    for text in (ran.stdout, ran.stderr, shown.stdout, rendered.stdout, rendered.stderr):
        assert SECRET not in text
    assert "[redacted]" in rendered.stdout
