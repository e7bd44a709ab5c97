"""Recovery of agent runs after a crash (000 §3.1, DESIGN §3 invariants), with a real process
that SIGKILLs itself at a named phase boundary (``AGENTLOOM_CRASH_AT``) and a NEW ``Runtime``
on the same store that resumes the run:

- a tool call whose Attempt started and has no raw result is ``unknown``, is told to the model
  as such and is never run again;
- a model call cut off before its raw response was saved is re-issued as a new call
  (``…/t<n>/model#2``): generation has no external side effect;
- after ``raw_saved`` only post-processing finishes: the effect is not repeated;
- a finished run's stored result is returned without calling the model;
- a run is resumed only with the configuration (release) it started with.

The child process is this module run with ``python -m tests.agent.test_recovery``; the
scripted model server lives in the test process, so both processes talk to the same one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from agentloom.agent import AgentSpec, RunError, Runtime
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.models.connect import connection_for
from agentloom.models.ports import Connection
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.tools.sdk import StrictInput, Tool, ToolContext

from .conftest import WAIT_S, answer, calls, run, sent_messages, tool_call, tool_results

REPO = Path(__file__).resolve().parents[2]
RUN_ID = "crashed-run"
CHILD_TIMEOUT_S = 60.0
kill = pytest.mark.kill  # a real child process that SIGKILLs itself


# -- the configuration both processes build ---------------------------------------------------


class LedgerInput(StrictInput):
    n: int


def append_line(path: Path, line: str) -> None:
    """One durable line: once it is in the file the effect *happened*."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


class LedgerAppend(Tool[LedgerInput]):
    """The independent side-effect counter: one line per execution, whatever the store says."""

    name = "ledger.append"
    description = "Append n to the ledger."

    def __init__(self, path: Path) -> None:
        self.path = path

    async def execute(self, args: LedgerInput, ctx: ToolContext) -> str:
        append_line(self.path, f"{ctx.operation_id} {args.n}\n")
        return f"appended {args.n}"


class LedgerAppendV2(LedgerAppend):
    """The same tool with another input schema: a changed configuration."""

    class Input(StrictInput):
        n: int
        note: str = ""

    input_type = Input
    description = "Append n (and a note) to the ledger."


def allow_after(event: dict[str, Any]) -> dict[str, Any]:
    return {"decision": "allow"}


AFTER_HOOK_REF = "tests.agent.test_recovery:allow_after"


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """What a process needs to build the runtime; equal configs give equal releases."""

    store: str
    workspace: Path
    base_url: str
    ledger: Path
    executor_url: str | None = None
    after_hook: bool = False
    change: str | None = None  # build a changed configuration (see ``build``)

    def argv(self) -> list[str]:
        out = ["--store", self.store, "--workspace", str(self.workspace), "--base-url",
               self.base_url, "--ledger", str(self.ledger)]
        if self.executor_url:
            out += ["--executor-url", self.executor_url]
        if self.after_hook:
            out.append("--after-hook")
        return out


def _model(url: str, name: str = "scripted-model") -> Connection:
    return connection_for("openai", model=name, base_url=url, api_key="test")


def build(config: Config) -> Runtime:
    ledger_tool: LedgerAppend = (LedgerAppendV2 if config.change == "tool_schema"
                                 else LedgerAppend)(config.ledger)
    instructions = "Use the ledger." if config.change != "instructions" else "Use it twice."
    model = _model(config.base_url, "other-model" if config.change == "model" else
                   "scripted-model")
    agents = [AgentSpec(name="main", model=model, instructions=instructions,
                        tools=(ledger_tool,), window=128_000,  # other-model is not listed
                        executors=("worker",) if config.executor_url else ())]
    if config.executor_url:
        agents.append(AgentSpec(name="worker", model=_model(config.executor_url),
                                tools=(ledger_tool,)))
    hooks = []
    if config.after_hook or config.change == "hooks":
        hooks.append(HookSpec(hook_id="after-ledger", timing="after",
                              match=HookMatch(capability="ledger.append"),
                              handler=HandlerRef(ref=AFTER_HOOK_REF)))
    return Runtime(agents, store=config.store, workspace_root=config.workspace, hooks=hooks,
                   hook_functions={AFTER_HOOK_REF: allow_after})


async def _child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--executor-url")
    parser.add_argument("--after-hook", action="store_true")
    args = parser.parse_args(argv)
    rt = build(Config(store=args.store, workspace=args.workspace, base_url=args.base_url,
                      ledger=args.ledger, executor_url=args.executor_url,
                      after_hook=args.after_hook))
    handle = await rt.start("use the ledger", run_id=RUN_ID)
    result = await handle.result()
    print(result.status, flush=True)  # only reached when no crash point fired
    await rt.aclose()


# -- the test side ----------------------------------------------------------------------------


