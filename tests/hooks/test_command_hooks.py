"""Issue 16, hook handler kinds and acceptance 4: ``kind: command`` hooks.

A command hook is a real program run in the sandbox (Landlock or bubblewrap, each test once
per backend this machine has): the event as JSON on stdin, its working folder the config
file's folder, exit 0 + JSON stdout a decision, exit 2 a deny with stderr as the reason,
anything else a hook failure. Every outcome is recorded with the statuses Python hooks get
(``tests/pipeline/test_s9_hooks.py``), and the command sees only its declared environment,
cannot write the project folder or the workspace, and leaves no process behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.hooks.support import HookSetup
from tests.pipeline.support import CountingTool, spec
from tests.sandbox.conftest import BACKENDS, require_backend, searchable

from agentloom.assembly import hook_specs
from agentloom.config.loader import parse_config
from agentloom.errors import ConfigError
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel

WAIT_S = 30.0
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Setup(HookSetup):
    project: Path


def command(hook_id: str, line: str | None = None, *, argv: tuple[str, ...] | None = None,
            project: Path, env: dict[str, str] | None = None, timeout_s: float = 10.0,
            on_failure: str = "allow", timing: str = "before") -> HookSpec:
    return HookSpec(hook_id=hook_id, timing=timing,  # type: ignore[arg-type]
                    handler=HandlerRef(kind="command", command=line, argv=argv,
                                       env=tuple((env or {}).items()), project_dir=str(project)),
                    timeout_s=timeout_s, on_failure=on_failure)  # type: ignore[arg-type]


def open_folder(path: Path) -> Path:
    """A folder the sandbox uid may read (as root, commands run as uid 65534)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o755)
    searchable(path)
    return path


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return str(request.param)


@pytest.fixture
async def make(tmp_path: Path, backend: str) -> AsyncIterator[Callable[..., Awaitable[Setup]]]:
    made: list[Kernel] = []
    project = open_folder(tmp_path / "project")

    async def factory(hooks: Callable[[Path], list[HookSpec]], *,
                      workdir: Path | None = None) -> Setup:
        kernel = Kernel(f"sqlite:///{tmp_path / 'agentloom.db'}",
                        workspace_root=open_folder(tmp_path / "ws"), sandbox_backend=backend,  # type: ignore[arg-type]
                        hooks=hooks(project))
        made.append(kernel)
        tool = CountingTool()
        kernel.publish("rel", [(spec(), tool)], roles={"main": ["demo.echo"]})
        lease = await kernel.start_run(workdir=workdir)
        return Setup(kernel, tool, lease, kernel.invocation_context(lease, release_id="rel"),
                     project)

    yield factory
    for kernel in made:
        await kernel.hooks.runner("command").aclose()  # type: ignore[attr-defined]
        kernel.close()


