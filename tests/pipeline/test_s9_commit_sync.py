"""Spec 000 §9: the waiter receives only a saved effective response, and an effect is never run
twice. The terminal record of a call is committed without waiting for the disk
(``WriteSet.sync=False``); every commit that precedes an effect outside the process — the next
call's intent, the end of the run — is synced and, the log being flushed in order, carries it
there. Observed on the real store: every batch it is asked to commit, in order, beside the
side-effect counter."""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipeline.support import Harness, hook

from agentloom.store import open_store

pytestmark = pytest.mark.parametrize("store_url", ["sqlite", "postgres"], indirect=True)


def watch(h: Harness) -> list[dict[str, Any]]:
    """Record each transaction the store commits: synced or not, the phases of the operation
    rows it writes, and how many effects the tool had made when it was committed."""
    seen: list[dict[str, Any]] = []
    store = h.kernel.store
    commit_many = store.commit_many

    def recording(batch: Any) -> Any:
        phases = [op.row.get("phase") for ws in batch for op in ws.ops
                  if op.table == "operations" and "phase" in op.row]
        runs = [op.row.get("status") for ws in batch for op in ws.ops if op.table == "runs"]
        seen.append({"sync": any(ws.sync for ws in batch), "phases": phases, "runs": runs,
                     "effects": len(h.tool.calls)})
        return commit_many(batch)

    store.commit_many = recording  # type: ignore[method-assign]
    return seen


async def test_s9_every_effect_follows_a_synced_commit_and_results_are_saved_before_delivery(
    make: Any, store_url: str,
) -> None:
    h = await make()
    seen = watch(h)
    for i in range(3):
        result = await h.call({"text": f"call {i}"})
        assert result.outcome == "succeeded"
        # delivered only once saved: another connection reads the effective result already
        other = open_store(store_url)
        try:
            rows = other.query("operations", {"run_id": h.lease.run_id})
            assert sum(r["outcome"] == "succeeded" for r in rows) == i + 1
        finally:
            other.close()
    await h.kernel.end_run(h.lease, "succeeded")
    # each effect was preceded by a synced commit made before it (the intent)
    for n in range(1, 4):
        before = [c for c in seen if c["effects"] == n - 1]
        assert any(c["sync"] and "attempt_started" in c["phases"] for c in before), seen
    finishing = [c for c in seen if "delivered" in c["phases"]]
    assert len(finishing) == 3 and not any(c["sync"] for c in finishing), seen
    # the run's end is synced: nothing written before it can be lost after it; after it
    # comes only the record of its cleanup (what was deleted), which is not waited on
    (end,) = [i for i, c in enumerate(seen) if "succeeded" in c["runs"]]
    assert seen[end]["sync"], seen
    assert [c["sync"] for c in seen[end + 1:]] == [False], seen


async def test_s9_after_hooks_run_only_after_a_synced_raw_result(make: Any, store_url: str) -> None:
    h = await make([hook("patch", lambda event: {"decision": "allow"}, timing="after")])
    seen = watch(h)
    assert (await h.call({"text": "x"})).outcome == "succeeded"
    raw_saved = [c for c in seen if "hooks_after" in c["phases"]]
    assert raw_saved and all(c["sync"] for c in raw_saved), seen


async def test_s9_a_stored_operations_later_rows_name_only_what_a_phase_changes(
    make: Any, store_url: str,
) -> None:
    """The intent writes the whole operations row; every later row of the same call (its
    result) names only the columns a phase changes, so the store never rewrites the unique
    ``(run_id, logical_key)`` index after the intent. The row read back is whole."""
    h = await make()
    written: list[tuple[str, set[str]]] = []
    store = h.kernel.store
    commit_many = store.commit_many

    def recording(batch: Any) -> Any:
        written.extend((type(op).__name__, set(op.row)) for ws in batch for op in ws.ops
                       if op.table == "operations")
        return commit_many(batch)

    store.commit_many = recording  # type: ignore[method-assign]
    result = await h.call({"text": "once"})

    assert result.outcome == "succeeded"
    fixed = {"run_id", "logical_key", "capability_key", "event_type", "created_at"}
    (first_kind, first), *later = written
    assert first_kind == "Insert" and fixed <= first
    assert later and all(kind == "Put" and not (fixed & columns) for kind, columns in later)
    (row,) = store.query("operations", {"run_id": h.lease.run_id})
    assert row["phase"] == "delivered" and row["logical_key"] and row["capability_key"]
