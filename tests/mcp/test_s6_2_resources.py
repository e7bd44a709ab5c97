"""000 §6.2 resources and prompts: a server that declares ``resources`` gets one read capability,
``mcp.<server>.resources.read`` (offered as ``mcp__<server>__resources_read``), whose
description lists what it found and which reads only when the model calls it, as an ordinary
recorded operation; a server without resources gets none; ``agentloom mcp prompts`` / ``mcp
prompt`` list and render prompts (never injected into an agent); ``Runtime.aclose`` closes the
MCP sessions of runs that never ended. Real servers: ``servers/lab.py`` and server-everything."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_support import LAB, Pool, everything_stdio, lab_stdio
from test_s6_2_run import _stored_bytes, cli_json, lab_entry, operations, project
from typer.testing import CliRunner

from agentloom.assembly import runtime_from_config
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.config.mcp import StdioServerConfig
from agentloom.errors import ConfigError
from agentloom.ids import new_id
from agentloom.mcp import McpResources
from agentloom.mcp.resources import MAX_LISTED, describe
from mcp import types as mt

README_CANARY = "resource-canary-7f3e2a"  # servers/lab.py README_TEXT
CONFIG_CANARY = "config-canary-91bd04"


def tools_only_entry(name: str = "bare") -> str:
    return f"  {name}: {{transport: stdio, command: {json.dumps(sys.executable)}, " \
           f"args: [{json.dumps(str(LAB))}, tools-only]}}\n"


async def read(pool: Pool, reader: McpResources, uri: str) -> Any:
    context = AttemptContext(operation_id=new_id(), attempt_no=1, run_id="run-r", role="main",
                             deadline=time.time() + 60, workspace_scope_id="scope")
    request = CapabilityRequest(operation_id=context.operation_id, resource_version_id="rel",
                                capability_key=reader.capability_key, arguments={"uri": uri})
    return await reader.handler(pool.sessions).invoke_once(request, context)


async def test_s6_2_resources_listed_in_the_read_capability_of_the_lab_server(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    from agentloom.mcp import list_servers

    (listing,) = await list_servers({"lab": lab_stdio()}, base_dir=tmp_path, backend="none",
                                    workspace=tmp_path)
    reader = listing.resources
    assert isinstance(reader, McpResources)
    spec = reader.spec("rel")
    assert (spec.capability_key, spec.exposed_name) == ("mcp.lab.resources.read",
                                                        "mcp__lab__resources_read")
    assert spec.input_schema["required"] == ["uri"]
    # every page of resources/list (two a page) and the template, URIs only, no content
    for uri in ("lab://readme", "lab://data/config.json", "lab://logo.png", "lab://notes/{name}"):
        assert uri in spec.description
    assert README_CANARY not in spec.description and CONFIG_CANARY not in spec.description
    assert len(listing.tools) == 13 and listing.capabilities[-1] is reader

    text = await read(pool, reader, "lab://readme")
    blob = await read(pool, reader, "lab://logo.png")
    note = await read(pool, reader, "lab://notes/todo")
    missing = await read(pool, reader, "lab://nope")
    await pool.sessions.aclose()

    assert text.status == "succeeded" and text.text() == f"lab readme: {README_CANARY}"
    assert blob.status == "succeeded" and "binary (image/png), 32 bytes, not inlined" in blob.text()
    assert note.text() == "note todo"
    assert missing.status == "failed" and missing.error.code == "MCP_PROTOCOL_ERROR"
    assert missing.error.external_outcome == "known"


def test_s6_2_resources_description_is_bounded_and_counts_the_rest() -> None:
    resources = [mt.Resource(uri=f"x://r/{i}", name=f"r{i}") for i in range(MAX_LISTED + 10)]
    templates = [mt.ResourceTemplate(uri_template="x://t/{id}", name="t")]

    text = describe("big", resources, templates)

    assert "x://r/49" in text and "x://r/50" not in text and "x://t/{id}" not in text
    assert "… and 11 more not listed here." in text


async def test_s6_2_resources_of_server_everything_over_stdio_listed_and_read(
    tmp_path: Path, everything: Path, node: str,
) -> None:
    pool = Pool(tmp_path)
    listed = await pool.tools("everything", everything_stdio(node, everything))
    assert "resources.read" not in listed  # tools only: the reader is the listing's own
    from agentloom.mcp import list_servers

    (listing,) = await list_servers({"everything": everything_stdio(node, everything)},
                                    base_dir=tmp_path, backend="none", workspace=tmp_path)
    reader = listing.resources
    assert reader is not None and reader.capability_key == "mcp.everything.resources.read"
    description = reader.spec("rel").description
    assert "demo://resource/static/document/architecture.md" in description
    assert "demo://resource/dynamic/text/{resourceId}" in description

    text = await read(pool, reader, "demo://resource/dynamic/text/1")
    blob = await read(pool, reader, "demo://resource/dynamic/blob/1")
    await pool.sessions.aclose()

    assert text.status == "succeeded" and text.text().strip(), text
    assert blob.status == "succeeded" and "not inlined" in blob.text(), blob


async def test_s6_2_server_without_resources_gets_no_read_capability(tmp_path: Path) -> None:
    from agentloom.mcp import list_servers

    bare = StdioServerConfig(transport="stdio", command=sys.executable, args=(str(LAB), "tools-only"))
    (listing,) = await list_servers({"bare": bare}, base_dir=tmp_path, backend="none",
                                    workspace=tmp_path)
    assert listing.resources is None and len(listing.capabilities) == 13
    assert "mcp.bare.resources.read" not in {t.capability_key for t in listing.capabilities}

    config = project(tmp_path / "p", "  - text: done\n", tools="mcp.bare.resources.read",
                     servers=tools_only_entry())
    with pytest.raises(ConfigError) as raised:
        runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")
    assert raised.value.code == "MCP_TOOL_NOT_LISTED"


NO_READ = "  - text: not read\n"

READ_TURNS = f"""\
  - tool_calls:
      - {{id: r, name: mcp__lab__resources_read, arguments: {{uri: "lab://readme"}}}}
  - expect: {{role: tool, contains: "{README_CANARY}"}}
    text: read it