def processes_with(marker: str) -> list[int]:
    """Ids of the processes whose command line holds ``marker`` (in any PID namespace)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline.split(b"\0"):
                found.append(int(entry))
    return found


async def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.02)


async def test_i16_4_command_hook_exit_2_denies_with_stderr_as_the_reason(make: Any) -> None:
    h = await make(lambda p: [command("guard", "echo 'no rm -rf here' >&2; exit 2", project=p)])
    result = await h.call()
    assert result.outcome == "denied_before_execution"
    assert result.reason == "no rm -rf here"  # what the model is told
    assert h.tool.calls == []
    row = h.rows(result.operation_id)["guard"]
    assert (row["status"], row["decision"]) == ("succeeded", "deny")


async def test_i16_4_command_hook_reads_the_event_on_stdin_in_the_project_folder(make: Any) -> None:
    script = ('{ cat; echo; pwd; echo "$AGENTLOOM_PROJECT_DIR"; echo "$CLAUDE_PROJECT_DIR"; } >&2;'
              " exit 2")
    h = await make(lambda p: [command("look", script, project=p)])
    result = await h.call("from the model")
    event_line, cwd, project, claude = result.reason.splitlines()
    event = json.loads(event_line)
    assert event["capability"] == "demo.echo" and event["timing"] == "before"
    assert event["payload"] == {"text": "from the model"}
    assert event["run_id"] == h.lease.run_id and event["operation_id"] == result.operation_id
    assert cwd == project == claude
    assert project in (str(h.project), "/resources/project")  # Landlock: host path; bwrap: mount


async def test_i16_4_command_hook_allow_with_patch_changes_what_executes(make: Any) -> None:
    patch = json.dumps({"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/payload/text", "value": "patched"}]})
    h = await make(lambda p: [
        command("shell", f"cat >/dev/null; printf '%s' '{patch}'", project=p),
        command("argv", argv=("/bin/sh", "-c", "cat >/dev/null"), project=p),  # empty: allow
    ])
    result = await h.call("raw")
    assert result.succeeded
    assert [c["arguments"] for c in h.tool.calls] == [{"text": "patched"}]
    assert result.executed_arguments == {"text": "patched"}
    rows = h.rows(result.operation_id)
    assert [(r["status"], r["decision"]) for r in rows.values()] == [("succeeded", "allow")] * 2


async def test_i16_4_command_hook_crash_is_a_recorded_hook_failure(make: Any) -> None:
    h = await make(lambda p: [
        command("crash", "echo 'stack trace api_key=abc123secretvalue' >&2; exit 3", project=p),
        command("strict", "exit 1", project=p, on_failure="deny"),
    ])
    result = await h.call()
    rows = h.rows(result.operation_id)
    assert rows["crash"]["status"] == "failed"
    diagnostic = rows["crash"]["data"]["diagnostic"]
    assert "exited with status 3" in diagnostic and "abc123secretvalue" not in diagnostic
    # a failed hook with on_failure: deny denies the call, as a Python hook's would
    assert rows["strict"]["status"] == "failed"
    assert result.outcome == "denied_before_execution" and h.tool.calls == []


async def test_i16_4_command_hook_garbage_stdout_is_an_invalid_decision(make: Any) -> None:
    h = await make(lambda p: [command("garbage", "echo 'this is not json'", project=p),
                              command("wrong", "echo '{\"decision\": \"maybe\"}'", project=p)])
    result = await h.call()
    assert result.succeeded  # fail-open for each hook
    rows = h.rows(result.operation_id)
    assert [r["status"] for r in rows.values()] == ["invalid", "invalid"]
    assert "not JSON" in rows["garbage"]["data"]["diagnostic"]


async def test_i16_4_command_hook_timeout_kills_its_process_group(make: Any) -> None:
    marker = "47.123"  # a sleep only this test starts
    h = await make(lambda p: [command("slow", f"sleep {marker} & sleep {marker}; wait",
                                      project=p, timeout_s=1.0)])
    call = asyncio.ensure_future(h.call())
    await wait_for(lambda: len(processes_with(marker)) == 2, "both sleeps run")
    result = await asyncio.wait_for(call, WAIT_S)
    assert result.succeeded  # fail-open
    assert h.rows(result.operation_id)["slow"]["status"] == "timed_out"
    await wait_for(lambda: not processes_with(marker), "every process of the hook is gone")


async def test_i16_4_command_hook_sees_only_its_declared_env(
    make: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PARENT_SECRET", "parent-secret-value")
    monkeypatch.setenv("HOOK_TOKEN", "tok-value-987")
    script = ('case "$GIVEN" in tok-value-*) echo given-ok;; esac >&2;'
              ' env | cut -d= -f1 >&2; echo "GIVEN=$GIVEN" >&2; exit 2')
    h = await make(lambda p: [command("env", script, project=p,
                                      env={"GIVEN": "${HOOK_TOKEN}", "MODE": "strict"})])
    result = await h.call()
    lines = result.reason.splitlines()
    assert lines[0] == "given-ok"  # ${HOOK_TOKEN} was filled in from the runtime's environment
    names = set(lines[1:-1])
    assert {"GIVEN", "MODE", "PATH", "AGENTLOOM_PROJECT_DIR", "CLAUDE_PROJECT_DIR"} <= names
    assert "PARENT_SECRET" not in names and "HOOK_TOKEN" not in names
    assert lines[-1] == "GIVEN=[redacted]"  # the value never reaches the record
    stored = json.dumps(h.kernel.store.query("hook_invocations", {}))
    assert "tok-value-987" not in stored and "parent-secret-value" not in stored


async def test_i16_4_command_hook_cannot_write_the_project_folder_or_the_workspace(
    make: Any, tmp_path: Path,
) -> None:
    workdir = open_folder(tmp_path / "bound")
    (workdir / "seen.txt").write_text("workspace content")
    os.chmod(workdir / "seen.txt", 0o644)
    script = textwrap.dedent("""\
        for d in "$AGENTLOOM_PROJECT_DIR" "$AGENTLOOM_WORKSPACE_DIR"; do
          if touch "$d/pwned" 2>/dev/null; then echo "wrote $d"; else echo refused; fi
        done >&2
        cat "$AGENTLOOM_WORKSPACE_DIR/seen.txt" >&2
        exit 2""")
    h = await make(lambda p: [command("writer", script, project=p)], workdir=workdir)
    result = await h.call()
    assert result.reason.splitlines() == ["refused", "refused", "workspace content"]
    assert not (h.project / "pwned").exists() and not (workdir / "pwned").exists()


async def test_i33_4_a_command_hook_whose_program_is_not_found_denies_the_call_though_it_fails_open(
    make: Any,
) -> None:
    h = await make(lambda p: [command("guard", argv=("/nonexistent/guard.sh",), project=p,
                                      on_failure="allow")])
    result = await h.call()
    assert result.outcome == "denied_before_execution" and h.tool.calls == []
    assert "could not start" in result.reason and "was not found" in result.reason
    assert "/nonexistent/guard.sh" in result.reason  # the shell's own words reach the model
    row = h.rows(result.operation_id)["guard"]
    assert (row["status"], row["decision"], row["data"]["not_started"]) == ("failed", "deny", True)


async def test_i33_4_a_command_hook_whose_program_cannot_be_run_denies_the_call(
    make: Any, tmp_path: Path,
) -> None:
    def hooks(project: Path) -> list[HookSpec]:
        script = project / "guard.sh"
        script.write_text("#!/bin/sh\nexit 0\n")
        os.chmod(script, 0o644)  # not executable
        return [command("guard", "./guard.sh", project=project)]  # run in the project folder

    h = await make(hooks)
    result = await h.call()
    assert result.outcome == "denied_before_execution" and h.tool.calls == []
    assert "could not start" in result.reason and "cannot be run" in result.reason
    assert h.rows(result.operation_id)["guard"]["data"]["not_started"] is True


async def test_i33_4_a_command_hook_whose_own_code_fails_still_fails_open(make: Any) -> None:
    h = await make(lambda p: [command("flaky", "echo 'policy service down' >&2; exit 1", project=p)])
    result = await h.call()
    assert result.succeeded and len(h.tool.calls) == 1  # the hook's own failure: fail-open
    row = h.rows(result.operation_id)["flaky"]
    assert row["status"] == "failed" and "not_started" not in row["data"]


async def test_i16_4_no_sandbox_is_a_hook_failure_naming_sandbox_unavailable(
    tmp_path: Path,
) -> None:
    if shutil.which("bwrap"):
        pytest.skip("bubblewrap is installed here: the bubblewrap backend is available")
    project = open_folder(tmp_path / "project")
    kernel = Kernel(f"sqlite:///{tmp_path / 'agentloom.db'}", workspace_root=tmp_path / "ws",
                    sandbox_backend="bubblewrap",
                    hooks=[command("guard", "exit 0", project=project, on_failure="allow")])
    try:
        tool = CountingTool()
        kernel.publish("rel", [(spec(), tool)], roles={"main": ["demo.echo"]})
        lease = await kernel.start_run()
        result = await kernel.bus.request("demo_echo", {"text": "hi"},
                                          kernel.invocation_context(lease, release_id="rel"))
        (row,) = kernel.store.query("hook_invocations", {"operation_id": result.operation_id})
        assert row["status"] == "failed" and "SANDBOX_UNAVAILABLE" in row["data"]["diagnostic"]
        # never unconfined, and never passed over though the hook fails open (issue #33)
        assert row["data"]["not_started"] is True
        assert result.outcome == "denied_before_execution" and tool.calls == []
    finally:
        kernel.close()


CHILD = """
import asyncio, sys
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.kernel import Kernel
from tests.pipeline.support import CountingTool, spec