async def crash_child(config: Config, crash_at: str) -> None:
    """Run the configured agent in a child process that SIGKILLs itself at ``crash_at``."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_CRASH_AT"}
    env["AGENTLOOM_CRASH_AT"] = crash_at
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.agent.test_recovery", *config.argv(), cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), CHILD_TIMEOUT_S)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, out.decode(),
                                                err.decode()[-3000:])


def effects(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


def operation(rt: Runtime, logical_key: str) -> dict[str, Any]:
    (row,) = rt.store.query("operations", {"run_id": RUN_ID, "logical_key": logical_key})
    return row


@pytest.fixture
def config_for(durable_store_url: str, tmp_path: Path) -> Callable[..., Config]:
    def make(base_url: str, **kwargs: Any) -> Config:
        return Config(store=durable_store_url, workspace=tmp_path / "workspaces",
                      base_url=base_url, ledger=tmp_path / "effects.ledger", **kwargs)
    return make


def resumed(config: Config, made: list[Runtime]) -> Runtime:
    """A NEW runtime on the crashed run's store (closed at the end of the test)."""
    rt = build(config)
    made.append(rt)
    return rt


@pytest.fixture
async def opened() -> AsyncIterator[list[Runtime]]:
    made: list[Runtime] = []
    yield made
    for rt in made:
        await rt.aclose()


@kill
@pytest.mark.parametrize("crash_at,ran", [("attempt_started@2", 0), ("effect_done@2", 1)])
async def test_s9_recovery_a_tool_call_cut_off_mid_attempt_is_reported_unknown_and_not_rerun(
    crash_at: str, ran: int, server: ScriptedOpenAIServer, config_for: Callable[..., Config],
    opened: list[Runtime],
) -> None:
    server.script(calls(tool_call("c1", "ledger_append", n=7)), answer("finished anyway"))
    config = config_for(server.base_url)
    await crash_child(config, crash_at)
    rt = resumed(config, opened)
    assert operation(rt, f"{RUN_ID}/t1/c0")["phase"] == "attempt_started"
    assert len(effects(config.ledger)) == ran

    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert result.output == "finished anyway"
    assert len(effects(config.ledger)) == ran  # never run again
    assert len(server.model_requests) == 2  # turn 1 was replayed from the store
    told = tool_results(sent_messages(server, 1))
    assert list(told) == ["c1"]
    assert told["c1"].startswith("outcome unknown (it may or may not have taken effect)")
    op = operation(rt, f"{RUN_ID}/t1/c0")
    assert op["outcome"] == "unknown"
    assert op["data"]["envelope"]["error"]["code"] == "ATTEMPT_OUTCOME_UNKNOWN"
    completed = [e for e in rt.events(RUN_ID) if e.type == "tool.call.completed"]
    assert [e.data["status"] for e in completed] == ["unknown"]


@kill
@pytest.mark.parametrize("crash_at,sent", [("attempt_started@1", 0), ("effect_done@1", 1)])
async def test_s3_1_recovery_a_model_call_cut_off_before_raw_saved_is_reissued_as_a_new_call(
    crash_at: str, sent: int, server: ScriptedOpenAIServer, config_for: Callable[..., Config],
    opened: list[Runtime],
) -> None:
    lost = [answer("an answer the crashed process received and never saved")] * sent
    server.script(*lost, answer("the re-issued answer"))
    config = config_for(server.base_url)
    await crash_child(config, crash_at)
    assert len(server.model_requests) == sent
    rt = resumed(config, opened)
    # without before-hooks a model call's intent is committed with its result: nothing stored
    assert rt.store.query("operations", {"run_id": RUN_ID, "logical_key": f"{RUN_ID}/t1/model"}) == []

    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert result.output == "the re-issued answer"
    reissued = operation(rt, f"{RUN_ID}/t1/model")
    assert reissued["outcome"] == "succeeded" and reissued["data"]["attempts"] == 1
    assert "never saved" not in str(reissued["data"]["raw"])  # never spliced with the lost one
    assert len(server.model_requests) == sent + 1
    assert sent_messages(server, sent) == [  # the same request, sent again
        {"role": "system", "content": "Use the ledger."},
        {"role": "user", "content": "use the ledger"}]


@kill
async def test_s3_1_recovery_a_model_call_whose_rows_waited_for_its_tool_call_is_reissued_tool_runs_once(
    server: ScriptedOpenAIServer, config_for: Callable[..., Config], opened: list[Runtime],
) -> None:
    server.script(calls(tool_call("c1", "ledger_append", n=4)),  # received, then the crash
                  calls(tool_call("c1", "ledger_append", n=4)), answer("appended"))
    config = config_for(server.base_url)
    # the model call was delivered to the loop; its rows wait for the tool call's first commit
    await crash_child(config, "delivered@1")
    assert len(server.model_requests) == 1
    rt = resumed(config, opened)
    assert rt.store.query("operations", {"run_id": RUN_ID}) == []
    assert effects(config.ledger) == []

    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert result.output == "appended"
    assert len(server.model_requests) == 3  # turn 1 issued again, then turn 2
    assert len(effects(config.ledger)) == 1
    assert operation(rt, f"{RUN_ID}/t1/model")["data"]["attempts"] == 1
    assert operation(rt, f"{RUN_ID}/t1/c0")["outcome"] == "succeeded"


