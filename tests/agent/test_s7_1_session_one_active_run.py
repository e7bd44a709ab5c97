"""000 §7.1.11: a session is occupied by one active run. A second run of the same session —
from another runtime on the same store, as from another process or worker — is refused
with ``SESSION_BUSY`` naming the run that holds it, or waits for it with ``wait``; it never
runs interleaved with the holder (nor revokes the holder's write right). An interrupted
holder blocks the session until it is resumed or stopped: the refusal says so at once,
even with ``wait``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import pytest

import agentloom
from agentloom.agent import AgentSpec, RunError, RunHandle, Runtime
from agentloom.store import Put, WriteSet
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.tools.sdk import ToolContext

from .conftest import WAIT_S, answer, calls, connection, run, sent_messages, tool_call

GATES: dict[str, asyncio.Event] = {}
"""``entered`` is set when the holding run is inside its tool, ``release`` lets it return."""


@agentloom.tool
async def hold(ctx: ToolContext) -> str:
    """Wait until the test lets the call return."""
    GATES["entered"].set()
    await GATES["release"].wait()
    return "released"


def agents(server: ScriptedOpenAIServer) -> list[AgentSpec]:
    return [AgentSpec(name="main", model=connection(server), instructions="Be brief.",
                      tools=(hold, "fs.write"))]


@pytest.fixture(autouse=True)
def gates() -> None:
    GATES["entered"] = asyncio.Event()
    GATES["release"] = asyncio.Event()


async def start_holder(rt: Runtime, server: ScriptedOpenAIServer, session: str) -> RunHandle:
    """A run of ``session`` that stays inside its tool call until ``GATES['release']``."""
    server.script(calls(tool_call("h1", "hold")), answer("first done"))
    handle = await rt.start("first task", session=session)
    await asyncio.wait_for(GATES["entered"].wait(), WAIT_S)
    return handle


def scope_states(rt: Runtime, run_id: str) -> list[str]:
    return [s.state for s in rt.kernel.environment.scopes.scopes_for_run(run_id)]


async def test_s7_1_a_second_run_of_a_busy_session_is_refused_naming_the_holder(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    first_server, second_server = servers(), servers()
    first_rt = runtime_factory(agents(first_server), store=durable_store_url)
    second_rt = runtime_factory(agents(second_server), store=durable_store_url)
    holder = await start_holder(first_rt, first_server, "shared")
    second_server.script(answer("must never be asked"))

    with pytest.raises(RunError) as refused:
        await asyncio.wait_for(second_rt.start("second task", session="shared"), WAIT_S)

    assert refused.value.error.code == "SESSION_BUSY"
    message = str(refused.value)
    assert holder.run_id in message and "--wait" in message, message
    assert second_server.model_requests == []  # nothing of the refused run reached a model
    assert [r["run_id"] for r in second_rt.runs()] == [holder.run_id]  # no run was created
    assert scope_states(first_rt, holder.run_id) == ["registered"]  # its write right stays

    GATES["release"].set()
    first = await asyncio.wait_for(holder.result(), WAIT_S)
    assert first.status == "succeeded", first.error

    second = await run(second_rt, "second task", session="shared")  # free again
    assert second.status == "succeeded", second.error
    assert [m["content"] for m in sent_messages(second_server, 0)][1:] == [
        "first task", "first done", "second task"]


async def test_s7_1_wait_queues_the_second_run_until_the_holder_ends(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    first_server, second_server = servers(), servers()
    first_rt = runtime_factory(agents(first_server), store=durable_store_url)
    second_rt = runtime_factory(agents(second_server), store=durable_store_url)
    holder = await start_holder(first_rt, first_server, "queued")
    second_server.script(answer("second done"))

    waiting = asyncio.ensure_future(second_rt.start("second task", session="queued", wait=True))
    for _ in range(10):  # several polls of the waiting start: it still waits
        await asyncio.sleep(0.1)
        assert not waiting.done(), waiting.result()
    assert [r["run_id"] for r in second_rt.runs()] == [holder.run_id]
    assert second_server.model_requests == []

    GATES["release"].set()
    assert (await asyncio.wait_for(holder.result(), WAIT_S)).status == "succeeded"
    second = await asyncio.wait_for((await asyncio.wait_for(waiting, WAIT_S)).result(), WAIT_S)
    assert second.status == "succeeded", second.error
    # it started after the holder's turn was committed: it continues from it
    assert [m["content"] for m in sent_messages(second_server, 0)][1:] == [
        "first task", "first done", "second task"]
    turns = second_rt.store.query("session_turns", {"session_id": "queued"}, order_by=("seq",))
    assert [(t["seq"], t["run_id"]) for t in turns] == [(0, holder.run_id), (1, second.run_id)]


async def test_s7_1_an_interrupted_holder_is_named_with_resume_and_wait_does_not_hang(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    first_server, second_server = servers(), servers()
    first_rt = runtime_factory(agents(first_server), store=durable_store_url)
    second_rt = runtime_factory(agents(second_server), store=durable_store_url)
    holder = await start_holder(first_rt, first_server, "crashed")
    # its lease runs out (as when its process died): nothing drives it any more
    await first_rt.kernel.coordinator.commit(WriteSet((Put("runs", {
        "run_id": holder.run_id, "lease_expires_at": 0.0}),)))

    with pytest.raises(RunError) as refused:
        await asyncio.wait_for(
            second_rt.start("second task", session="crashed", wait=True), WAIT_S)

    assert refused.value.error.code == "SESSION_BUSY"
    message = str(refused.value)
    assert "interrupted" in message and f"agentloom runs resume {holder.run_id}" in message
    assert f"agentloom runs stop {holder.run_id}" in message
    assert [r["run_id"] for r in second_rt.runs()] == [holder.run_id]

    await second_rt.stop(holder.run_id, "given up")  # an interrupted run ends cancelled
    GATES["release"].set()
    with contextlib.suppress(RunError):  # the old holder lost its lease
        await asyncio.wait_for(holder.result(), WAIT_S)
    second_server.script(answer("second done"))
    second = await run(second_rt, "second task", session="crashed")
    assert second.status == "succeeded", second.error
    # the stopped run gave no answer, so the transcript holds none of it
    assert [m["content"] for m in sent_messages(second_server, 0)][1:] == ["second task"]


async def test_s7_1_a_run_of_another_session_is_not_held_up(
    durable_store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    first_server, second_server = servers(), servers()
    first_rt = runtime_factory(agents(first_server), store=durable_store_url)
    second_rt = runtime_factory(agents(second_server), store=durable_store_url)
    holder = await start_holder(first_rt, first_server, "one")
    second_server.script(answer("other done"))
    try:
        other = await run(second_rt, "other task", session="two")
        second_server.script(answer("plain"))
        plain = await run(second_rt, "plain task")
    finally:
        GATES["release"].set()
    assert other.status == "succeeded" and plain.status == "succeeded"
    assert (await asyncio.wait_for(holder.result(), WAIT_S)).status == "succeeded"