def build(store, root, project, backend):
    hook = HookSpec(hook_id="guard", timing="before", timeout_s=120,
                    handler=HandlerRef(kind="command", command="sleep 59.321",
                                       project_dir=project))
    kernel = Kernel(store, workspace_root=root, sandbox_backend=backend, hooks=[hook])
    kernel.publish("rel", [(spec(), CountingTool())], roles={"main": ["demo.echo"]})
    return kernel

async def main(store, root, project, backend, run_id):
    kernel = build(store, root, project, backend)
    lease = await kernel.start_run(run_id=run_id)
    await kernel.bus.request("demo_echo", {"text": "hi"},
                             kernel.invocation_context(lease, release_id="rel"))

if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
"""


async def test_i16_4_sigkill_mid_command_hook_is_indeterminate_after_resume(
    tmp_path: Path, backend: str,
) -> None:
    marker = "59.321"
    store, root = f"sqlite:///{tmp_path / 'agentloom.db'}", open_folder(tmp_path / "ws")
    project = open_folder(tmp_path / "project")
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(child), store, str(root), str(project), backend, "run-k",
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        await wait_for(lambda: bool(processes_with(marker)) or proc.returncode is not None,
                       "the command hook runs")
        assert proc.returncode is None, "the AgentLoom process ended before its hook ran"
        proc.send_signal(signal.SIGKILL)  # the AgentLoom process dies mid-hook
        await asyncio.wait_for(proc.wait(), WAIT_S)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    await wait_for(lambda: not processes_with(marker), "the hook died with its runtime")

    sys.path.insert(0, str(tmp_path))
    try:
        from child import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    kernel = build(store, str(root), str(project), backend)
    try:
        lease = kernel.claim("run-k")
        (recovered,) = await asyncio.wait_for(
            kernel.recover(kernel.invocation_context(lease, release_id="rel")), WAIT_S)
        (row,) = kernel.store.query("hook_invocations",
                                    {"operation_id": recovered.operation_id})
        assert row["status"] == "indeterminate"  # as for a Python hook: never run again
        assert recovered.outcome == "succeeded"  # fail-open (on_failure: allow)
        assert not processes_with(marker)
    finally:
        kernel.close()
        sys.modules.pop("child", None)


def test_i16_config_accepts_command_and_http_handlers_and_refuses_mcp(tmp_path: Path) -> None:
    def specs(handler: dict[str, Any]) -> tuple[HookSpec, ...]:
        return hook_specs(parse_config({"version": 1, "agents": {"main": {
            "model": {"builtin": "test"},
            "hooks": [{"timing": "before", "handler": handler}]}}}, base_dir=tmp_path))

    (cmd,) = specs({"kind": "command", "command": "./check.sh", "env": {"T": "${TOKEN}"},
                    "timeout_s": 3})
    assert cmd.handler.kind == "command" and cmd.handler.command == "./check.sh"
    assert cmd.handler.project_dir == str(tmp_path.resolve()) and cmd.timeout_s == 3
    assert cmd.handler.env == (("T", "${TOKEN}"),)  # stored as written, expanded at run time
    (argv,) = specs({"kind": "command", "argv": ["python3", "check.py"]})
    assert argv.handler.argv == ("python3", "check.py")
    (http,) = specs({"kind": "http", "url": "http://127.0.0.1:9/h", "allow_private": True,
                     "headers": {"Authorization": "Bearer ${TOKEN}", "X-Static": "literal"}})
    assert http.handler.allow_private and http.handler.url == "http://127.0.0.1:9/h"
    assert http.to_dict()["handler"]["headers"] == {  # type: ignore[index]
        "Authorization": "Bearer ${TOKEN}", "X-Static": "[redacted]"}

    with pytest.raises(ConfigError, match=r"handler\.shell: unknown key 'shell'"):
        specs({"kind": "command", "command": "x", "shell": "bash"})
    with pytest.raises(ConfigError, match="exactly one of `command`"):
        specs({"kind": "command", "command": "x", "argv": ["y"]})
    with pytest.raises(ConfigError, match=r"handler\.allow_privat: unknown key"):
        specs({"kind": "http", "url": "http://x", "allow_privat": True})
    with pytest.raises(ConfigError, match=r"handler\.server: no MCP server named 's'"):
        specs({"kind": "mcp", "server": "s", "tool": "t"})  # mcp: tests/hooks/test_mcp_hooks.py
