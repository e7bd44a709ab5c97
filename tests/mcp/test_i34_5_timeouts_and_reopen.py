"""Issue #34 (5): MCP robustness, on the real stdio server ``servers/rough.py``.

- Every step has a timeout: a server's ``timeout_s`` bounds ``initialize`` and each listing
  (``tools/list``, ``resources/list``, ``resources/templates/list``, ``prompts/list``) as it
  bounds a call; the failure is ``MCP_STEP_TIMEOUT`` naming the server, the step and the limit.
- A server that exits is opened again once per run: only the call in flight when it died is
  ``unknown``; the next call goes to a new process; once that one is gone too, later calls
  fail ``not_started`` (``MCP_SERVER_EXITED``), never sent, with no more processes started.
- A line a stdio server writes that is not JSON-RPC is one warning naming the server, never a
  traceback, and the session goes on.

``agentloom`` runs in a subprocess bounded by ``TIMEOUT_S``, the in-process calls by
``anyio.fail_after``: a step that hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import SERVERS, Pool

from agentloom.config.mcp import StdioServerConfig
from agentloom.mcp import McpError, connected, list_prompts, list_servers

ROUGH = SERVERS / "rough.py"
TIMEOUT_S = 60
"""A generous bound of one CLI process or one in-process test; every step here is limited
to ``timeout_s: 1`` (a hang before the fix ran forever, or 30 s for ``initialize``)."""


def agentloom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)


def project(folder: Path, faults: list[str], *, calls: int = 1, timeout_s: float = 1) -> Path:
    """A config whose agent calls ``mcp.rough.poke`` ``calls`` times, then says ``done``; the
    server's faults are ``faults`` and its ledger ``folder/ledger.txt``."""
    turns = "".join(f"  - tool_calls:\n      - {{id: c{i}, name: mcp__rough__poke, arguments: {{}}}}\n"
                    for i in range(calls))
    (folder / "turns.yaml").write_text(f"turns:\n{turns}  - text: done\n", encoding="utf-8")
    args = ", ".join(json.dumps(a) for a in (str(ROUGH), *faults))
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        "    tools: [mcp.rough.poke]\n"
        f"mcp_servers:\n  rough: {{transport: stdio, command: {json.dumps(sys.executable)}, "
        f"args: [{args}], env: {{ROUGH_LEDGER: {json.dumps(str(folder / 'ledger.txt'))}}}, "
        f"timeout_s: {timeout_s}}}\nsandbox: {{backend: none}}\n", encoding="utf-8")
    return config


def rough(folder: Path, *faults: str, timeout_s: float = 1) -> StdioServerConfig:
    return StdioServerConfig(transport="stdio", command=sys.executable,
                             args=(str(ROUGH), *faults), timeout_s=timeout_s,
                             env={"ROUGH_LEDGER": str(folder / "ledger.txt")})


def ledger(folder: Path) -> list[str]:
    path = folder / "ledger.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def tool_calls(folder: Path, store: str, run_id: str) -> list[dict[str, Any]]:
    shown = agentloom("runs", "show", run_id, "--store", store, "--json", cwd=folder)
    assert shown.returncode == 0, shown.stderr
    return [o for o in json.loads(shown.stdout)["operations"] if o["kind"] == "tool"]


def summary(op: dict[str, Any]) -> tuple[str, str | None, str | None]:
    error = op.get("error") or {}
    return op["status"], error.get("code"), error.get("external_outcome")


# -- (a) every step has a timeout ------------------------------------------------------------------

@pytest.mark.parametrize("step", ["initialize", "tools/list"])
def test_i34_5_agentloom_run_fails_after_timeout_s_when_a_server_hangs_at_a_step(
    step: str, tmp_path: Path,
) -> None:
    config = project(tmp_path, [f"hang:{step}"])

    ran = agentloom("run", str(config), "poke", "--store", f"sqlite:///{tmp_path / 'a.db'}",
                    "--json", cwd=tmp_path)

    assert ran.returncode == 2, (ran.stdout, ran.stderr)
    error = json.loads(ran.stdout)["error"]
    assert error["code"] == "MCP_STEP_TIMEOUT", error
    assert (f"MCP server 'rough' did not answer {step} within 1 s "
            "(mcp_servers.rough.timeout_s)") in error["message"]
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize("step", ["initialize", "tools/list", "resources/list",
                                  "resources/templates/list", "prompts/list"])
