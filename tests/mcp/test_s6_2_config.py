"""``mcp_servers:`` in the configuration (000 §6.2; docs/config.md#mcp_servers): the documented
example loads, unknown keys are named, a tool entry naming an unknown server is refused, and
``${VAR}`` stays a reference in what a run records."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.config import Config, load_config
from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.errors import ConfigError

EXAMPLE = """\
version: 1
mcp_servers:
  git:  {transport: stdio, command: mcp-server-git, args: ["--repository", "."], env: {GIT_AUTHOR_NAME: agent}}
  docs: {transport: http, url: "http://127.0.0.1:8931/mcp", headers: {Authorization: "Bearer ${DOCS_TOKEN}"}}
agents:
  main:
    model: {builtin: test}
    tools: [fs.read, "mcp.git.*", mcp.docs.search]
"""  # noqa: E501 - docs/config.md's example, line for line


def load(text: str, folder: Path) -> Config:
    path = folder / "agentloom.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def test_s6_2_the_documented_mcp_servers_example_loads(tmp_path: Path) -> None:
    config = load(EXAMPLE, tmp_path)

    git, docs = config.mcp_servers["git"], config.mcp_servers["docs"]
    assert isinstance(git, StdioServerConfig) and isinstance(docs, HttpServerConfig)
    assert git.args == ("--repository", ".") and git.env == {"GIT_AUTHOR_NAME": "agent"}
    assert git.protocol == "2025-11-25" and git.network is False and git.mounts == ()
    assert docs.headers == {"Authorization": "Bearer ${DOCS_TOKEN}"}  # resolved only when connecting
    assert config.agents["main"].tools == ("fs.read", "mcp.git.*", "mcp.docs.search")
    assert "${DOCS_TOKEN}" in str(config.model_dump(mode="json"))


@pytest.mark.parametrize(("text", "expected"), [
    (EXAMPLE.replace("command: mcp-server-git", "comand: mcp-server-git"),
     "mcp_servers.git.comand: unknown key 'comand'; did you mean 'command'?"),
    (EXAMPLE.replace("transport: http,", "transport: http, mounts: [{path: /data}],"),
     "mcp_servers.docs.mounts: unknown key 'mounts'"),
    (EXAMPLE.replace("transport: stdio,", "transport: pipe,"),
     "mcp_servers.git: must say `transport: stdio` (a local process) or `transport: http`"),
    (EXAMPLE.replace("mcp.docs.search", "mcp.wiki.search"),
     "agents.main.tools[2]: no MCP server named 'wiki'"),
    (EXAMPLE.replace("${DOCS_TOKEN}", "${DOCS TOKEN}"),
     "mcp_servers.docs.headers: ${DOCS TOKEN} is not a reference"),
    (EXAMPLE.replace("args: [", "network: maybe, args: ["), "mcp_servers.git.network: must be true or false"),
])
def test_s6_2_a_bad_mcp_servers_entry_is_refused_naming_its_key(text: str, expected: str,
                                                               tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(text, tmp_path)

    assert expected in str(caught.value)
