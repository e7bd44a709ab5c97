"""Issue #15, where it is silent: a Claude Code user's ``.mcp.json`` is imported with
``agentloom mcp import-claude``, and its ``${VAR}`` / ``${VAR:-default}`` references keep
working (docs/mcp.md, "Claude Code's .mcp.json"; docs/cli.md). Real servers: the lab server
over stdio and over Streamable HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp_support import LAB
from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.secret_refs import resolve_references

CONFIG = """\
version: 1
# the team's agents
agents:
  main:
    model: {builtin: test}   # offline
    tools: ["mcp.lab.*"]
sandbox: {backend: none}
"""


def mcp_json(folder: Path, servers: dict[str, object]) -> Path:
    path = folder / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    return path


def lab_entry(**extra: object) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(LAB)], **extra}


def test_i15_a_claude_code_mcp_json_is_written_into_the_config_and_its_servers_answer(
    tmp_path: Path, lab_http: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = tmp_path / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    source = mcp_json(tmp_path, {
        "lab": lab_entry(env={"GREETING": "${I15_UNSET:-hello from the default}",
                              "EMPTY_ONE": "${I15_EMPTY:-empty means the default}",
                              "GIVEN": "${I15_GIVEN:-not this}"}),
        "web": {"type": "http", "url": lab_http, "headers": {"X-Team": "${I15_TEAM:-core}"}},
    })
    monkeypatch.delenv("I15_UNSET", raising=False)
    monkeypatch.setenv("I15_EMPTY", "")
    monkeypatch.setenv("I15_GIVEN", "from the environment")

    written = CliRunner().invoke(app, ["mcp", "import-claude", str(source), "--write", str(config)])

    assert written.exit_code == 0, written.stderr
    assert "added 2 MCP server(s) to mcp_servers" in written.stdout
    text = config.read_text(encoding="utf-8")
    assert text.startswith(CONFIG)  # comments and layout kept: the servers are appended
    loaded = load_config(config)
    assert loaded.mcp_servers["lab"].transport == "stdio"
    assert loaded.mcp_servers["web"].transport == "http"
    assert "${I15_UNSET:-hello from the default}" in text  # the reference, never a value

    listed = CliRunner().invoke(app, ["mcp", "list", str(config), "--json"])
    assert listed.exit_code == 0, listed.stderr
    assert [s["server"] for s in json.loads(listed.stdout)] == ["lab", "web"]

    def env_of(name: str) -> str:
        called = CliRunner().invoke(app, ["mcp", "call", str(config), "lab", "env", "--args",
                                          json.dumps({"name": name}), "--json"])
        assert called.exit_code == 0, called.stderr
        content = json.loads(called.stdout)["content"]
        return str(content[0]["text"])

    assert env_of("GREETING") == "hello from the default"
    assert env_of("EMPTY_ONE") == "empty means the default"
    # a set variable wins over its default; its resolved value is a secret the server echoes
    # back, so what comes back is redacted (issue #34, 6): exactly that value was passed
    assert env_of("GIVEN") == "[redacted]"
    assert env_of("I15_GIVEN") == "<unset>"  # the parent's environment is not passed on


def test_i15_import_claude_prints_the_yaml_and_warns_of_a_downloading_command(
    tmp_path: Path,
) -> None:
    source = mcp_json(tmp_path, {"fs": {"type": "stdio", "command": "npx",
                                        "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}})

    printed = CliRunner().invoke(app, ["mcp", "import-claude", str(source)])
    as_json = CliRunner().invoke(app, ["mcp", "import-claude", str(source), "--json"])

    assert printed.exit_code == 0, printed.stderr
    assert printed.stdout.splitlines()[1:4] == ["mcp_servers:", "  fs:", "    transport: stdio"]
    assert "npx fetches its package when the server starts" in printed.stderr
    assert "network: true" in printed.stderr
    document = json.loads(as_json.stdout)
    assert document["mcp_servers"] == {"fs": {
        "transport": "stdio", "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}
    assert document["written"] is None and len(document["warnings"]) == 1


@pytest.mark.parametrize(("servers", "named"), [
    ({"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}},
     "mcpServers.old: \"type\": \"sse\" is the legacy HTTP+SSE transport"),
    ({"lab": lab_entry(disabled=False)},
     "mcpServers.lab: 'disabled' cannot be imported for a stdio server"),
    ({"web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "command": "x"}},
     "mcpServers.web: 'command' cannot be imported for a http server"),
    ({"lab": lab_entry(args=["--root", "${HOME}/projects"])},
     "mcpServers.lab: args[1] '${HOME}/projects' refers to a variable"),
    ({"web": {"type": "http", "url": "https://${HOST}/mcp"}},
     "mcpServers.web: url 'https://${HOST}/mcp' refers to a variable"),
    ({"my server": lab_entry()}, "mcpServers.my server: a name must start with a letter"),
    ({"lab": "python lab.py"}, "mcpServers.lab: an entry is an object"),
    ({"lab": {"args": ["x"]}}, "mcpServers.lab: \"type\" must be \"stdio\" or \"http\""),
    ({"lab": lab_entry(env={"TOKEN": "${A:-${B}}"})},
     "mcpServers.lab: env: Value error, ${A:-${B}: a default cannot hold another ${...}"),
    ({"web": {"type": "http", "url": "ftp://x"}}, "mcpServers.web: url: Value error, must start"),
    ({}, "\"mcpServers\" is empty; nothing to import"),
])
def test_i15_import_claude_refuses_what_has_no_exact_equivalent_naming_it(
    tmp_path: Path, servers: dict[str, object], named: str,
) -> None:
    config = tmp_path / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    source = mcp_json(tmp_path, servers)

    refused = CliRunner().invoke(app, ["mcp", "import-claude", str(source), "--write", str(config)])

    assert refused.exit_code == 2
    assert "CLAUDE_IMPORT" in refused.stderr
    assert named in refused.stderr, refused.stderr
    assert config.read_text(encoding="utf-8") == CONFIG  # nothing written


@pytest.mark.parametrize(("text", "named"), [
    ("{not json", "cannot read it as JSON"),
    ('{"servers": {}}', 'no "mcpServers" object'),
    ("[1, 2]", 'no "mcpServers" object'),
])
def test_i15_import_claude_refuses_a_file_that_is_not_an_mcp_json(
    tmp_path: Path, text: str, named: str,
) -> None:
    source = tmp_path / ".mcp.json"
    source.write_text(text, encoding="utf-8")

    refused = CliRunner().invoke(app, ["mcp", "import-claude", str(source)])

    assert refused.exit_code == 2 and named in refused.stderr, refused.stderr
    assert refused.stdout == ""


def test_i15_import_claude_write_refuses_a_name_the_config_has_and_keeps_the_file(
    tmp_path: Path,
) -> None:
    config = tmp_path / "agentloom.yaml"
    original = CONFIG + f"mcp_servers:\n  lab: {{transport: stdio, command: {json.dumps(sys.executable)}}}\n"
    config.write_text(original, encoding="utf-8")
    source = mcp_json(tmp_path, {"lab": lab_entry(), "other": lab_entry()})

    refused = CliRunner().invoke(app, ["mcp", "import-claude", str(source), "--write", str(config)])

    assert refused.exit_code == 2
    assert "mcp_servers already has 'lab'" in refused.stderr
    assert config.read_text(encoding="utf-8") == original


def test_i15_import_claude_write_appends_to_a_block_mcp_servers_and_rewrites_a_flow_one(
    tmp_path: Path,
) -> None:
    block = tmp_path / "block" / "agentloom.yaml"
    block.parent.mkdir()
    block.write_text(CONFIG + "mcp_servers:\n  # ours\n  mine:\n    transport: stdio\n"
                     f"    command: {json.dumps(sys.executable)}\n", encoding="utf-8")
    flow = tmp_path / "flow" / "agentloom.yaml"
    flow.parent.mkdir()
    flow.write_text(CONFIG + "mcp_servers: {}\n", encoding="utf-8")
    source = mcp_json(tmp_path, {"lab": lab_entry()})

    into_block = CliRunner().invoke(app, ["mcp", "import-claude", str(source), "--write", str(block)])
    into_flow = CliRunner().invoke(app, ["mcp", "import-claude", str(source), "--write", str(flow)])

    assert into_block.exit_code == 0, into_block.stderr
    assert "# ours" in block.read_text(encoding="utf-8") and "rewritten" not in into_block.stderr
    assert list(load_config(block).mcp_servers) == ["mine", "lab"]
    assert into_flow.exit_code == 0, into_flow.stderr
    assert "was rewritten from its data: its comments and layout were not kept" in into_flow.stderr
    assert list(load_config(flow).mcp_servers) == ["lab"]


def test_i15_env_and_header_references_take_a_default_when_unset_or_empty() -> None:
    read: list[str] = []
    environ = {"SET": "s3cret-value", "EMPTY": ""}

    resolved = resolve_references(
        {"a": "${SET:-no}", "b": "${UNSET:-fallback}", "c": "${EMPTY:-fallback}",
         "d": "${EMPTY}", "e": "pre ${UNSET:-} post"},
        where="mcp_servers.x.env", secrets=read, missing=LookupError, environ=environ)

    assert resolved == {"a": "s3cret-value", "b": "fallback", "c": "fallback", "d": "",
                        "e": "pre  post"}
    assert read == ["s3cret-value", ""]  # what came from the environment; never a default
    with pytest.raises(LookupError, match=r"mcp_servers.x.env.k refers to \$\{UNSET\}"):
        resolve_references({"k": "${UNSET}"}, where="mcp_servers.x.env", secrets=[],
                           missing=LookupError, environ=environ)


def test_i15_a_nested_default_in_the_config_is_an_error_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "agentloom.yaml"
    config.write_text(CONFIG + "mcp_servers:\n  lab:\n    transport: stdio\n    command: lab\n"
                      "    env: {TOKEN: \"${A:-${B}}\"}\n", encoding="utf-8")

    with pytest.raises(ConfigError) as raised:
        load_config(config)

    assert "mcp_servers.lab.env" in raised.value.error.message
    assert "a default cannot hold another ${...}" in raised.value.error.message
