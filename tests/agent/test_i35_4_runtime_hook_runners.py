"""Issue #35 item 4: ``Runtime(hook_runners=…)`` — a hook handler kind registered from outside the
package (the ``kind: grpc`` of ``tests/hooks/test_i35_4_handler_kinds.py``) with no runner of
its own runs an agent's real tool calls with the runner the runtime was given; without it the
runtime refuses to start, naming the kind."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from tests.hooks.test_i35_4_handler_kinds import GRPC, SERVICES, GrpcHookHandler, GrpcHookRunner

from agentloom.agent import AgentSpec, Runtime, RuntimeOptions
from agentloom.errors import ConfigError
from agentloom.hooks import HookMatch, HookSpec, register_hook_kind, unregister_hook_kind
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import answer, calls, connection, run, tool_call, workspace_folder


def no_blocked_files(method: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
    if event["payload"].get("path") == "blocked.txt":
        return {"decision": "deny", "reason": "blocked.txt is off limits"}
    return {"decision": "allow"}


@pytest.fixture
def grpc_without_runner() -> Iterator[None]:
    SERVICES["policy:50051"] = no_blocked_files
    register_hook_kind(dataclasses.replace(GRPC, runner=None))  # a runner per runtime
    yield
    unregister_hook_kind("grpc")
    SERVICES.clear()


HOOK = HookSpec(hook_id="grpc-guard", timing="before", match=HookMatch(capability="fs.write"),
                handler=GrpcHookHandler(target="policy:50051", method="policy.Guard/Check"))


async def test_i35_4_runtime_hook_runners_run_a_kind_registered_outside_the_package(
    grpc_without_runner: None, store_url: str, server: ScriptedOpenAIServer,
    runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("c-blocked", "fs_write", path="blocked.txt", content="nope"),
              tool_call("c-ok", "fs_write", path="ok.txt", content="fine")),
        answer("one write was refused"),
    )
    runner = GrpcHookRunner()
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=("fs.write",))],
                         store=store_url, hooks=[HOOK], hook_runners={"grpc": runner})
    assert rt.options.hook_runners == {"grpc": runner}

    result = await run(rt, "write two files", session="grpc")

    assert result.status == "succeeded", result.error
    assert sorted(c[2] for c in runner.calls) == ["fs.write", "fs.write"]
    folder = workspace_folder(rt, result.run_id)
    assert (folder / "ok.txt").read_text() == "fine"
    assert not (folder / "blocked.txt").exists()


def test_i35_4_a_kind_with_no_runner_anywhere_refuses_the_runtime(
    grpc_without_runner: None, store_url: str,
) -> None:
    from agentloom.testing import TestModel

    with pytest.raises(ConfigError, match="handler kind 'grpc' is not available"):
        Runtime([AgentSpec(name="main", model=TestModel())],
                options=RuntimeOptions(store=store_url, hooks=(HOOK,)))
