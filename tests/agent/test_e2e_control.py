"""Run control (000 §3.2: one control entry, never queued behind a long call): ``stop``
cancels a long tool call at once — it never has to finish first — and a supplement reaches
the root (Planner) only, at its next turn."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.agent import AgentSpec, RunHandle, RunResult, Runtime
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.tools.sdk import StrictInput, Tool, ToolContext

from .conftest import WAIT_S, answer, calls, connection, sent_messages, tool_call, watch

SLEEP_ARG = "301.25"  # longer than any wait here; a value nothing else on the machine sleeps for
ROUNDS = 6


def sleepers() -> list[int]:
    """Pids of live ``sleep SLEEP_ARG`` processes."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", SLEEP_ARG.encode()]:
            found.append(int(pid))
    return found


@pytest.fixture(autouse=True)
def no_stray_sleepers() -> Iterator[None]:
    """Whatever a failing test left behind is ended here (only our own ``sleep SLEEP_ARG``)."""
    yield
    for pid in sleepers():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Bounded poll of another process's state (no event exists for "the command runs")."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        await asyncio.sleep(0.02)


async def start_sleeping_run(make: Callable[..., Runtime], store_url: str,
                             server: ScriptedOpenAIServer) -> tuple[Runtime, RunHandle]:
    server.script(calls(tool_call("x1", "exec", argv=["sleep", SLEEP_ARG], timeout_s=600)),
                  answer("never asked for"))
    rt = make([AgentSpec(name="main", model=connection(server), tools=("exec",))],
              store=store_url)
    return rt, await rt.start("sleep for a long time")


def check_cancelled(rt: Runtime, server: ScriptedOpenAIServer, result: RunResult) -> None:
    assert result.status == "cancelled"
    assert result.error is not None and result.error.code == "RUN_STOPPED"
    assert "the user changed their mind" in result.error.message
    assert len(server.model_requests) == 1  # nothing after the stop reached the model
    assert rt.store.get("runs", {"run_id": result.run_id})["status"] == "cancelled"
    (op,) = [r for r in rt.kernel.operations(result.run_id) if r["event_type"] == "tool"]
    assert op["outcome"] in ("cancelled", "unknown")  # never succeeded: it may have run
    assert op["data"]["envelope"]["error"]["external_outcome"] in ("unknown", "not_started")
    completed = [e for e in rt.events(result.run_id) if e.type == "tool.call.completed"]
    assert [e.data["status"] for e in completed] == [op["outcome"]]


