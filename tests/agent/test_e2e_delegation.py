"""Planner → Executors in one batch (000 §4; §9 "Planner／Executor 共享同 Invocation
工作区"): each Executor runs its own loop on its own model; one Executor's final model failure
is an *error result* for the Planner, delivered in the same next request as the other's
success; the Planner decides afterwards. Executors share the invocation's ``/work``."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from agentloom.agent import AgentSpec, Runtime
from agentloom.testing.openai_server import Chunk, Done, ScriptedOpenAIServer, Status, Step, chat_role

from .conftest import answer, assistant_calls, calls, connection, run, sent_messages, tool_call, tool_results

BAD_REQUEST: list[Step] = [Status(400, body={"error": {
    "message": "unsupported parameter for this model", "type": "invalid_request_error"}})]
MALFORMED_STREAM: list[Step] = [chat_role(), Chunk("{this is not json"), Done()]


@pytest.mark.parametrize("failure", ["http_400", "malformed_stream"])
async def test_s4_executor_model_failure_is_an_error_result_in_the_planners_batch_and_it_decides_after(
    failure: str, store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    planner, alpha, beta = servers(), servers(), servers()
    planner.script(
        calls(tool_call("d-alpha", "delegate_alpha", task="write shared.txt saying 'from alpha'"),
              tool_call("d-beta", "delegate_beta", task="count to three")),
        calls(tool_call("r1", "fs_read", path="shared.txt")),
        answer("alpha succeeded and wrote 'from alpha'; beta failed, I finished without it"),
    )
    alpha.script(
        calls(tool_call("a1", "fs_write", path="shared.txt", content="from alpha")),
        answer("alpha wrote shared.txt"),
    )
    beta.script(BAD_REQUEST if failure == "http_400" else MALFORMED_STREAM)
    rt = runtime_factory([
        AgentSpec(name="main", model=connection(planner), instructions="You plan.",
                  tools=("fs.read",), executors=("alpha", "beta")),
        AgentSpec(name="alpha", model=connection(alpha), instructions="You write files.",
                  tools=("fs.write",)),
        AgentSpec(name="beta", model=connection(beta), instructions="You count."),
    ], store=store_url)

    result = await run(rt, "delegate the work")

    assert result.status == "succeeded", result.error
    assert result.output == "alpha succeeded and wrote 'from alpha'; beta failed, I finished " \
        "without it"
    assert len(planner.model_requests) == 3 and planner.pending == 0
    # both delegation results reach the Planner in one request, in request order
    second = sent_messages(planner, 1)
    results = tool_results(second)
    assert list(results) == ["d-alpha", "d-beta"]
    assert results["d-alpha"] == "alpha wrote shared.txt"
    assert results["d-beta"].startswith("failed: executor 'beta' failed: ")
    assert ("HTTP 400" if failure == "http_400" else "not valid JSON") in results["d-beta"]
    assert len(beta.model_requests) == 1  # a known failure: not re-issued, not retried
    assert list(assistant_calls(second)) == ["d-alpha", "d-beta"]
    # the Executor's file is in the Planner's /work
    third = tool_results(sent_messages(planner, 2))
    assert json.loads(third["r1"])["content"] == "from alpha"
    # each Executor saw only its own task, never the Planner's conversation
    assert sent_messages(alpha, 0) == [
        {"role": "system", "content": "You write files."},
        {"role": "user", "content": "write shared.txt saying 'from alpha'"}]
    assert sent_messages(beta, 0)[-1] == {"role": "user", "content": "count to three"}
    assert all("delegate the work" not in json.dumps(r.json) for r in [
        *alpha.model_requests, *beta.model_requests])
    # the delegation operations record one success and one failure
    delegations = {r["capability_key"]: r["outcome"] for r in rt.kernel.operations(result.run_id)
                   if r["event_type"] == "delegation"}
    assert delegations == {"delegate.alpha": "succeeded", "delegate.beta": "failed"}
