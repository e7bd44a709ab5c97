"""Issue 17: a worker killed between claiming a queued run and beginning it (no deadline
recorded yet, perhaps a workspace registered) leaves a run another worker begins from the start
— never a run that fails for lack of what its first claim would have written. And two workers
that judged the same dead holder never both take the run (the claim is a compare-and-set on the
epoch they judged). SQLite and PostgreSQL (found by bench/chaos_workers.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import agentloom
from agentloom.models.offline import Script, ScriptModel
from agentloom.store import Put, WriteSet
from agentloom.store.holders import holder_id
from agentloom.store.records import get_run


def _runtime(store: str, tmp_path: Path) -> agentloom.Runtime:
    return agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=ScriptModel(
            Script.model_validate({"turns": [{"text": "done"}]}), source="s"), tools=("fs.read",))],
        store=store, workspace_root=tmp_path / "ws", sandbox_backend="none")


async def _dead_pid() -> int:
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()
    return proc.pid


async def test_i17_a_run_whose_claimer_died_before_it_began_is_begun_by_the_next_worker(
        tmp_path: Path, durable_store_url: str) -> None:
    runtime = _runtime(durable_store_url, tmp_path)
    try:
        run_id = await runtime.submit("a task")
        lease = runtime.claim_next(worker_cap=1)
        assert lease is not None and lease.run_id == run_id
        # the claimer opened the workspace, then died before recording the run's start
        await runtime.kernel.open_run_workspace(
            lease, owner=agentloom.OwnerRef(kind="agent", id="main"))
        dead = holder_id(await _dead_pid())
        await runtime.kernel.coordinator.commit(WriteSet((Put("runs", {
            "run_id": run_id, "lease_owner": dead}),)))
        run = get_run(runtime.store, run_id)
        assert run is not None and run.status == "running" and "deadline" not in run.data

        taken, left = await runtime.resume_interrupted()
        assert left == [] and [h.run_id for h in taken] == [run_id]
        result = await taken[0].result()
        assert result.status == "succeeded" and result.output == "done"
        run = get_run(runtime.store, run_id)
        assert run is not None and "deadline" in run.data and run.lease_epoch == 2
    finally:
        await runtime.aclose()


async def test_i17_two_workers_judging_the_same_dead_holder_take_the_run_once(
        tmp_path: Path, durable_store_url: str) -> None:
    first, second = _runtime(durable_store_url, tmp_path), _runtime(durable_store_url, tmp_path)
    try:
        run_id = await first.submit("a task")
        lease = first.claim_next(worker_cap=1)
        assert lease is not None
        dead = holder_id(await _dead_pid())
        await first.kernel.coordinator.commit(WriteSet((Put("runs", {
            "run_id": run_id, "lease_owner": dead, "lease_expires_at": 0.0}),)))
        judged = get_run(first.store, run_id)
        assert judged is not None
        taken = await first.resume(run_id)  # the first worker takes it (epoch 2)
        try:
            second._claims.claim(judged, only_if_expired=False)  # the second judged epoch 1 too
        except agentloom.RunError as exc:
            assert exc.code == "LEASE_HELD" and "no longer 1" in str(exc)
        else:
            raise AssertionError("a second worker took a run already taken")
        assert (await taken.result()).status == "succeeded"
        run = get_run(first.store, run_id)
        assert run is not None and run.lease_epoch == 2
    finally:
        await first.aclose()
        await second.aclose()
