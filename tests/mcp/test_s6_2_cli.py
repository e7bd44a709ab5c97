"""``agentloom mcp list CONFIG`` and ``agentloom mcp call CONFIG SERVER TOOL --args JSON``
against real servers (000 §6.2; docs/cli.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp_support import LAB
from typer.testing import CliRunner

from agentloom.cli.main import app


def write(folder: Path, servers: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "agentloom.yaml"
    config.write_text("version: 1\nagents:\n  main:\n    model: {builtin: test}\n"
                      f"mcp_servers:\n{servers}sandbox: {{backend: none}}\n", encoding="utf-8")
    return config


LAB_SERVER = (f"  lab: {{transport: stdio, command: {json.dumps(sys.executable)}, "
              f"args: [{json.dumps(str(LAB))}]}}\n")


def test_s6_2_cli_mcp_list_json_shows_negotiated_version_and_capability_keys(
    tmp_path: Path, lab_http: str,
) -> None:
    config = write(tmp_path, LAB_SERVER + f"  web: {{transport: http, url: {json.dumps(lab_http)}}}\n")

    result = CliRunner().invoke(app, ["mcp", "list", str(config), "--json"])

    assert result.exit_code == 0, result.stderr
    listed = json.loads(result.stdout)
    assert [(s["server"], s["transport"], s["protocol_version"]) for s in listed] == [
        ("lab", "stdio", "2025-11-25"), ("web", "http", "2025-11-25")]
    assert listed[0]["server_info"] == {"name": "lab", "version": "1.0"}
    echo = listed[1]["tools"][0]
    assert (echo["capability_key"], echo["exposed_name"]) == ("mcp.web.echo", "mcp__web__echo")
    assert echo["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert len(listed[0]["tools"]) == 13  # every page

    human = CliRunner().invoke(app, ["mcp", "list", str(config)])
    assert human.exit_code == 0
    assert "lab  stdio  protocol 2025-11-25  lab 1.0  13 tool(s)" in human.stdout
    assert "  mcp.lab.add  (mcp__lab__add)" in human.stdout


def test_s6_2_cli_mcp_call_prints_the_result_and_exits_1_on_a_tool_error(tmp_path: Path) -> None:
    config = write(tmp_path, LAB_SERVER)

    added = CliRunner().invoke(app, ["mcp", "call", str(config), "lab", "add", "--args",
                                     '{"a": 20, "b": 22}', "--json"])
    failed = CliRunner().invoke(app, ["mcp", "call", str(config), "lab", "fail", "--json"])
    unknown = CliRunner().invoke(app, ["mcp", "call", str(config), "lab", "nope"])

    assert added.exit_code == 0, added.stderr
    assert json.loads(added.stdout)["content"] == [{"type": "json", "data": {"total": 42}}]
    assert failed.exit_code == 1
    assert json.loads(failed.stdout)["error"]["code"] == "MCP_TOOL_ERROR"
    assert unknown.exit_code == 2 and "lists no tool 'nope'" in unknown.stderr