async def test_i34_5_each_listing_step_is_bounded_by_the_servers_timeout_s(
    step: str, tmp_path: Path,
) -> None:
    config = rough(tmp_path, f"hang:{step}")
    with anyio.fail_after(TIMEOUT_S), pytest.raises(McpError) as raised:
        if step == "prompts/list":  # ``agentloom mcp prompts``
            async with connected("rough", config, base_dir=tmp_path, backend="none") as conn:
                await list_prompts(conn)
        else:  # what a runtime build and ``agentloom mcp list`` do
            await list_servers({"rough": config}, base_dir=tmp_path, backend="none")

    assert raised.value.code == "MCP_STEP_TIMEOUT"
    assert raised.value.error.category == "timeout"
    assert str(raised.value) == (f"MCP server 'rough' did not answer {step} within 1 s "
                                 "(mcp_servers.rough.timeout_s)")


# -- (b) a server that exits: reopened once per run, calls never sent are not_started -------------

def test_i34_5_a_server_exiting_mid_call_is_reopened_once_then_later_calls_are_not_started(
    tmp_path: Path,
) -> None:
    config = project(tmp_path, ["exit-at-call:2"], calls=6, timeout_s=30)
    store = f"sqlite:///{tmp_path / 'b.db'}"

    ran = agentloom("run", str(config), "poke six times", "--store", store, "--json", cwd=tmp_path)

    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["status"] == "succeeded", out
    calls = tool_calls(tmp_path, store, out["run_id"])
    assert [summary(op) for op in calls] == [
        ("succeeded", None, None),
        ("unknown", "MCP_CONNECTION_LOST", "unknown"),  # in flight when the server exited
        ("succeeded", None, None),  # the next call: a new session, a new process
        ("unknown", "MCP_CONNECTION_LOST", "unknown"),  # the reopened one exits too
        ("failed", "MCP_SERVER_EXITED", "not_started"),
        ("failed", "MCP_SERVER_EXITED", "not_started"),
    ]
    assert calls[2]["raw_result"] == "poked 1"  # the first call of the second process
    assert "'rough'" in calls[4]["error"]["message"]
    assert "not sent" in calls[4]["error"]["message"]
    # one process listed the tools, two served the run; calls 5 and 6 reached none
    assert [line.split()[0] for line in ledger(tmp_path)] == [
        "start", "start", "call", "call", "start", "call", "call"]


async def test_i34_5_reopen_budget_is_per_run_and_no_process_starts_once_it_is_spent(
    tmp_path: Path,
) -> None:
    pool = Pool(tmp_path)
    config = rough(tmp_path, "exit-at-call:1", timeout_s=30)
    try:
        with anyio.fail_after(TIMEOUT_S):
            poke = (await pool.tools("rough", config))["poke"]
            first = await pool.call(poke)
            second = await pool.call(poke)  # a new session: the call reaches its server
            third = await pool.call(poke)
            fourth = await pool.call(poke)
            other_run = await pool.call(poke, run_id="run-2")  # its own reopen budget
    finally:
        await pool.sessions.aclose()

    assert first.status == second.status == "unknown"
    assert first.error is not None and first.error.code == "MCP_CONNECTION_LOST"
    for refused in (third, fourth):
        assert refused.status == "failed" and refused.error is not None
        assert (refused.error.code, refused.error.external_outcome) == ("MCP_SERVER_EXITED",
                                                                        "not_started")
    assert other_run.status == "unknown"  # run-2 opened its own session, which got the call
    assert pool.sessions.opened == 3
    assert [line.split()[0] for line in ledger(tmp_path)] == [
        "start", "start", "call", "start", "call", "start", "call"]


# -- (c) a line that is not JSON-RPC ---------------------------------------------------------------

def test_i34_5_a_garbage_stdout_line_is_one_warning_naming_the_server_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    config = project(tmp_path, ["garbage"], calls=2, timeout_s=30)
    store = f"sqlite:///{tmp_path / 'c.db'}"

    ran = agentloom("run", str(config), "poke twice", "--store", store, "--json", cwd=tmp_path)

    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["status"] == "succeeded", out
    calls = tool_calls(tmp_path, store, out["run_id"])
    assert [(op["status"], op["raw_result"]) for op in calls] == [("succeeded", "poked 1"),
                                                                  ("succeeded", "poked 2")]
    assert "Traceback" not in ran.stderr
    warned = [line for line in ran.stderr.splitlines() if "not JSON-RPC" in line]
    assert len(warned) == 1 and "'rough'" in warned[0], ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr  # nothing else was printed
    assert [line.split()[0] for line in ledger(tmp_path)].count("start") == 2  # one session
