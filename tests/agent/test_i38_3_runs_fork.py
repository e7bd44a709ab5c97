"""Issue 38 (3), acceptance 3: ``runs fork`` — a new run from one of its origin's calls, on
SQLite and PostgreSQL.

A 6-tool-call run on the scripted OpenAI server (fs.write and a counter tool that appends a
line per execution to a ledger file: the independent side-effect counter), forked at its 3rd
tool call: the fork's first model request is the origin's request of that turn (what the
scripted server received), nothing before the fork point runs again, the files of calls 1–2
are in the fork's folder and not the 3rd's. With an ``exec`` before the fork point the fork
starts from a copy of the origin's kept folder and says so. A SIGKILL right after the fork's
commit (a real subprocess, ``AGENTLOOM_CRASH_AT``) leaves a complete fork that ``runs resume``
drives; one before leaves none. The API's 404 for another principal is in
``tests/host/test_i38_4_fork_button.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import drop_store, fresh_store_url

from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.fork import ForkError, plan_fork, start_fork
from agentloom.models.connect import connection_for
from agentloom.store import open_store
from agentloom.store.records import get_run, operations, runs
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.tools.sdk import StrictInput, Tool, ToolContext
from agentloom.views import run_detail

from .conftest import (
    WAIT_S,
    answer,
    before_hook,
    calls,
    connection,
    sent_messages,
    tool_call,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


class CountInput(StrictInput):
    n: int


class Count(Tool[CountInput]):
    """One ledger line per execution, whatever the store says."""

    name = "count"
    description = "Count n."

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger

    async def execute(self, args: CountInput, ctx: ToolContext) -> str:
        with self.ledger.open("a", encoding="utf-8") as fh:
            fh.write(f"{ctx.run_id} {args.n}\n")
        return f"counted {args.n}"


def build(url: str, base_url: str, ledger: Path, workspaces: Path, *,
          tools: tuple[str, ...] = ("fs.write",), keep: bool = True) -> Runtime:
    model = connection_for("openai", model="scripted-model", base_url=base_url, api_key="test")
    return Runtime([AgentSpec(name="main", model=model, instructions="Do the steps.",
                              tools=(*tools, Count(ledger)))],
                   store=url, workspace_root=workspaces, keep_workspaces=keep)


def six_calls(first: tuple[str, str, str] | None = None) -> list[Any]:
    """Six turns of one tool call each, then the answer: writes on 1, 3, 5, counts on 2, 4, 6
    (``first`` replaces call 1)."""
    return [
        calls(first or tool_call("w1", "fs_write", path="one.txt", content="first")),
        calls(tool_call("n1", "count", n=1)),
        calls(tool_call("w3", "fs_write", path="three.txt", content="third")),
        calls(tool_call("n2", "count", n=2)),
        calls(tool_call("w5", "fs_write", path="five.txt", content="fifth")),
        calls(tool_call("n3", "count", n=3)),
        answer("all six done"),
    ]


def third_tool_call(url: str, run_id: str) -> str:
    store = open_store(url)
    try:
        tools = [op for op in operations(store, run_id) if op.event_type == "tool"]
        return tools[2].operation_id
    finally:
        store.close()


def folder_of(rt: Runtime, run_id: str) -> Path:
    scopes = rt.kernel.environment.scopes
    (scope,) = scopes.scopes_for_run(run_id)
    return scopes.path(scope)


def ledger_runs(ledger: Path) -> list[str]:
    return [line.split()[0] for line in ledger.read_text(encoding="utf-8").splitlines()]


async def fork_and_drive(rt: Runtime, origin: str, at: str, message: str | None = None
                         ) -> tuple[str, Any]:
    plan = plan_fork(rt.store, origin, at, message=message)
    fork_id = await start_fork(rt, plan)
    handle = await rt.resume(fork_id)
    return fork_id, await asyncio.wait_for(handle.result(), WAIT_S)


async def test_i38_3_fork_at_the_third_call_starts_from_its_context_runs_nothing_again_and_restores_files(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    server.script(*six_calls())
    rt = build(durable_url, server.base_url, ledger, tmp_path / "ws")
    try:
        origin = await asyncio.wait_for(rt.run("do six steps"), WAIT_S)
        assert origin.status == "succeeded", origin.error
        assert ledger_runs(ledger) == [origin.run_id] * 3
        at = third_tool_call(durable_url, origin.run_id)
        origin_rows = [op.to_row() for op in operations(rt.store, origin.run_id)]
        origin_run = get_run(rt.store, origin.run_id)
        requests_before = len(server.model_requests)  # 7

        server.script(calls(tool_call("k1", "count", n=9)), answer("forked and done"))
        fork_id, result = await fork_and_drive(rt, origin.run_id, at)
        assert result.status == "succeeded", result.error
        assert result.output == "forked and done"

        # its first model request is exactly what the origin's model saw at the 3rd call
        assert sent_messages(server, requests_before) == sent_messages(server, 2)
        assert server.model_requests[requests_before].json["tools"] == \
            server.model_requests[2].json["tools"]
        # nothing before the fork point ran again: the one new count is the fork's own
        assert ledger_runs(ledger) == [origin.run_id] * 3 + [fork_id]
        # the file of call 1 is restored from the record; neither the 3rd's nor the 5th's
        files = folder_of(rt, fork_id)
        assert (files / "one.txt").read_text(encoding="utf-8") == "first"
        assert not (files / "three.txt").exists() and not (files / "five.txt").exists()
        assert folder_of(rt, origin.run_id) != files
        # linked to its origin, in runs show and in its first event
        detail = run_detail(rt.store, fork_id)
        assert detail is not None
        assert detail["forked_from"]["run_id"] == origin.run_id
        assert detail["forked_from"]["operation_id"] == at
        assert detail["forked_from"]["release_changed"] is False
        assert detail["files"].startswith("restored from the record")
        first = rt.events(fork_id)[0]
        assert first.type == "run.started" and first.data["forked_from"]["run_id"] == origin.run_id
        # the origin's rows are untouched
        assert [op.to_row() for op in operations(rt.store, origin.run_id)] == origin_rows
        assert get_run(rt.store, origin.run_id) == origin_run
    finally:
        await rt.aclose()


SECRET = "hunter2"


async def test_i38_3_the_forks_history_has_the_hooks_edits_and_a_changed_release_is_recorded(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    seen: list[int] = []

    def redact(event: dict[str, Any]) -> dict[str, Any]:
        """Redact the secret in the task the first time only: the edit must last by itself."""
        seen.append(1)
        if len(seen) > 1:
            return {"decision": "allow"}
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": f"/payload/messages/{i}/content",
             "value": m["content"].replace(SECRET, "[redacted]")}
            for i, m in enumerate(event["payload"]["messages"]) if SECRET in (m.get("content") or "")]}

    ledger = tmp_path / "ledger"
    server.script(*six_calls())
    hook, ref, fn = before_hook("redact", redact, event="model")
    model = connection_for("openai", model="scripted-model", base_url=server.base_url,
                           api_key="test")
    hooked = Runtime([AgentSpec(name="main", model=model, instructions="Do the steps.",
                                tools=("fs.write", Count(ledger)))],
                     store=durable_url, workspace_root=tmp_path / "ws", keep_workspaces=True,
                     hooks=[hook], hook_functions={ref: fn})
    try:
        origin = await asyncio.wait_for(hooked.run(f"the password is {SECRET}"), WAIT_S)
        assert origin.status == "succeeded", origin.error
    finally:
        await hooked.aclose()
    assert SECRET not in json.dumps(sent_messages(server, 2))  # the edit lasted
    n = len(server.model_requests)
    rt = build(durable_url, server.base_url, ledger, tmp_path / "ws")  # no hook: a new release
    try:
        server.script(answer("forked"))
        fork_id, result = await fork_and_drive(rt, origin.run_id,
                                               third_tool_call(durable_url, origin.run_id))
        assert result.status == "succeeded", result.error
        assert sent_messages(server, n) == sent_messages(server, 2)
        assert SECRET not in json.dumps(sent_messages(server, n))
        forked_from = run_detail(rt.store, fork_id)["forked_from"]  # type: ignore[index]
        assert forked_from["release_changed"] is True
        assert forked_from["release_id"] == get_run(rt.store, origin.run_id).release_id  # type: ignore[union-attr]
        assert get_run(rt.store, fork_id).release_id == rt.release_id  # type: ignore[union-attr]
    finally:
        await rt.aclose()


async def test_i38_3_a_fork_message_is_a_new_user_message_after_the_history(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    server.script(*six_calls())
    rt = build(durable_url, server.base_url, ledger, tmp_path / "ws")
    try:
        origin = await asyncio.wait_for(rt.run("do six steps"), WAIT_S)
        at = third_tool_call(durable_url, origin.run_id)
        n = len(server.model_requests)
        server.script(answer("done differently"))
        fork_id, result = await fork_and_drive(rt, origin.run_id, at, "write nothing more")
        assert result.status == "succeeded", result.error
        assert sent_messages(server, n) == [*sent_messages(server, 2),
                                            {"role": "user", "content": "write nothing more"}]
        assert get_run(rt.store, fork_id).task == "write nothing more"  # type: ignore[union-attr]
    finally:
        await rt.aclose()


async def test_i38_3_with_exec_before_the_fork_point_the_fork_copies_the_kept_folder_and_says_so(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger"
    made = tool_call("x1", "exec", argv=["sh", "-c", "echo made > made.txt"])
    server.script(*six_calls(first=made))
    rt = build(durable_url, server.base_url, ledger, tmp_path / "ws", tools=("exec", "fs.write"))
    try:
        origin = await asyncio.wait_for(rt.run("do six steps"), WAIT_S)
        assert origin.status == "succeeded", origin.error
        assert origin.workspace is not None
        at = third_tool_call(durable_url, origin.run_id)
        more = tool_call("x2", "exec", argv=["sh", "-c", "echo more >> made.txt"])
        server.script(calls(more), answer("forked"))
        fork_id, result = await fork_and_drive(rt, origin.run_id, at)
        assert result.status == "succeeded", result.error
        files = folder_of(rt, fork_id)
        # a copy of the folder the origin kept (its state after the whole run), which the
        # fork's own commands may change
        assert (files / "made.txt").read_text(encoding="utf-8") == "made\nmore\n"
        assert (files / "five.txt").exists()
        notice = "copied from the origin's folder (exec ran before the fork point)"
        assert run_detail(rt.store, fork_id)["files"] == notice  # type: ignore[index]
        assert rt.events(fork_id)[0].data["files"] == notice
        # the origin's folder is left as it was
        assert (Path(origin.workspace) / "made.txt").read_text(encoding="utf-8") == "made\n"
    finally:
        await rt.aclose()


async def test_i38_3_exec_before_the_fork_point_without_a_kept_folder_is_refused(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    made = tool_call("x1", "exec", argv=["sh", "-c", "echo made > made.txt"])
    server.script(*six_calls(first=made))
    rt = build(durable_url, server.base_url, tmp_path / "ledger", tmp_path / "ws",
               tools=("exec", "fs.write"), keep=False)
    try:
        origin = await asyncio.wait_for(rt.run("do six steps"), WAIT_S)
        at = third_tool_call(durable_url, origin.run_id)
        with pytest.raises(ForkError) as refused:
            plan_fork(rt.store, origin.run_id, at)
        assert refused.value.error.code == "FORK_FILES_UNAVAILABLE"
        assert "exec ran before the fork point" in refused.value.error.message
    finally:
        await rt.aclose()


async def test_i38_3_a_fork_point_that_is_not_a_call_of_the_runs_agent_is_a_clear_error(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    server.script(*six_calls())
    rt = build(durable_url, server.base_url, tmp_path / "ledger", tmp_path / "ws")
    try:
        origin = await asyncio.wait_for(rt.run("do six steps"), WAIT_S)
        with pytest.raises(ForkError) as unknown:
            plan_fork(rt.store, origin.run_id, "no-such-op")
        assert unknown.value.error.code == "OPERATION_NOT_FOUND"
        assert "no-such-op" in unknown.value.error.message
        with pytest.raises(ForkError) as missing:
            plan_fork(rt.store, "no-such-run", "x")
        assert missing.value.error.code == "RUN_NOT_FOUND"
        with pytest.raises(ForkError) as empty:
            plan_fork(rt.store, origin.run_id, third_tool_call(durable_url, origin.run_id),
                      message="  ")
        assert empty.value.error.code == "FORK_MESSAGE_EMPTY"
    finally:
        await rt.aclose()


async def test_i38_3_a_delegated_executors_call_is_not_a_fork_point(
    durable_url: str, servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path,
) -> None:
    planner, worker = servers(), servers()
    planner.script(calls(tool_call("d1", "delegate_worker", task="write a file")),
                   answer("delegated"))
    worker.script(calls(tool_call("w1", "fs_write", path="w.txt", content="w")),
                  answer("written"))
    rt = Runtime([AgentSpec(name="main", model=connection(planner), executors=("worker",)),
                  AgentSpec(name="worker", model=connection(worker), tools=("fs.write",))],
                 store=durable_url, workspace_root=tmp_path / "ws")
    try:
        origin = await asyncio.wait_for(rt.run("delegate it"), WAIT_S)
        assert origin.status == "succeeded", origin.error
        (inner,) = [op for op in operations(rt.store, origin.run_id)
                    if op.capability_key == "fs.write"]
        with pytest.raises(ForkError) as refused:
            plan_fork(rt.store, origin.run_id, inner.operation_id)
        assert refused.value.error.code == "FORK_POINT_INVALID"
        assert "not a model or tool call of run" in refused.value.error.message
        (delegation,) = [op for op in operations(rt.store, origin.run_id)
                         if op.event_type == "delegation"]
        assert plan_fork(rt.store, origin.run_id, delegation.operation_id).turn == 1
    finally:
        await rt.aclose()


# -- the command: agentloom runs fork ------------------------------------------------------------

CLI_TURNS = """\
  - tool_calls:
      - name: fs_write
        arguments: {path: one.txt, content: first}
  - tool_calls:
      - name: fs_write
        arguments: {path: two.txt, content: second}
  - text: done
