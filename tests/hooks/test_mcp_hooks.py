"""Issue 16, hook handler kinds: ``kind: mcp`` hooks.

The edge fake is a real MCP server over stdio (``tests/mcp/servers/hook_lab.py``, unconfined:
``sandbox_backend="none"``). The hook calls its tool on the run's MCP session with the event as
arguments; structuredContent (or JSON text) is the decision; every outcome — deny, allow with a
patch, ``isError``, text that is no JSON, a timeout — is recorded with the statuses Python hooks
get, and a process killed mid-hook leaves the hook ``indeterminate``. The server and tool are
checked when the runtime is built, naming the key.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.hooks.support import HookSetup
from tests.pipeline.support import CountingTool, spec
from typer.testing import CliRunner

from agentloom.assembly import hook_specs, runtime_from_config
from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.config.loader import parse_config
from agentloom.config.mcp import StdioServerConfig
from agentloom.errors import ConfigError
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel

REPO = Path(__file__).resolve().parents[2]
HOOK_LAB = REPO / "tests" / "mcp" / "servers" / "hook_lab.py"
SECRET = "hook-lab-secret-5150"
WAIT_S = 30.0


def server(log: Path) -> StdioServerConfig:
    return StdioServerConfig(transport="stdio", command=sys.executable, args=(str(HOOK_LAB),),
                             env={"HOOK_LAB_LOG": str(log), "HOOK_LAB_SECRET": "${HOOK_LAB_SECRET}"})


@dataclass
class Setup(HookSetup):
    log: Path


def mcp(hook_id: str, tool: str, log: Path, *, timeout_s: float = 10.0,
        on_failure: str = "allow") -> HookSpec:
    return HookSpec(hook_id=hook_id, timing="before",
                    handler=HandlerRef(kind="mcp", server="hooks", tool=tool,
                                       server_config=server(log), project_dir=str(log.parent)),
                    timeout_s=timeout_s, on_failure=on_failure)  # type: ignore[arg-type]


@pytest.fixture
async def make(durable_store_url: str, tmp_path: Path,
               monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Callable[..., Awaitable[Setup]]]:
    monkeypatch.setenv("HOOK_LAB_SECRET", SECRET)
    made: list[Kernel] = []
    log = tmp_path / "hook_lab.log"

    async def factory(hooks: Callable[[Path], list[HookSpec]]) -> Setup:
        kernel = Kernel(durable_store_url, hooks=hooks(log), workspace_root=tmp_path / "ws",
                        sandbox_backend="none")
        made.append(kernel)
        tool = CountingTool()
        kernel.publish("rel", [(spec(), tool)], roles={"main": ["demo.echo"]})
        lease = await kernel.start_run(workspace=False)
        return Setup(kernel, tool, lease, kernel.invocation_context(lease, release_id="rel"), log)

    yield factory
    for kernel in made:
        await kernel.close_mcp_sessions()
        kernel.close()


async def test_i16_mcp_hook_deny_stands_with_its_reason_and_receives_the_event(make: Any) -> None:
    h = await make(lambda log: [mcp("gate", "gate", log)])
    result = await h.call("something forbidden")
    assert result.outcome == "denied_before_execution" and h.tool.calls == []
    # the reason names what only the event carried: the tool got the event as its arguments
    assert result.reason == f"forbidden in demo.echo (operation {result.operation_id})"
    row = h.rows(result.operation_id)["gate"]
    assert (row["status"], row["decision"]) == ("succeeded", "deny")
    # the hook's call is its own invocation, never an operation of the pipeline
    ops = h.kernel.store.query("operations", {"run_id": h.lease.run_id})
    assert [o["capability_key"] for o in ops] == ["demo.echo"]


async def test_i16_mcp_hook_allow_with_patch_changes_what_executes(make: Any) -> None:
    h = await make(lambda log: [mcp("gate", "gate", log), mcp("text", "text_allow", log),
                                mcp("silent", "silent", log)])
    result = await h.call("raw")
    assert result.succeeded and result.executed_arguments == {"text": "patched"}
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "patched"}]
    assert [(r["status"], r["decision"]) for r in h.rows(result.operation_id).values()] == [
        ("succeeded", "allow")] * 3
    assert h.kernel.mcp_sessions.opened == 1  # three hooks, one session of the run


async def test_i16_mcp_hook_is_error_is_a_failure_fail_open_or_on_failure_deny(make: Any) -> None:
    h = await make(lambda log: [mcp("broken", "broken", log)])
    result = await h.call()
    assert result.succeeded and len(h.tool.calls) == 1  # fail-open
    row = h.rows(result.operation_id)["broken"]
    assert row["status"] == "failed" and "MCP_TOOL_ERROR" in row["data"]["diagnostic"]
    assert "policy store down" in row["data"]["diagnostic"]
    stored = json.dumps(h.kernel.store.query("hook_invocations", {}))
    assert SECRET not in stored  # the server echoed its ${VAR}: redacted

    strict = await make(lambda log: [mcp("broken", "broken", log, on_failure="deny")])
    denied = await strict.call()
    assert denied.outcome == "denied_before_execution" and strict.tool.calls == []
    assert strict.rows(denied.operation_id)["broken"]["status"] == "failed"


async def test_i16_mcp_hook_garbage_text_is_an_invalid_decision(make: Any) -> None:
    h = await make(lambda log: [mcp("garbage", "garbage", log)])
    result = await h.call()
    assert result.succeeded
    row = h.rows(result.operation_id)["garbage"]
    assert row["status"] == "invalid" and "not JSON" in row["data"]["diagnostic"]


async def test_i16_mcp_hook_timeout_is_timed_out_and_the_call_cancelled(make: Any) -> None:
    # the first hook opens the run's session (starting the server is not the slow hook's time)
    h = await make(lambda log: [mcp("warm", "silent", log),
                                mcp("slow", "slow", log, timeout_s=1.0)])
    result = await h.call()
    assert result.succeeded  # fail-open
    assert h.rows(result.operation_id)["slow"]["status"] == "timed_out"
    for _ in range(int(WAIT_S * 10)):  # notifications/cancelled reaches the server
        if h.log.exists() and "cancelled" in h.log.read_text():
            break
        await asyncio.sleep(0.1)
    assert h.log.read_text().splitlines()[-1] == "cancelled"


CHILD = """
import asyncio, sys
from agentloom.config.mcp import StdioServerConfig
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel
from tests.pipeline.support import CountingTool, spec