"""


def test_s6_2_resources_read_through_a_run_is_a_recorded_operation_and_never_preloaded(
    tmp_path: Path, durable_store_url: str,
) -> None:
    # a glob selects the reader (globs select by capability key); nothing is read unless called
    quiet = project(tmp_path / "q", NO_READ, tools='"mcp.lab.*"', servers=lab_entry())
    out = cli_json("run", str(quiet), "do not read", "--store", durable_store_url)
    assert out["status"] == "succeeded" and out["output"] == "not read", out
    stored = _stored_bytes(durable_store_url)
    assert b"lab://readme" in stored  # the listing was offered to the model ...
    assert README_CANARY.encode() not in stored and CONFIG_CANARY.encode() not in stored  # ... no content

    # the exact key selects it too; the read is an ordinary operation of the pipeline
    reads = project(tmp_path / "r", READ_TURNS, tools="mcp.lab.resources.read", servers=lab_entry())
    out = cli_json("run", str(reads), "read the readme", "--store", durable_store_url)
    assert out["status"] == "succeeded" and out["output"] == "read it", out
    ops = operations(out["run_id"], durable_store_url)
    assert set(ops) == {"mcp.lab.resources.read"}
    op = ops["mcp.lab.resources.read"]
    assert op["status"] == "succeeded" and op["raw_result"] == f"lab readme: {README_CANARY}"
    assert op["executed_arguments"] == {"uri": "lab://readme"} and op["attempts"]["count"] == 1
    stored = _stored_bytes(durable_store_url)
    assert README_CANARY.encode() in stored and CONFIG_CANARY.encode() not in stored


def test_s6_2_an_mcp_tool_entry_alone_does_not_offer_the_reader(tmp_path: Path) -> None:
    config = project(tmp_path / "p", NO_READ, tools="mcp.lab.echo", servers=lab_entry())
    runtime = runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")
    try:
        catalog = runtime.kernel.registry.for_role(runtime.release_id, "main")
        keys = {spec.capability_key for spec in catalog.specs.values()}
    finally:
        import asyncio

        asyncio.run(runtime.aclose())
    assert "mcp.lab.echo" in keys and "mcp.lab.resources.read" not in keys


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_s6_2_runtime_aclose_closes_mcp_sessions_of_runs_that_never_ended(tmp_path: Path) -> None:
    config = project(tmp_path / "p", NO_READ, tools='"mcp.lab.*"', servers=lab_entry())
    runtime = runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")
    tool = next(t for t in runtime.agents["main"].tools
                if not isinstance(t, str) and getattr(t, "capability_key", "") == "mcp.lab.pid")
    context = AttemptContext(operation_id=new_id(), attempt_no=1, run_id="orphan", role="main",
                             deadline=time.time() + 60, workspace_scope_id=None)
    request = CapabilityRequest(operation_id=context.operation_id, resource_version_id="rel",
                                capability_key="mcp.lab.pid", arguments={})
    sessions = runtime.kernel.mcp_sessions
    result = await tool.handler(sessions).invoke_once(request, context)  # type: ignore[union-attr]
    pid = int(result.text())
    assert sessions.open_runs() == {"orphan"} and _pid_alive(pid)

    await runtime.aclose()

    assert sessions.open_runs() == set()
    assert not _pid_alive(pid)


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_s6_2_cli_mcp_prompts_and_prompt_list_and_render_a_servers_prompts(tmp_path: Path) -> None:
    config = project(tmp_path / "p", NO_READ, tools="mcp.lab.echo",
                     servers=lab_entry() + tools_only_entry())

    listed = cli("mcp", "prompts", str(config), "lab", "--json")
    rendered = cli("mcp", "prompt", str(config), "lab", "review", "--arg", "code=x = 1",
                   "--arg", "style=terse", "--json")
    human = cli("mcp", "prompt", str(config), "lab", "review", "--arg", "code=print(1)")
    human_list = cli("mcp", "prompts", str(config), "lab")
    missing = cli("mcp", "prompt", str(config), "lab", "review", "--json")
    bare = cli("mcp", "prompts", str(config), "bare")
    bad_arg = cli("mcp", "prompt", str(config), "lab", "review", "--arg", "novalue")

    assert listed.exit_code == 0, listed.stderr
    assert json.loads(listed.stdout) == [{
        "server": "lab", "name": "review", "title": "Review code",
        "description": "ask for a code review",
        "arguments": [{"name": "code", "description": "the code", "required": True},
                      {"name": "style", "description": "tone", "required": False}]}]
    assert rendered.exit_code == 0, rendered.stderr
    assert json.loads(rendered.stdout) == {
        "server": "lab", "name": "review", "description": "a code review request",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Review this code (terse):\nx = 1"}},
            {"role": "assistant", "content": {"type": "text", "text": "Looking at it."}}]}
    assert human.exit_code == 0 and "[user] Review this code (plain):" in human.stdout
    assert human_list.exit_code == 0 and "review(code, style?)  Review code" in human_list.stdout
    assert missing.exit_code == 1
    assert json.loads(missing.stdout)["error"]["code"] == "MCP_PROTOCOL_ERROR"
    assert "Missing required argument: code" in json.loads(missing.stdout)["error"]["message"]
    assert bare.exit_code == 2 and "declares no prompts" in bare.stderr
    assert bad_arg.exit_code == 2 and "is not K=V" in bad_arg.stderr


def test_s6_2_cli_mcp_list_shows_the_read_capability_of_a_server_with_resources(
    tmp_path: Path,
) -> None:
    config = project(tmp_path / "p", NO_READ, tools="mcp.lab.echo",
                     servers=lab_entry() + tools_only_entry())

    listed = cli("mcp", "list", str(config), "--json")
    human = cli("mcp", "list", str(config))

    assert listed.exit_code == 0, listed.stderr
    lab, bare = json.loads(listed.stdout)
    assert bare["resources"] is None
    reader = lab["resources"]
    assert (reader["capability_key"], reader["exposed_name"]) == ("mcp.lab.resources.read",
                                                                  "mcp__lab__resources_read")
    assert [r["uri"] for r in reader["resources"]] == ["lab://readme", "lab://data/config.json",
                                                      "lab://logo.png"]
    assert [t["uriTemplate"] for t in reader["templates"]] == ["lab://notes/{name}"]
    assert "  mcp.lab.resources.read  (mcp__lab__resources_read)  3 resource(s), 1 template(s)" \
        in human.stdout
