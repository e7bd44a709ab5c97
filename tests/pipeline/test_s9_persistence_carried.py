"""Carried commits (``Request.defer_commit``): a finished re-runnable call without hooks — a
model generation — has no external effect and nothing durable depends on it until its
invocation commits again, so its rows ride on that next commit (the intent of the tool calls
it asked for) instead of paying a commit of their own. Spec 000 §9 (persistence) still holds:
a call is never reported committed that is not, every row reaches the store, and a refused
commit loses none of the rows it was carrying."""

from __future__ import annotations

from typing import Any

from tests.pipeline.support import CountingTool, Harness

from agentloom.pipeline import records
from agentloom.pipeline.records import OperationState
from agentloom.results import OperationResult
from agentloom.store import Insert, WriteSet


class Generation(CountingTool):
    """A handler with no external side effect: may be issued again after a crash."""

    rerunnable: bool = True


async def generator(make: Any, **kw: Any) -> Harness:
    """A harness whose handler is re-runnable and keeps no context record (like the model
    gateway's calls), in invocation ``inv-1``."""
    return await make(tool=Generation(), private_context=False, **kw)


def keys(h: Harness) -> list[str]:
    return sorted(op["logical_key"] for op in h.ops())


async def generate(h: Harness, key: str, **kw: Any) -> OperationResult:
    result = await h.kernel.bus.request("demo_echo", {"text": key}, h.ctx, logical_key=key,
                                        defer_commit=True, **kw)
    assert result.outcome == "succeeded", result
    return result


async def test_s9_persistence_a_deferred_call_is_committed_with_its_invocations_next_commit(
    make: Any,
) -> None:
    h = await generator(make, invocation_id="inv-1")
    stats = h.kernel.coordinator.stats
    before = stats.transactions

    await generate(h, "t1/model")
    assert keys(h) == [] and stats.transactions == before  # nothing written yet

    await h.call({"text": "tool"}, logical_key="t1/c0")  # the next commit of the invocation
    assert keys(h) == ["t1/c0", "t1/model"]
    assert stats.transactions == before + 1  # one commit carried both calls
    (model,) = [op for op in h.ops() if op["logical_key"] == "t1/model"]
    assert model["outcome"] == "succeeded" and model["data"]["attempts"] == 1
    (attempt,) = h.kernel.store.query("attempts", {"operation_id": model["operation_id"]})
    assert attempt["status"] == "succeeded" and attempt["started_at"] is not None


async def test_s9_persistence_flush_commits_what_an_ended_invocation_still_carries(
    make: Any,
) -> None:
    h = await generator(make, invocation_id="inv-1")
    stats = h.kernel.coordinator.stats
    await generate(h, "t1/model")
    await generate(h, "t2/model")
    before = stats.transactions

    await h.kernel.bus.flush(h.ctx)
    assert keys(h) == ["t1/model", "t2/model"] and stats.transactions == before + 1
    await h.kernel.bus.flush(h.ctx)  # nothing left: no empty transaction
    assert stats.transactions == before + 1


async def test_s9_persistence_a_call_without_an_invocation_or_with_a_side_effect_is_never_carried(
    make: Any,
) -> None:
    h = await generator(make)  # no invocation_id: nobody would flush
    await generate(h, "t1/model")
    assert keys(h) == ["t1/model"]

    h2 = await make(invocation_id="inv-1")  # CountingTool: not re-runnable
    await h2.kernel.bus.request("demo_echo", {"text": "x"}, h2.ctx, logical_key="t1/c0",
                                defer_commit=True)
    assert keys(h2) == ["t1/c0"]


async def test_s9_persistence_carried_rows_survive_a_refused_commit_and_go_out_with_the_next(
    make: Any,
) -> None:
    h = await generator(make, invocation_id="inv-1")
    await h.call({"text": "seed"}, logical_key="t0/c0")
    await generate(h, "t1/model")
    # Another caller committed ``t1/c0`` behind this pipeline's back: the intent this
    # invocation commits next (carrying ``t1/model``) is refused as a duplicate key.
    (seed,) = h.ops()
    row = {**seed, "operation_id": "op-elsewhere", "logical_key": "t1/c0"}
    assert h.kernel.store.commit_many([WriteSet((Insert("operations", row),))]) == [None]

    h.tool.rerunnable = False  # type: ignore[attr-defined]  # t1/c0 is a call with an effect
    result = await h.call({"text": "tool"}, logical_key="t1/c0")

    assert result.operation_id == "op-elsewhere"  # the lost race waits on theirs
    assert keys(h) == ["t0/c0", "t1/c0"]  # the refused commit took t1/model back with it
    await h.call({"text": "next"}, logical_key="t2/c0")
    assert keys(h) == ["t0/c0", "t1/c0", "t1/model", "t2/c0"]
    assert len(h.tool.calls) == 3  # seed, the generation and t2/c0: t1/c0 never ran here


async def test_s9_persistence_a_call_lost_with_its_lease_is_never_the_base_of_a_later_ones_delta(
    make: Any,
) -> None:
    """Arguments are stored as a delta of the previous call's: never of a carried call that
    was lost with its lease (it is not in the store, so the later row could not be read)."""
    h = await generator(make, invocation_id="inv-1")
    await h.kernel.bus.request("demo_echo", {"text": "a", "items": [1, 2]}, h.ctx,
                               logical_key="t1/model", defer_commit=True)
    assert keys(h) == []  # carried, then the lease is lost (another worker claims the run)
    lease = h.kernel.claim(h.lease.run_id)
    ctx = h.kernel.invocation_context(lease, release_id="rel", invocation_id="inv-1",
                                      private_context=False)

    await h.kernel.bus.request("demo_echo", {"text": "a", "items": [1, 2, 3]}, ctx,
                               logical_key="t1/model")

    (row,) = h.ops()
    assert row["data"]["request"].get("proposed_delta") is None
    records._EXPANDED.clear()  # read it as a new process would
    state = OperationState.from_row(row, h.kernel.store)
    assert state.request["proposed_arguments"] == {"text": "a", "items": [1, 2, 3]}