def build(store, root, log):
    config = StdioServerConfig(transport="stdio", command=sys.executable,
                               args=(HOOK_LAB_PATH,), env={"HOOK_LAB_LOG": log})
    hook = HookSpec(hook_id="slow", timing="before", timeout_s=120,
                    handler=HandlerRef(kind="mcp", server="hooks", tool="slow",
                                       server_config=config))
    kernel = Kernel(store, workspace_root=root, sandbox_backend="none", hooks=[hook])
    kernel.publish("rel", [(spec(), CountingTool())], roles={"main": ["demo.echo"]})
    return kernel

async def main(store, root, log, run_id):
    kernel = build(store, root, log)
    lease = await kernel.start_run(run_id=run_id)
    await kernel.bus.request("demo_echo", {"text": "hi"},
                             kernel.invocation_context(lease, release_id="rel"))

if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
""".replace("HOOK_LAB_PATH", repr(str(HOOK_LAB)))


async def test_i16_sigkill_mid_mcp_hook_is_indeterminate_after_resume(tmp_path: Path) -> None:
    store, root, log = f"sqlite:///{tmp_path / 'agentloom.db'}", tmp_path / "ws", tmp_path / "log"
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(child), store, str(root), str(log), "run-k",
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    server_pid = None
    try:
        for _ in range(int(WAIT_S * 10)):
            if (log.exists() and "started" in log.read_text()) or proc.returncode is not None:
                break
            await asyncio.sleep(0.1)
        assert proc.returncode is None, "the AgentLoom process ended before its hook ran"
        server_pid = int(log.read_text().split()[1])
        proc.send_signal(signal.SIGKILL)  # the AgentLoom process dies mid-hook
        await asyncio.wait_for(proc.wait(), WAIT_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if server_pid is not None:  # the orphaned server: its stdin closed, it ends; or we end it
            try:
                os.kill(server_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    sys.path.insert(0, str(tmp_path))
    try:
        from child import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    kernel = build(store, str(root), str(log))
    try:
        lease = kernel.claim("run-k")
        (recovered,) = await asyncio.wait_for(
            kernel.recover(kernel.invocation_context(lease, release_id="rel")), WAIT_S)
        (row,) = kernel.store.query("hook_invocations", {"operation_id": recovered.operation_id})
        assert row["status"] == "indeterminate"  # as for a Python hook: never run again
        assert recovered.outcome == "succeeded"  # fail-open (on_failure: allow)
        assert log.read_text().count("started") == 1  # the hook was not called again
    finally:
        await kernel.close_mcp_sessions()
        kernel.close()
        sys.modules.pop("child", None)


# -- configuration --------------------------------------------------------------------------------

TURNS = """\
turns:
  - tool_calls:
      - {id: w, name: fs_write, arguments: {path: a.txt, content: "forbidden words"}}
  - expect: {role: tool, contains: "forbidden in fs.write"}
    text: refused
