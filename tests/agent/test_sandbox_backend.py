"""The sandbox backend of a runtime (000 §7.2): it is recorded on every run, and a host where
the backend asked for is not usable still runs agents — only their ``exec`` calls fail, as a
failed tool result (``SANDBOX_UNAVAILABLE``) the model reads and answers after."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentloom.agent import AgentSpec, Runtime
from agentloom.pipeline.records import stored_envelope
from agentloom.testing.openai_server import ScriptedOpenAIServer

from .conftest import answer, calls, connection, run, sent_messages, tool_call, tool_results


@pytest.mark.parametrize("backend", ["none", "auto"])
async def test_s7_2_backend_none_is_recorded_on_the_run(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
    backend: str,
) -> None:
    server.script(answer("nothing to run"))
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=("exec",))],
                         store=store_url, sandbox_backend=backend)

    result = await run(rt, "answer without a command")

    assert result.status == "succeeded", result.error
    row = rt.store.get("runs", {"run_id": result.run_id})
    assert row is not None and row["data"]["sandbox_backend"] == backend


async def test_s7_2_without_a_usable_backend_exec_fails_with_sandbox_unavailable_and_the_run_completes(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = tmp_path / "no-programs"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no bwrap to be found
    server.script(
        calls(tool_call("x1", "exec", argv=["echo", "hi"])),
        answer("the command could not run"),
    )
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=("exec",))],
                         store=store_url, sandbox_backend="bubblewrap")

    result = await run(rt, "run echo")

    assert result.status == "succeeded", result.error
    assert result.output == "the command could not run"
    (operation,) = [op for op in rt.kernel.operations(result.run_id) if op["capability_key"] == "exec"]
    envelope = stored_envelope(operation, rt.store)
    assert envelope is not None and envelope.outcome == "failed"
    assert envelope.error is not None and envelope.error.code == "SANDBOX_UNAVAILABLE"
    assert envelope.error.external_outcome == "not_started"
    assert "bubblewrap" in envelope.error.message
    assert tool_results(sent_messages(server, 1))["x1"] == f"failed: {envelope.error.message}"
