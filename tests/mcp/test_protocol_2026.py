"""Issue #15, the second declared profile: ``protocol: "2026-07-28"`` on stdio and Streamable
HTTP server entries (default ``2025-11-25``) — the ``mcp`` SDK's ``server/discover`` and
per-request envelope, the same catalog / call / resources / prompts code on both profiles, a
server that cannot speak the asked profile refused (``MCP_VERSION_UNSUPPORTED`` naming both
versions and the key), and ``input_required`` (2026's replacement for sampling / elicitation)
failed at once, never driven; a 2026 ``HeaderMismatch`` (a tool not yet listed on the
session) recovered by listing and sending once more. Real servers: ``servers/eras.py`` (the lab
on the SDK's loops: both eras, 2025 only, 2026 only) over stdio and over HTTP on 127.0.0.1,
and an agent run through the pipeline."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import SERVERS, Pool, free_port, http, lab_stdio, serve_http
from test_s6_2_config import EXAMPLE, load
from test_s6_2_resources import read as read_resource
from test_s6_2_run import cli_json, operations, project

from agentloom.config.mcp import HttpServerConfig, StdioServerConfig
from agentloom.errors import ConfigError
from agentloom.mcp import McpError, connected, get_prompt, list_prompts, list_servers
from agentloom.results import JsonBlock

ERAS = SERVERS / "eras.py"
MODERN = "2026-07-28"
NO_HANG_S = 20.0  # a refusal arrives at once; this only bounds a hang


def eras_stdio(era: str, **extra: Any) -> StdioServerConfig:
    return lab_stdio(**extra).model_copy(update={"args": (str(ERAS), era)})


@pytest.fixture
def eras_http() -> Iterator[str]:
    """``servers/eras.py`` (both eras, with ``ask_input``) over Streamable HTTP: its URL."""
    port = free_port()
    yield from serve_http([sys.executable, str(ERAS), "http", str(port)], port)


def test_issue15_protocol_key_accepts_2026_07_28_on_stdio_and_http_default_2025(
        tmp_path: Path) -> None:
    default = load(EXAMPLE, tmp_path)
    modern = load(EXAMPLE.replace("transport: stdio,", f'transport: stdio, protocol: "{MODERN}",')
                  .replace("transport: http,", f'transport: http, protocol: "{MODERN}",'), tmp_path)

    assert {s.protocol for s in default.mcp_servers.values()} == {"2025-11-25"}
    assert {s.protocol for s in modern.mcp_servers.values()} == {MODERN}
    with pytest.raises(ConfigError) as caught:
        load(EXAMPLE.replace("transport: http,", 'transport: http, protocol: "2024-11-05",'),
             tmp_path)
    assert "mcp_servers.docs.protocol" in str(caught.value)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_issue15_2026_profile_lists_every_page_calls_and_records_the_version(
    transport: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    config: StdioServerConfig | HttpServerConfig = (
        eras_stdio("asking", protocol=MODERN) if transport == "stdio"
        else http(request.getfixturevalue("eras_http"), protocol=MODERN))
    pool = Pool(tmp_path)
    (listing,) = await list_servers({"lab": config}, base_dir=tmp_path, backend="none")
    tools = {t.name: t for t in listing.tools}

    assert list(tools) == ["echo", "add", "bad_shape", "fail", "boom", "ask_sampling",
                           "ask_elicitation", "grow", "slow", "env", "pid", "mark", "say",
                           "ask_input", "locate"]  # 5 pages of 3
    assert listing.record.protocol_version == MODERN
    assert (listing.record.server_name, listing.record.server_version) == ("lab", "1.0")

    added = await pool.call(tools["add"], {"a": 2, "b": 3})
    assert added.status == "succeeded" and added.content == (JsonBlock({"total": 5}),)
    assert added.metadata["mcp"]["connection"]["protocol_version"] == MODERN
    bad = await pool.call(tools["bad_shape"])
    assert bad.status == "failed" and bad.error is not None
    assert bad.error.code == "MCP_OUTPUT_INVALID"
    failed = await pool.call(tools["fail"])
    assert failed.error is not None and failed.error.code == "MCP_TOOL_ERROR"
    assert failed.error.external_outcome == "known" and "it failed on purpose" in failed.error.message
    boom = await pool.call(tools["boom"])
    assert boom.error is not None and boom.error.code == "MCP_PROTOCOL_ERROR"
    assert boom.error.details["jsonrpc_code"] == -32099
    slow = await pool.call(tools["slow"], {"steps": 2})
    assert slow.text() == "done" and [p["progress"] for p in pool.kinds("mcp.progress")] == [1, 2]
    # a session that never listed ``locate`` is refused over HTTP (-32020): it lists, resends once
    located = await pool.call(tools["locate"], {"region": "eu-west"})
    assert located.status == "succeeded" and located.text() == "located in eu-west"
    said = await pool.call(tools["say"], {"text": "hi"})
    assert said.text() == "said"
    assert [(p["level"], p["data"]) for p in pool.kinds("mcp.log")] == [("warning", {"said": "hi"})]
    await pool.sessions.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_issue15_input_required_is_failed_at_once_never_driven(
    transport: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    config: StdioServerConfig | HttpServerConfig = (
        eras_stdio("asking", protocol=MODERN) if transport == "stdio"
        else http(request.getfixturevalue("eras_http"), protocol=MODERN))
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", config)

    with anyio.fail_after(NO_HANG_S):
        asked = await pool.call(tools["ask_input"])
        sampled = await pool.call(tools["ask_sampling"])

    assert asked.status == "failed" and asked.error is not None
    assert asked.error.code == "MCP_INPUT_REQUIRED" and asked.error.category == "protocol"
    assert asked.error.details == {"input_requests": ["elicitation/create"]}
    assert "answered tools/call 'ask_input' with input_required" in asked.error.message
    # a 2026 server has no back-channel: its sampling request is refused on its own side
    assert sampled.status == "succeeded" and sampled.text().startswith("sampling refused")
    await pool.sessions.aclose()


async def test_issue15_resources_and_prompts_work_on_the_2026_profile(tmp_path: Path) -> None:
    config = eras_stdio("asking", protocol=MODERN)
    pool = Pool(tmp_path)
    (listing,) = await list_servers({"lab": config}, base_dir=tmp_path, backend="none")
    reader = listing.resources
    assert reader is not None and [r["uri"] for r in reader.resources] == [
        "lab://readme", "lab://data/config.json", "lab://logo.png"]  # two pages

    read = await read_resource(pool, reader, "lab://readme")
    missing = await read_resource(pool, reader, "lab://nothing")
    async with connected("lab", config, base_dir=tmp_path, backend="none") as conn:
        prompts = await list_prompts(conn)
        rendered = await get_prompt(conn, "review", {"code": "x = 1"})

    assert read.status == "succeeded" and read.text() == "lab readme: resource-canary-7f3e2a"
    assert read.metadata["mcp"]["connection"]["protocol_version"] == MODERN
    assert missing.error is not None and missing.error.code == "MCP_PROTOCOL_ERROR"
    assert [p.name for p in prompts] == ["review"]
    assert rendered.messages[0]["content"]["text"] == "Review this code (plain):\nx = 1"
    await pool.sessions.aclose()


async def test_issue15_a_2025_only_server_asked_for_2026_is_refused_naming_both(
        tmp_path: Path) -> None:
    with anyio.fail_after(NO_HANG_S), pytest.raises(McpError) as caught:
        await list_servers({"old": eras_stdio("legacy", protocol=MODERN)}, base_dir=tmp_path,
                           backend="none")

    assert caught.value.code == "MCP_VERSION_UNSUPPORTED"
    message = caught.value.error.message
    assert "answered server/discover with JSON-RPC error -32601 (a 2025-era server)" in message
    assert 'speaks 2026-07-28 only (set mcp_servers.old.protocol: "2025-11-25")' in message


async def test_issue15_a_server_ignoring_server_discover_fails_after_the_sdk_probe_timeout(
        tmp_path: Path) -> None:
    old = lab_stdio(protocol=MODERN).model_copy(update={"args": (str(SERVERS / "oldversion.py"),)})

    with anyio.fail_after(NO_HANG_S), pytest.raises(McpError) as caught:  # the SDK waits 10 s
        await list_servers({"old": old}, base_dir=tmp_path, backend="none")

    assert caught.value.code == "MCP_CONNECT_FAILED"
    assert caught.value.error.message == (
        "MCP server 'old' did not answer server/discover (protocol 2026-07-28); a 2025-era "
        'server may ignore it: set mcp_servers.old.protocol: "2025-11-25"')


async def test_issue15_a_2026_only_server_asked_for_2025_is_refused_naming_both(
        tmp_path: Path) -> None:
    with anyio.fail_after(NO_HANG_S), pytest.raises(McpError) as caught:
        await list_servers({"new": eras_stdio("modern")}, base_dir=tmp_path, backend="none")

    assert caught.value.code == "MCP_VERSION_UNSUPPORTED"
    assert caught.value.error.message == (
        "MCP server 'new' speaks protocol 2026-07-28; this connection speaks 2025-11-25 only "
        '(set mcp_servers.new.protocol: "2026-07-28")')


async def test_issue15_both_profiles_reach_one_dual_era_server(tmp_path: Path) -> None:
    servers = {"legacy": eras_stdio("asking"), "modern": eras_stdio("asking", protocol=MODERN)}
    listed = await list_servers(servers, base_dir=tmp_path, backend="none")

    assert {x.server: x.record.protocol_version for x in listed} == {
        "legacy": "2025-11-25", "modern": MODERN}
    assert [t.name for t in listed[0].tools] == [t.name for t in listed[1].tools]


RUN_TURNS = """\
  - tool_calls:
      - {id: a, name: mcp__lab__add, arguments: {a: 1, b: 2}}
  - expect: {role: tool, contains: "3"}
    tool_calls:
      - {id: h, name: mcp__labh__echo, arguments: {text: over http}}
  - expect: {role: tool, contains: "echo: over http"}
    tool_calls:
      - {id: i, name: mcp__lab__ask_input, arguments: {}}
  - expect: {role: tool, contains: "input_required"}
    text: done
"""


def test_issue15_agent_run_on_the_2026_profile_through_the_pipeline(
    tmp_path: Path, durable_store_url: str, eras_http: str,
) -> None:
    servers = (f'  lab: {{transport: stdio, protocol: "{MODERN}", '
               f"command: {json.dumps(sys.executable)}, args: [{json.dumps(str(ERAS))}, asking]}}\n"
               f'  labh: {{transport: http, protocol: "{MODERN}", url: {json.dumps(eras_http)}}}\n')
    config = project(tmp_path / "p", RUN_TURNS, tools="mcp.lab.add, mcp.lab.ask_input, "
                     "mcp.labh.echo", servers=servers)

    out = cli_json("run", str(config), "use the lab", "--store", durable_store_url)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    ops = operations(out["run_id"], durable_store_url)
    assert json.loads(ops["mcp.lab.add"]["raw_result"]) == {"total": 3}
    assert ops["mcp.labh.echo"]["raw_result"] == "echo: over http"
    asked = ops["mcp.lab.ask_input"]
    assert asked["status"] == "failed" and asked["error"]["code"] == "MCP_INPUT_REQUIRED", asked