"""


def project(folder: Path, handler: str, *, servers: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    entry = servers if servers is not None else (
        f"  hooks: {{transport: stdio, command: {json.dumps(sys.executable)}, "
        f"args: [{json.dumps(str(HOOK_LAB))}], env: {{HOOK_LAB_LOG: log.txt}}}}\n")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        "agents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n    tools: [fs.write]\n"
        "    hooks:\n      - {timing: before, match: {capability: fs.write}, "
        f"handler: {handler}}}\n"
        f"mcp_servers:\n{entry}sandbox: {{backend: none}}\n", encoding="utf-8")
    return config


def test_i16_mcp_hook_from_config_denies_and_the_model_sees_the_reason(
    tmp_path: Path, durable_store_url: str,
) -> None:
    config = project(tmp_path / "p", "{kind: mcp, server: hooks, tool: gate, timeout_s: 20}")
    (hook,) = hook_specs(load_config(config))
    assert hook.timeout_s == 20 and hook.handler.server_config is not None
    assert hook.to_dict()["handler"] == {"kind": "mcp", "ref": "", "server": "hooks",
                                         "tool": "gate"}
    run = CliRunner().invoke(app, ["run", str(config), "write it", "--store", durable_store_url,
                                   "--json"], catch_exceptions=False)
    assert run.exit_code == 0, (run.stdout, run.stderr)
    out = json.loads(run.stdout)
    # the script's expect: the tool message the model got holds the hook's reason
    assert out["status"] == "succeeded" and out["output"] == "refused", out
    assert not (tmp_path / "p" / "a.txt").exists()


def test_i16_mcp_hook_unknown_server_or_tool_fails_the_build_naming_the_key(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    unknown = project(tmp_path / "s", "{kind: mcp, server: nope, tool: gate}")
    with pytest.raises(ConfigError, match=r"agents\.main\.hooks\[0\]\.handler\.server: no MCP "
                                          r"server named 'nope'"):
        runtime_from_config(load_config(unknown), store=store)
    unlisted = project(tmp_path / "t", "{kind: mcp, server: hooks, tool: gait}")
    with pytest.raises(ConfigError, match=r"agents\.main\.hooks\[0\]\.handler\.tool: MCP server "
                                          r"'hooks' lists no tool 'gait'") as raised:
        runtime_from_config(load_config(unlisted), store=store)
    assert raised.value.code == "MCP_TOOL_NOT_LISTED"


def test_i16_mcp_handler_config_names_unknown_keys(tmp_path: Path) -> None:
    def specs(handler: dict[str, Any]) -> tuple[HookSpec, ...]:
        return hook_specs(parse_config({"version": 1, "agents": {"main": {
            "model": {"builtin": "test"},
            "hooks": [{"timing": "before", "handler": handler}]}}, "mcp_servers": {
            "s": {"transport": "stdio", "command": "x"}}}, base_dir=tmp_path))

    (hook,) = specs({"kind": "mcp", "server": "s", "tool": "t"})
    assert (hook.handler.kind, hook.handler.server, hook.handler.tool) == ("mcp", "s", "t")
    with pytest.raises(ConfigError, match=r"handler\.arguments: unknown key 'arguments'"):
        specs({"kind": "mcp", "server": "s", "tool": "t", "arguments": {}})
    with pytest.raises(ConfigError, match=r"handler\.tool"):
        specs({"kind": "mcp", "server": "s"})
