"""000 §6.2 — the MCP client profile against real servers: the handshake and its record, the
declared client capabilities, ``tools/list`` with pagination, ``tools/call`` results
(structured output checked, ``isError`` vs a JSON-RPC error), progress, server-initiated
sampling / elicitation refused at once, one session per (run, server)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp_support import SERVERS, Pool, everything_stdio, http, lab_stdio

from agentloom.mcp import McpError, list_servers
from agentloom.mcp.launch import launcher_for
from agentloom.results import JsonBlock, TextBlock
from agentloom.sandbox import SandboxError

NO_HANG_S = 20.0  # a refusal arrives at once; this only bounds a hang


async def test_s6_2_tools_list_walks_every_page_and_records_the_handshake(tmp_path: Path) -> None:
    (listing,) = await list_servers({"lab": lab_stdio()}, base_dir=tmp_path, backend="none")

    assert [t.name for t in listing.tools] == [
        "echo", "add", "bad_shape", "fail", "boom", "ask_sampling", "ask_elicitation", "grow",
        "slow", "env", "pid", "mark", "say"]  # 5 pages of 3
    assert listing.record.protocol_version == "2025-11-25"
    assert (listing.record.server_name, listing.record.server_version) == ("lab", "1.0")
    echo = listing.tools[0]
    spec = echo.spec("rel-1")
    assert (spec.capability_key, spec.exposed_name, spec.kind) == ("mcp.lab.echo", "mcp__lab__echo", "mcp")
    assert spec.schema_origin == "mcp"
    assert dict(spec.input_schema)["properties"] == {"text": {"type": "string"}}
    assert echo.annotations == {"readOnlyHint": True, "idempotentHint": True}  # display only
    assert listing.tools[1].spec("rel-1").output_schema is not None


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_s6_2_everything_server_lists_and_calls_over_stdio_and_streamable_http(
    transport: str, tmp_path: Path, everything: Path, node: str, request: pytest.FixtureRequest,
) -> None:
    config = everything_stdio(node, everything) if transport == "stdio" else \
        http(request.getfixturevalue("everything_http"))
    pool = Pool(tmp_path)
    tools = await pool.tools("everything", config)

    assert {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} <= set(tools)
    assert tools["echo"].spec("r").exposed_name == "mcp__everything__echo"
    # no sampling / elicitation / tasks declared: the server registers none of their tools
    assert not {"trigger-sampling-request", "trigger-elicitation-request"} & set(tools)
    # roots are declared on stdio only
    assert ("get-roots-list" in tools) == (transport == "stdio")

    echoed = await pool.call(tools["echo"], {"message": "hi"})
    assert echoed.status == "succeeded" and echoed.text() == "Echo: hi"
    assert echoed.metadata["mcp"]["connection"]["protocol_version"] == "2025-11-25"
    assert echoed.metadata["mcp"]["connection"]["transport"] == transport

    weather = await pool.call(tools["get-structured-content"], {"location": "Chicago"})
    assert weather.status == "succeeded"
    assert weather.content[0] == JsonBlock({"temperature": 36, "conditions": "Light rain / drizzle",
                                            "humidity": 82})

    invalid = await pool.call(tools["echo"], {})  # the server's own validation: a tool error
    assert invalid.status == "failed" and invalid.error is not None
    assert invalid.error.code == "MCP_TOOL_ERROR" and invalid.error.external_outcome == "known"
    await pool.sessions.aclose()


async def test_s6_2_structured_content_is_checked_against_the_output_schema(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", lab_stdio())

    added = await pool.call(tools["add"], {"a": 2, "b": 3})
    bad = await pool.call(tools["bad_shape"])

    assert added.status == "succeeded" and added.content == (JsonBlock({"total": 5}),)
    assert bad.status == "failed" and bad.error is not None
    assert bad.error.code == "MCP_OUTPUT_INVALID"
    assert "does not match its output schema" in bad.error.message and "total" in bad.error.message
    await pool.sessions.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_s6_2_is_error_is_a_failed_result_and_a_json_rpc_error_a_protocol_error(
    transport: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    config = lab_stdio() if transport == "stdio" else http(request.getfixturevalue("lab_http"))
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", config)

    failed = await pool.call(tools["fail"])
    refused = await pool.call(tools["boom"])

    assert failed.status == "failed" and failed.error is not None
    assert (failed.error.code, failed.error.category, failed.error.external_outcome) == (
        "MCP_TOOL_ERROR", "business", "known")
    assert "it failed on purpose" in failed.error.message
    assert failed.content == (TextBlock("it failed on purpose"),)
    assert refused.error is not None
    assert (refused.error.code, refused.error.category) == ("MCP_PROTOCOL_ERROR", "protocol")
    assert refused.error.details == {"jsonrpc_code": -32099}
    assert "the lab server exploded" in refused.error.message
    assert refused.status == "unknown"  # an error mid-call: the server may have done part of it
    await pool.sessions.aclose()


async def test_s6_2_progress_notifications_are_observed_and_kept_with_the_result(
    tmp_path: Path, everything: Path, node: str,
) -> None:
    pool = Pool(tmp_path)
    lab = await pool.tools("lab", lab_stdio())
    ref = await pool.tools("everything", everything_stdio(node, everything))

    slow = await pool.call(lab["slow"], {"steps": 3})
    long = await pool.call(ref["trigger-long-running-operation"], {"duration": 0.3, "steps": 3})

    assert slow.status == "succeeded" and long.status == "succeeded"
    assert [p["progress"] for p in slow.metadata["mcp"]["progress"]] == [1, 2, 3]
    assert [p["progress"] for p in long.metadata["mcp"]["progress"]] == [1, 2, 3]
    observed = pool.kinds("mcp.progress")
    assert [(e["capability"], e["progress"], e["total"]) for e in observed] == [
        ("mcp.lab.slow", 1, 3), ("mcp.lab.slow", 2, 3), ("mcp.lab.slow", 3, 3),
        ("mcp.everything.trigger-long-running-operation", 1, 3),
        ("mcp.everything.trigger-long-running-operation", 2, 3),
        ("mcp.everything.trigger-long-running-operation", 3, 3)]
    assert all(e["run_id"] == "run-1" for e in observed)
    await pool.sessions.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_s6_2_sampling_and_elicitation_requests_are_refused_without_hanging(
    transport: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    config = lab_stdio() if transport == "stdio" else http(request.getfixturevalue("lab_http"))
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", config)

    with anyio.fail_after(NO_HANG_S):
        sampling = await pool.call(tools["ask_sampling"])
        elicitation = await pool.call(tools["ask_elicitation"])

    assert sampling.text() == "sampling refused: -32600 Sampling not supported"
    assert elicitation.text() == "elicitation refused: -32600 Elicitation not supported"
    await pool.sessions.aclose()


async def test_s6_2_list_changed_is_observed_and_the_listed_catalog_is_kept(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", lab_stdio())

    grown = await pool.call(tools["grow"])

    assert grown.text() == "grown"
    await _until(lambda: bool(pool.kinds("mcp.list_changed")))
    assert pool.kinds("mcp.list_changed") == [{"server": "lab", "run_id": "run-1", "what": "tools"}]
    assert "late" not in tools  # what was listed stays what was listed
    await pool.sessions.aclose()


async def test_s6_2_a_server_answering_another_protocol_version_is_refused(tmp_path: Path) -> None:
    old = lab_stdio().model_copy(update={"args": (str(SERVERS / "oldversion.py"),)})

    with pytest.raises(McpError) as caught:
        await list_servers({"old": old}, base_dir=tmp_path, backend="none")

    assert caught.value.code == "MCP_VERSION_UNSUPPORTED"
    assert "answered protocol 2024-11-05" in caught.value.error.message
    assert "speaks 2025-11-25 only" in caught.value.error.message


async def test_s6_2_one_session_per_run_and_server_closed_with_the_run(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", lab_stdio())

    pids = {(await pool.call(tools["pid"], run_id="run-a")).text() for _ in range(100)}
    other = (await pool.call(tools["pid"], run_id="run-b")).text()

    assert len(pids) == 1 and pool.sessions.opened == 2 and other not in pids
    (pid,) = pids
    assert _alive(pid)
    await pool.sessions.close_run("run-a")
    await _until(lambda: not _alive(pid))
    assert pool.sessions.open_runs() == {"run-b"}
    # a new lease epoch (a takeover) never reuses the old holder's session
    again = (await pool.call(tools["pid"], run_id="run-b", lease_epoch=2)).text()
    assert again != other and pool.sessions.opened == 3
    await pool.sessions.aclose()


def _alive(pid: str) -> bool:
    """The process exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status.split("State:")[1].split("\n")[0].lower()


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``, polling, for at most ``NO_HANG_S``."""
    with anyio.fail_after(NO_HANG_S):
        while not condition():  # noqa: ASYNC110 - a condition outside our control
            await anyio.sleep(0.02)


async def test_s6_2_a_stdio_server_gets_only_its_declared_env_with_secrets_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAB_TOKEN_SOURCE", "s3cr3t-value")
    monkeypatch.setenv("PARENT_ONLY_SECRET", "never-inherited")
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", lab_stdio(env={"LAB_TOKEN": "${LAB_TOKEN_SOURCE}"}))

    token = await pool.call(tools["env"], {"name": "LAB_TOKEN"})
    parent = await pool.call(tools["env"], {"name": "PARENT_ONLY_SECRET"})

    # the server echoes exactly the resolved secret, which comes back redacted (issue #34, 6)
    assert token.text() == "[redacted]" and parent.text() == "<unset>"
    await pool.sessions.aclose()


async def test_s6_2_an_unset_secret_variable_is_named_and_nothing_starts(tmp_path: Path) -> None:
    config = lab_stdio(env={"LAB_TOKEN": "${AGENTLOOM_TEST_UNSET_VAR}"})
    os.environ.pop("AGENTLOOM_TEST_UNSET_VAR", None)

    with pytest.raises(McpError) as caught:
        await list_servers({"lab": config}, base_dir=tmp_path, backend="none")

    assert caught.value.code == "MCP_SECRET_MISSING"
    assert "mcp_servers.lab.env.LAB_TOKEN refers to ${AGENTLOOM_TEST_UNSET_VAR}" in str(caught.value)


def test_s6_2_a_confined_backend_without_a_sandboxed_launcher_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "agentloom.mcp.sandboxed", None)  # not installed
    launch = launcher_for("bubblewrap")

    from agentloom.mcp import LaunchContext

    with pytest.raises(SandboxError) as caught:
        launch(lab_stdio(), LaunchContext(server_name="lab", run_id="r", lease_epoch=1,
                                          workspace_scope_id=None, workspace=tmp_path,
                                          base_dir=tmp_path, backend="bubblewrap"))
    assert caught.value.code == "SANDBOX_UNAVAILABLE"
    assert "sandbox: {backend: none}" in str(caught.value)


async def test_s6_2_server_log_messages_become_bus_observations(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    tools = await pool.tools("lab", lab_stdio())

    said = await pool.call(tools["say"], {"text": "careful"})

    assert said.text() == "said"
    await _until(lambda: bool(pool.kinds("mcp.log")))
    assert pool.kinds("mcp.log") == [{"server": "lab", "run_id": "run-1", "level": "warning",
                                      "logger": "lab", "data": {"said": "careful"}}]
    await pool.sessions.aclose()


async def test_s6_2_a_call_past_its_timeout_is_cancelled_and_its_outcome_unknown(tmp_path: Path) -> None:
    pool = Pool(tmp_path)
    # timeout_s bounds the server's start and initialize too (issue #34, 5): room for both
    tools = await pool.tools("lab", lab_stdio(timeout_s=5.0))

    with anyio.fail_after(NO_HANG_S):
        cut = await pool.call(tools["slow"], {"steps": 2000})  # 20 s of work
    after = await pool.call(tools["echo"], {"text": "still here"})

    assert cut.status == "unknown" and cut.error is not None
    assert cut.error.code == "MCP_CALL_TIMEOUT" and cut.error.external_outcome == "unknown"
    assert "notifications/cancelled" in cut.error.message and "not undo" in cut.error.message
    assert after.text() == "echo: still here"  # the session outlives a cancelled call
    await pool.sessions.aclose()