async def test_s3_2_stop_during_a_long_exec_ends_the_run_cancelled_and_the_call_not_succeeded(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    rt, handle = await start_sleeping_run(runtime_factory, store_url, server)
    started = watch(handle, lambda e: e.type == "tool.call.started" and e.data["call_id"] == "x1")
    await started
    await wait_until(lambda: bool(sleepers()), "the command runs")

    await handle.stop("the user changed their mind")
    result = await asyncio.wait_for(handle.result(), WAIT_S)  # a guard, not a timing claim

    check_cancelled(rt, server, result)
    (op,) = [r for r in rt.kernel.operations(result.run_id) if r["event_type"] == "tool"]
    assert op["data"]["envelope"]["error"]["external_outcome"] == "unknown"  # it was running
    # the command's process group went with the run, it was not left to sleep on
    assert sleepers() == []


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
async def test_s3_2_stop_as_the_exec_call_starts_leaves_no_command_running_after_the_run(
    store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    """A stop can land while the command is being spawned; the run must still end cancelled
    and take the command with it. (Repeated: where the stop lands varies per round.)"""
    for _ in range(ROUNDS):
        server = servers()
        rt, handle = await start_sleeping_run(runtime_factory, store_url, server)
        started = watch(handle, lambda e: e.type == "tool.call.started")
        await started
        await handle.stop("the user changed their mind")
        result = await asyncio.wait_for(handle.result(), WAIT_S)

        check_cancelled(rt, server, result)
        await wait_until(lambda: not sleepers(), "no command of the cancelled run is left")


class GateInput(StrictInput):
    label: str


class Gate(Tool[GateInput]):
    """Blocks until the test opens it: the Executor is provably mid-call meanwhile."""

    name = "gate.wait"
    description = "Wait for the gate to open."

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def execute(self, args: GateInput, ctx: ToolContext) -> str:
        self.entered.set()
        await self.release.wait()
        return f"gate {args.label} opened"


async def test_s3_2_supplement_reaches_the_planners_next_turn_and_never_an_executor(
    store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    planner, worker = servers(), servers()
    planner.script(calls(tool_call("d1", "delegate_worker", task="wait at the gate")),
                   answer("done, and the answer is blue"))
    worker.script(calls(tool_call("g1", "gate_wait", label="A")),
                  calls(tool_call("g2", "gate_wait", label="B")),
                  answer("worker passed both gates"))
    gate = Gate()
    rt = runtime_factory([
        AgentSpec(name="main", model=connection(planner), executors=("worker",)),
        AgentSpec(name="worker", model=connection(worker), tools=(gate,)),
    ], store=store_url)
    handle = await rt.start("plan it")

    await asyncio.wait_for(gate.entered.wait(), WAIT_S)
    await handle.supplement("SUPPLEMENT: make it blue")
    gate.release.set()
    result = await asyncio.wait_for(handle.result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert result.output == "done, and the answer is blue"
    assert len(planner.model_requests) == 2 and len(worker.model_requests) == 3
    first, second = sent_messages(planner, 0), sent_messages(planner, 1)
    assert all("SUPPLEMENT" not in str(m.get("content")) for m in first)
    assert second[-1] == {"role": "user", "content": "SUPPLEMENT: make it blue"}
    assert second[-2]["role"] == "tool" and second[-2]["tool_call_id"] == "d1"
    for request in worker.model_requests:
        assert "SUPPLEMENT" not in request.body.decode()
    # which turn consumed it is committed, so a resumed run replays the same history
    (row,) = rt.store.query("run_controls", {"run_id": result.run_id, "type": "control.supplement"})
    assert row["data"]["consumed_turn"] == 2


async def test_s3_2_a_supplement_sent_during_the_roots_last_model_call_is_not_silently_dropped(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    """The answer that was being generated did not see the user's supplement: the root takes
    another turn with it instead of finishing as if it had never been sent (000 §5.3)."""
    held = asyncio.Event()
    holding, release = threading.Event(), threading.Event()
    loop = asyncio.get_running_loop()

    async def hold(event: dict[str, Any]) -> dict[str, Any]:
        # runs in an event loop of its own, on a thread: it signals the test's loop thread-safely
        if not holding.is_set():  # hold the first response until the supplement is recorded
            holding.set()
            loop.call_soon_threadsafe(held.set)
            await asyncio.to_thread(release.wait, WAIT_S)
        return {"decision": "allow"}

    hook = HookSpec(hook_id="hold", timing="after", event="model",
                    handler=HandlerRef(ref="tests.agent:hold"), timeout_s=WAIT_S)
    server.script(answer("an answer written before the supplement"),
                  answer("an answer that takes the supplement into account"))
    rt = runtime_factory([AgentSpec(name="main", model=connection(server))], store=store_url,
                         hooks=[hook], hook_functions={"tests.agent:hold": hold})
    handle = await rt.start("answer me")

    await asyncio.wait_for(held.wait(), WAIT_S)
    await handle.supplement("SUPPLEMENT: in French please")
    release.set()
    result = await asyncio.wait_for(handle.result(), WAIT_S)

    assert result.status == "succeeded", result.error
    assert result.output == "an answer that takes the supplement into account"
    second = sent_messages(server, 1)
    assert second[-2] == {"role": "assistant",
                          "content": "an answer written before the supplement"}
    assert second[-1] == {"role": "user", "content": "SUPPLEMENT: in French please"}
    (row,) = rt.store.query("run_controls", {"run_id": result.run_id, "type": "control.supplement"})
    assert row["data"]["consumed_turn"] == 2
