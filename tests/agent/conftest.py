"""Agent runs end to end: ``Runtime`` → React loop → bus → pipeline → the real OpenAI SDK →
``ScriptedOpenAIServer`` on 127.0.0.1. Each agent gets its own server, so its script is its
own queue of turns whatever order parallel calls are made in."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.agent import AgentSpec, RunEvent, RunHandle, RunResult, Runtime
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.models.connect import connection_for
from agentloom.models.ports import Connection
from agentloom.testing.openai_server import ScriptedOpenAIServer, Step, chat_turn

WAIT_S = 30.0
"""A deadline on every wait of these tests; never a synchronisation delay."""


@pytest.fixture
def servers() -> Iterator[Callable[[], ScriptedOpenAIServer]]:
    """A factory of scripted servers, all closed at the end of the test."""
    made: list[ScriptedOpenAIServer] = []

    def factory() -> ScriptedOpenAIServer:
        made.append(ScriptedOpenAIServer().start())
        return made[-1]

    yield factory
    for srv in made:
        srv.close()


@pytest.fixture
def server(servers: Callable[[], ScriptedOpenAIServer]) -> ScriptedOpenAIServer:
    return servers()


def connection(srv: ScriptedOpenAIServer, model: str = "scripted-model") -> Connection:
    return connection_for("openai", model=model, base_url=srv.base_url, api_key="test")


def tool_call(call_id: str, name: str, **arguments: Any) -> tuple[str, str, str]:
    """One scripted tool call (model-facing ``name``, e.g. ``fs_write``)."""
    return call_id, name, json.dumps(arguments)


def calls(*tool_calls: tuple[str, str, str], text: str = "") -> list[Step]:
    """A scripted model turn that makes ``tool_calls`` (one batch)."""
    return chat_turn(text, tool_calls=tool_calls)


def answer(text: str) -> list[Step]:
    return chat_turn(text)


def sent_messages(srv: ScriptedOpenAIServer, n: int) -> list[dict[str, Any]]:
    """The ``messages`` of the ``n``-th model request ``srv`` received (0-based)."""
    return list(srv.model_requests[n].json["messages"])


def tool_results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """``call_id → content`` of every tool message."""
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


def assistant_calls(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``call_id → {"name", "arguments"}`` of every assistant tool call."""
    return {c["id"]: {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()}


def before_hook(hook_id: str, fn: Callable[..., Any], *, capability: str | None = None,
                event: str = "tool", purpose: str | None = None,
                ) -> tuple[HookSpec, str, Callable[..., Any]]:
    ref = f"tests.agent:{hook_id}"
    spec = HookSpec(hook_id=hook_id, timing="before", event=event,
                    match=HookMatch(capability=capability, purpose=purpose),
                    handler=HandlerRef(ref=ref),
                    timeout_s=10.0)
    return spec, ref, fn


async def run(rt: Runtime, task: str, **kwargs: Any) -> RunResult:
    """``Runtime.run`` with a deadline."""
    return await asyncio.wait_for(rt.run(task, **kwargs), WAIT_S)


def watch(handle: RunHandle, predicate: Callable[[RunEvent], bool]) -> asyncio.Task[RunEvent]:
    """A task resolving to the first live event of ``handle`` that matches ``predicate``.

    Call it right after ``Runtime.start``: the task subscribes on its first step, before the
    run can have made any tool call (that needs a model response first)."""
    async def first() -> RunEvent:
        async for event in handle.events():
            if predicate(event):
                return event
        raise AssertionError(f"run {handle.run_id} ended without the awaited event")

    return asyncio.ensure_future(asyncio.wait_for(first(), WAIT_S))


@pytest.fixture
async def runtime_factory(tmp_path: Path) -> AsyncIterator[Callable[..., Runtime]]:
    """``make(agents, store=url, **kwargs)``: a ``Runtime`` with its workspaces under
    ``tmp_path``; every one is closed at the end of the test."""
    made: list[Runtime] = []

    def factory(agents: list[AgentSpec], *, store: str, **kwargs: Any) -> Runtime:
        kwargs.setdefault("workspace_root", tmp_path / "workspaces")
        made.append(Runtime(agents, store=store, **kwargs))
        return made[-1]

    yield factory
    for rt in made:
        await rt.aclose()


def workspace_folder(rt: Runtime, run_id: str) -> Path:
    """The host folder of the run's workspace scope (a session scope outlives the run)."""
    scopes = rt.kernel.environment.scopes
    (scope,) = scopes.scopes_for_run(run_id)
    return scopes.path(scope)
