"""The run's token quota (000 §4: "根额度耗尽仍控制整棵执行树" — the root's quota governs the
whole execution tree): ``limits.max_total_tokens`` of the agent a run starts with caps every
model call of the run, Executors' included; once spent, no invocation makes another call."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentloom.agent import AgentSpec, Limits, Runtime
from agentloom.agent.quota import TokenQuota
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn, chat_usage

from .conftest import answer, calls, connection, run, tool_call

PER_CALL = 15  # the scripted server reports usage 10 + 5 for every turn


async def test_s4_a_spent_token_quota_ends_the_run_before_its_next_model_call(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(*[calls(tool_call(f"c{i}", "fs_list", path=".")) for i in range(5)])
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=("fs.list",),
                                    limits=Limits(max_total_tokens=3 * PER_CALL - 5))],
                         store=store_url)

    result = await run(rt, "list forever")

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "RUN_BUDGET_EXHAUSTED"
    assert f"used {3 * PER_CALL} of its {3 * PER_CALL - 5} tokens before turn 4" in \
        result.error.message
    assert len(server.model_requests) == 3  # the 4th call was never made
    ops = rt.store.query("operations", {"run_id": result.run_id, "event_type": "tool"})
    assert len(ops) == 3  # every call made was committed
    assert TokenQuota.of_run(rt.store, result.run_id, 1).used == 3 * PER_CALL


async def test_s4_the_roots_quota_governs_its_executors_and_ends_the_whole_tree(
    store_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime],
) -> None:
    planner, worker = servers(), servers()
    planner.script(calls(tool_call("d1", "delegate_worker", task="list twice")),
                   answer("never asked"))
    worker.script(calls(tool_call("w1", "fs_list", path=".")),
                  calls(tool_call("w2", "fs_list", path=".")), answer("never asked"))
    rt = runtime_factory([
        AgentSpec(name="main", model=connection(planner), executors=("worker",),
                  limits=Limits(max_total_tokens=2 * PER_CALL - 1)),
        AgentSpec(name="worker", model=connection(worker), tools=("fs.list",),
                  limits=Limits(max_total_tokens=10 ** 9)),  # only the root's limit counts
    ], store=store_url)

    result = await run(rt, "delegate")

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "RUN_BUDGET_EXHAUSTED"
    assert len(planner.model_requests) == 1 and len(worker.model_requests) == 1
    (delegation,) = [op for op in rt.store.query("operations", {"run_id": result.run_id})
                     if op["event_type"] == "delegation"]
    assert delegation["outcome"] == "failed"  # the Executor's end, an error result
    error = delegation["data"]["envelope"]["error"]
    assert error["code"] == "RUN_BUDGET_EXHAUSTED"
    assert error["message"].startswith("executor 'worker' failed: the run used 30 of its 29")


def test_s4_no_quota_means_no_refusal_and_a_quota_must_be_positive() -> None:
    quota = TokenQuota(None)
    quota.charge("t1/model", 10 ** 12)
    assert quota.refusal(2) is None
    limited = TokenQuota(100)
    limited.charge("t1/model", 60)
    limited.charge("t1/model", 60)  # the same call counted again (a replay): once
    assert limited.used == 60 and limited.refusal(2) is None
    limited.charge("t2/model", 40)
    refusal = limited.refusal(3)
    assert refusal is not None and refusal.code == "RUN_BUDGET_EXHAUSTED"
    with pytest.raises(ValueError, match="at least 1"):
        TokenQuota(0)


async def test_i11_10_negative_token_usage_from_a_provider_never_refunds_the_quota(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    refund = [*chat_turn("", tool_calls=[("c0", "fs_list", '{"path": "."}')], usage=None)]
    refund.insert(-1, chat_usage(-1000, -1000))  # a provider reporting a negative count
    server.script(refund, *[calls(tool_call(f"c{i}", "fs_list", path=".")) for i in range(1, 5)])
    rt = runtime_factory([AgentSpec(name="main", model=connection(server), tools=("fs.list",),
                                    limits=Limits(max_total_tokens=3 * PER_CALL - 5))],
                         store=store_url)

    result = await run(rt, "list forever")

    assert result.status == "failed"
    assert result.error is not None and result.error.code == "RUN_BUDGET_EXHAUSTED"
    # The negative call is estimated instead (> 0), so the quota is spent no later than before.
    assert len(server.model_requests) <= 3
    assert TokenQuota.of_run(rt.store, result.run_id, 1).used > 2 * PER_CALL
