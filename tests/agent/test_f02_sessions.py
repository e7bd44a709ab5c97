"""F02: an agent session is bound to the scope (space, owner kind, owner id) that created it.
The same scope continues the transcript (and the session's /work); any other scope is refused
before any model call and learns nothing; a session without identity is never attributed to
whoever asks next."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentloom.agent import AgentSpec, RunError, Runtime, SessionError
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.store import Insert, WriteSet
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import WAIT_S, answer, calls, connection, run, sent_messages, tool_call, tool_results

FIRST_TASK = "remember the codeword PERIWINKLE"
FIRST_ANSWER = "I will remember PERIWINKLE"


def agents(server: ScriptedOpenAIServer) -> list[AgentSpec]:
    return [AgentSpec(name="main", model=connection(server), instructions="Be brief.",
                      tools=("fs.write", "fs.read")),
            AgentSpec(name="other", model=connection(server), instructions="Be brief.")]


async def first_run(rt: Runtime, server: ScriptedOpenAIServer, session: str) -> str:
    server.script(calls(tool_call("w1", "fs_write", path="codeword.txt", content="PERIWINKLE")),
                  answer(FIRST_ANSWER))
    result = await run(rt, FIRST_TASK, session=session)
    assert result.status == "succeeded", result.error
    return result.run_id


async def test_f02_a_second_run_in_the_same_session_continues_the_transcript_and_workspace(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    rt = runtime_factory(agents(server), store=store_url)
    await first_run(rt, server, "sess-1")
    server.script(calls(tool_call("r1", "fs_read", path="codeword.txt")),
                  answer("The codeword is PERIWINKLE"))

    second = await run(rt, "what was the codeword?", session="sess-1")

    assert second.status == "succeeded", second.error
    assert second.output == "The codeword is PERIWINKLE"
    assert sent_messages(server, 2) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": FIRST_TASK},
        {"role": "assistant", "content": FIRST_ANSWER},
        {"role": "user", "content": "what was the codeword?"},
    ]
    # the session's /work persisted across the runs
    assert json.loads(tool_results(sent_messages(server, 3))["r1"])["content"] == "PERIWINKLE"
    turns = rt.store.query("session_turns", {"session_id": "sess-1"}, order_by=("seq",))
    assert [(t["seq"], t["data"]["task"]) for t in turns] == [
        (0, FIRST_TASK), (1, "what was the codeword?")]
    # a third run sees both earlier turns, in order
    server.script(answer("still PERIWINKLE"))
    await run(rt, "and now?", session="sess-1")
    assert [m["content"] for m in sent_messages(server, 4)][1:] == [
        FIRST_TASK, FIRST_ANSWER, "what was the codeword?", "The codeword is PERIWINKLE",
        "and now?"]


async def test_f02_another_agent_as_owner_is_refused_before_any_model_call_and_sees_nothing(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    rt = runtime_factory(agents(server), store=store_url)
    await first_run(rt, server, "sess-1")
    requests, runs = len(server.model_requests), len(rt.runs())
    server.script(answer("must never be asked"))

    with pytest.raises(SessionError) as refused:
        await rt.start("what was the codeword?", agent="other", session="sess-1")

    assert refused.value.error.code == "SESSION_SCOPE_MISMATCH"
    assert "PERIWINKLE" not in str(refused.value) and FIRST_TASK not in str(refused.value)
    assert len(server.model_requests) == requests and server.pending == 1
    assert len(rt.runs()) == runs  # no run, no workspace was created for the refused scope
    turns = rt.store.query("session_turns", {"session_id": "sess-1"})
    assert len(turns) == 1  # and nothing was appended to the session


async def test_f02_another_space_is_refused_before_any_model_call_and_sees_nothing(
    durable_store_url: str, server: ScriptedOpenAIServer,
    runtime_factory: Callable[..., Runtime],
) -> None:
    mine = runtime_factory(agents(server), store=durable_store_url, space_id="space-a")
    await first_run(mine, server, "sess-shared-name")
    theirs = runtime_factory(agents(server), store=durable_store_url, space_id="space-b")
    requests = len(server.model_requests)
    server.script(answer("must never be asked"))

    with pytest.raises(SessionError) as refused:
        await theirs.start("what was the codeword?", session="sess-shared-name")

    assert refused.value.error.code == "SESSION_SCOPE_MISMATCH"
    assert "PERIWINKLE" not in str(refused.value)
    assert len(server.model_requests) == requests and server.pending == 1
    assert len(theirs.runs()) == 1  # only space-a's run exists
    # the owner's scope can still continue it
    server.script(answer("PERIWINKLE"))
    again = await run(mine, "the codeword?", session="sess-shared-name")
    assert again.status == "succeeded"


async def test_f02_a_session_without_identity_is_refused_with_identity_unknown(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    rt = runtime_factory(agents(server), store=store_url)
    await rt.kernel.coordinator.commit(WriteSet((Insert("sessions", {
        "session_id": "legacy", "owner_kind": None, "owner_id": None, "space_id": None,
        "created_at": time.time(), "data": {}}),)))
    await rt.kernel.coordinator.commit(WriteSet((Insert("session_turns", {
        "session_id": "legacy", "seq": 0, "run_id": "old-run", "created_at": time.time(),
        "data": {"task": "SECRET legacy task", "output": "SECRET legacy answer"}}),)))
    server.script(answer("must never be asked"))

    with pytest.raises(SessionError) as refused:
        await rt.start("continue", session="legacy")

    assert refused.value.error.code == "SESSION_IDENTITY_UNKNOWN"
    assert "SECRET" not in str(refused.value)
    assert server.model_requests == [] and rt.runs() == []


async def test_f02_another_session_of_the_same_owner_shares_neither_transcript_nor_workspace(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    rt = runtime_factory(agents(server), store=store_url)
    await first_run(rt, server, "sess-1")
    server.script(calls(tool_call("r1", "fs_read", path="codeword.txt")),
                  answer("I do not know any codeword"))

    other = await run(rt, "what was the codeword?", session="sess-2")

    assert other.status == "succeeded", other.error
    assert sent_messages(server, 2) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "what was the codeword?"}]
    read = tool_results(sent_messages(server, 3))["r1"]
    assert read.startswith("failed: ") and "PERIWINKLE" not in read


async def test_f02_s7_1_a_second_run_of_a_busy_session_is_refused_or_waits_and_both_turns_are_kept(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    """000 §7.1.11: a session is occupied by one active run. While the first run is held
    before its final answer, a second start is refused (``SESSION_BUSY``, naming the holder);
    with ``wait`` it starts once the first has ended, and both turns are kept, in order."""
    held = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    async def hold(event: dict[str, Any]) -> dict[str, Any]:
        """Hold the first run's final model response until the test lets it go (the hook runs
        in an event loop of its own, on a thread: it signals the test's loop thread-safely)."""
        if not release.is_set():
            loop.call_soon_threadsafe(held.set)
            await asyncio.to_thread(release.wait, WAIT_S)
        return {"decision": "allow"}

    hook = HookSpec(hook_id="hold", timing="after", event="model",
                    handler=HandlerRef(ref="tests.agent:hold"), timeout_s=WAIT_S)
    rt = runtime_factory(agents(server), store=store_url, hooks=[hook],
                         hook_functions={"tests.agent:hold": hold})
    server.script(answer("an answer"), answer("an answer"))

    first = await rt.start("first task", session="sess-busy")
    await asyncio.wait_for(held.wait(), WAIT_S)
    with pytest.raises(RunError) as refused:
        await rt.start("second task", session="sess-busy")
    assert refused.value.code == "SESSION_BUSY"
    assert first.run_id in str(refused.value)

    waiting = asyncio.create_task(rt.start("second task", session="sess-busy", wait=True))
    for _ in range(5):  # a few turns of the event loop: it polls, it does not start
        await asyncio.sleep(0)
    assert not waiting.done()
    release.set()
    second = await asyncio.wait_for(waiting, WAIT_S)
    results = [await asyncio.wait_for(h.result(), WAIT_S) for h in (first, second)]

    assert [r.status for r in results] == ["succeeded", "succeeded"]
    assert {r["status"] for r in rt.runs()} == {"succeeded"}  # no run is left "running"
    turns = rt.store.query("session_turns", {"session_id": "sess-busy"}, order_by=("seq",))
    assert [t["seq"] for t in turns] == [0, 1]
    assert [t["data"]["task"] for t in turns] == ["first task", "second task"]


async def test_f02_two_starts_of_a_new_session_at_once_never_leave_a_run_without_a_driver(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    """Each start either returns a handle whose run finishes, or is refused with a
    ``SessionError`` having created nothing; never a raw conflict and an orphaned run."""
    rt = runtime_factory(agents(server), store=store_url)
    server.script(answer("an answer"), answer("an answer"))

    started = await asyncio.gather(rt.start("first task", session="sess-new"),
                                   rt.start("second task", session="sess-new"),
                                   return_exceptions=True)

    handles = [h for h in started if not isinstance(h, BaseException)]
    refused = [e for e in started if isinstance(e, BaseException)]
    assert all(isinstance(e, SessionError) for e in refused), refused
    results = [await asyncio.wait_for(h.result(), WAIT_S) for h in handles]
    assert [r.status for r in results] == ["succeeded"] * len(handles)
    assert len(rt.runs()) == len(handles)
    assert {r["status"] for r in rt.runs()} == {"succeeded"}