@kill
@pytest.mark.parametrize("after_hook", [True, False], ids=["hooks_after", "no_after_hooks"])
async def test_s9_recovery_after_raw_saved_only_finishes_post_processing_never_the_effect(
    after_hook: bool, server: ScriptedOpenAIServer, config_for: Callable[..., Config], opened: list[Runtime],
) -> None:
    server.script(calls(tool_call("c1", "ledger_append", n=3)), answer("appended once"))
    config = config_for(server.base_url, after_hook=after_hook)
    # the model call passes no raw_saved of its own: its record rides on the tool's intent
    await crash_child(config, "raw_saved@1")
    rt = resumed(config, opened)
    op = operation(rt, f"{RUN_ID}/t1/c0")
    assert op["phase"] == ("hooks_after" if after_hook else "delivered")
    assert op["data"]["raw"]["status"] == "succeeded"
    assert len(effects(config.ledger)) == 1

    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert len(effects(config.ledger)) == 1
    assert effects(config.ledger)[0] == f"{op['operation_id']} 3"
    assert tool_results(sent_messages(server, 1)) == {"c1": "appended 3"}
    assert operation(rt, f"{RUN_ID}/t1/c0")["outcome"] == "succeeded"
    (attempt,) = rt.store.query("attempts", {"operation_id": op["operation_id"]})
    assert attempt["status"] == "succeeded"


@kill
async def test_s9_recovery_a_crash_inside_an_executor_is_resumed_through_the_delegation(
    servers: Callable[[], ScriptedOpenAIServer], config_for: Callable[..., Config],
    opened: list[Runtime],
) -> None:
    planner, worker = servers(), servers()
    planner.script(calls(tool_call("d1", "delegate_worker", task="append 5")),
                   answer("the worker reported back"))
    worker.script(calls(tool_call("w1", "ledger_append", n=5)), answer("not sure it appended"))
    config = config_for(planner.base_url, executor_url=worker.base_url)
    # effects done: planner model (1), worker model (2), worker tool (3); the delegation's
    # own comes only after the whole Executor
    await crash_child(config, "effect_done@3")
    rt = resumed(config, opened)
    assert len(effects(config.ledger)) == 1

    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert result.output == "the worker reported back"
    assert len(effects(config.ledger)) == 1
    assert len(worker.model_requests) == 2 and len(planner.model_requests) == 2
    told = tool_results(sent_messages(worker, 1))
    assert told["w1"].startswith("outcome unknown")
    assert tool_results(sent_messages(planner, 1)) == {"d1": "not sure it appended"}
    delegations = [r for r in rt.store.query("operations", {"run_id": RUN_ID})
                   if r["event_type"] == "delegation"]
    assert [(d["outcome"], d["data"]["attempts"]) for d in delegations] == [("succeeded", 1)]


async def test_s9_recovery_resuming_a_finished_run_returns_its_result_without_a_model_call(
    server: ScriptedOpenAIServer, config_for: Callable[..., Config], opened: list[Runtime],
) -> None:
    server.script(calls(tool_call("c1", "ledger_append", n=1)), answer("all done"))
    config = config_for(server.base_url)
    first = resumed(config, opened)
    done = await run(first, "use the ledger", run_id=RUN_ID)
    assert done.status == "succeeded"
    await first.aclose()
    opened.remove(first)
    requests = len(server.model_requests)

    rt = resumed(config, opened)
    again = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)

    assert again == done
    assert len(server.model_requests) == requests
    assert len(effects(config.ledger)) == 1
    assert rt.store.get("runs", {"run_id": RUN_ID})["status"] == "succeeded"


@kill
@pytest.mark.parametrize("change", ["instructions", "model", "hooks", "tool_schema"])
async def test_s9_recovery_resume_with_a_changed_configuration_is_refused_release_changed(
    change: str, server: ScriptedOpenAIServer, config_for: Callable[..., Config], opened: list[Runtime],
) -> None:
    server.script(calls(tool_call("c1", "ledger_append", n=1)), answer("finished"))
    config = config_for(server.base_url)
    await crash_child(config, "attempt_started@2")
    changed = resumed(replace(config, change=change), opened)

    with pytest.raises(RunError) as refused:
        await changed.resume(RUN_ID)

    assert refused.value.error.code == "RELEASE_CHANGED"
    assert len(server.model_requests) == 1
    assert changed.store.get("runs", {"run_id": RUN_ID})["status"] == "running"
    # the configuration it started with still resumes it
    await changed.aclose()
    opened.remove(changed)
    rt = resumed(config, opened)
    result = await asyncio.wait_for((await rt.resume(RUN_ID)).result(), WAIT_S)
    assert result.status == "succeeded", result.error


if __name__ == "__main__":
    asyncio.run(_child(sys.argv[1:]))