"""


def test_i38_3_runs_fork_on_the_command_line_links_the_fork_and_refuses_a_bad_fork_point(
    durable_url: str, tmp_path: Path,
) -> None:
    from tests.cli.support import agentloom, write_project

    config = write_project(tmp_path / "p", CLI_TURNS, tools=("fs.write",),
                           extra="workspace: {keep: true}\n")
    ran = agentloom("run", str(config), "write two files", "--store", durable_url, "--json",
                    cwd=config.parent)
    assert ran.returncode == 0, ran.stderr
    origin = json.loads(ran.stdout)["run_id"]
    store = open_store(durable_url)
    try:
        writes = [op.operation_id for op in operations(store, origin) if op.event_type == "tool"]
    finally:
        store.close()

    bad = agentloom("runs", "fork", origin, "--at", "no-such-op", "--store", durable_url,
                    cwd=config.parent)
    assert bad.returncode == 2, bad.stderr
    assert "no-such-op" in bad.stderr and "OPERATION_NOT_FOUND" in bad.stderr

    forked = agentloom("runs", "fork", origin, "--at", writes[1], "--message", "again",
                       "--store", durable_url, "--json", cwd=config.parent)
    assert forked.returncode == 0, forked.stderr
    fork = json.loads(forked.stdout)
    assert fork["status"] == "succeeded" and fork["output"] == "done"
    assert "its files: restored from the record (1 file tool call(s)" in forked.stderr
    assert (Path(fork["workspace"]) / "one.txt").read_text(encoding="utf-8") == "first"

    shown = agentloom("runs", "show", fork["run_id"], "--store", durable_url, "--json",
                      cwd=config.parent)
    detail = json.loads(shown.stdout)
    assert detail["forked_from"]["run_id"] == origin
    assert detail["forked_from"]["operation_id"] == writes[1]
    text = agentloom("runs", "show", fork["run_id"], "--store", durable_url, cwd=config.parent)
    assert f"forked from: run {origin} at {writes[1]} (turn 2)" in text.stdout
    assert "files: restored from the record" in text.stdout


# -- SIGKILL during a fork: a real subprocess --------------------------------------------------


def child(argv: list[str]) -> None:
    """The subprocess: ``origin URL BASE LEDGER WS`` runs the origin and prints its id and the
    3rd call's; ``fork URL BASE LEDGER WS ORIGIN AT`` forks it; ``resume … FORK`` drives it."""
    what, url, base, ledger, ws, *rest = argv

    async def main() -> None:
        rt = build(url, base, Path(ledger), Path(ws))
        try:
            if what == "origin":
                result = await rt.run("do six steps")
                print(json.dumps({"run_id": result.run_id,
                                  "at": third_tool_call(url, result.run_id)}), flush=True)
            elif what == "fork":
                origin, at = rest
                fork_id, result = await fork_and_drive(rt, origin, at)
                print(json.dumps({"run_id": fork_id, "status": result.status}), flush=True)
            else:
                (fork_id,) = rest
                result = await (await rt.resume(fork_id)).result()
                print(json.dumps({"run_id": fork_id, "status": result.status}), flush=True)
        finally:
            await rt.aclose()

    asyncio.run(main())


async def spawn(*args: str, crash_at: str | None = None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_CRASH_AT"}
    if crash_at:
        env["AGENTLOOM_CRASH_AT"] = crash_at
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.agent.test_i38_3_runs_fork", *args, cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()[-2000:]


def forks_of(url: str, origin: str) -> list[str]:
    store = open_store(url)
    try:
        return [r.run_id for r in runs(store, limit=100)
                if (r.data.get("forked_from") or {}).get("run_id") == origin]
    finally:
        store.close()


@pytest.mark.parametrize("point", ["fork_committed", "fork_files_restored"])
async def test_i38_3_sigkill_during_a_fork_leaves_a_complete_fork_that_resume_finishes(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path, point: str,
) -> None:
    ledger, ws = tmp_path / "ledger", tmp_path / "ws"
    common = [durable_url, server.base_url, str(ledger), str(ws)]
    server.script(*six_calls())
    code, out = await spawn("origin", *common)
    assert code == 0, out
    origin = json.loads(out.splitlines()[0])
    n = len(server.model_requests)

    server.script(answer("forked"))
    code, out = await spawn("fork", *common, origin["run_id"], origin["at"], crash_at=point)
    assert code == -9, out  # SIGKILLed at the crash point
    (fork_id,) = forks_of(durable_url, origin["run_id"])  # a fork, with its whole seed
    store = open_store(durable_url)
    try:
        fork = get_run(store, fork_id)
        assert fork is not None
        seeded = fork.data["fork"]["messages"]
        assert [(m["role"], m.get("content")) for m in seeded] == \
            [(m["role"], m.get("content")) for m in sent_messages(server, 2)]
    finally:
        store.close()

    code, out = await spawn("resume", *common, fork_id)
    assert code == 0, out
    assert json.loads(out.splitlines()[0])["status"] == "succeeded"
    assert sent_messages(server, len(server.model_requests) - 1) == sent_messages(server, 2)
    assert len(server.model_requests) == n + 1  # the killed process never asked the model
    assert ledger_runs(ledger) == [origin["run_id"]] * 3  # nothing ran again
    (scope,) = [p for p in ws.rglob("one.txt") if fork_id in str(p)]
    assert scope.read_text(encoding="utf-8") == "first"


async def test_i38_3_sigkill_before_the_forks_commit_leaves_no_fork(
    durable_url: str, server: ScriptedOpenAIServer, tmp_path: Path,
) -> None:
    ledger, ws = tmp_path / "ledger", tmp_path / "ws"
    common = [durable_url, server.base_url, str(ledger), str(ws)]
    server.script(*six_calls())
    code, out = await spawn("origin", *common)
    assert code == 0, out
    origin = json.loads(out.splitlines()[0])
    # the fork's one commit is its run row: killed at the commit of that row's batch
    code, out = await spawn("fork", *common, origin["run_id"], origin["at"],
                            crash_at="fork_planned")
    assert code == -9, out
    assert forks_of(durable_url, origin["run_id"]) == []


if __name__ == "__main__":
    child(sys.argv[1:])
