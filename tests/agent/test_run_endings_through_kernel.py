"""Issue 13.6: the agent layer ends, releases and renews runs through the ``Kernel``, which owns
the run row's shape and its fence; ``agent/`` builds no ``runs`` row of its own."""

from __future__ import annotations

import ast
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentloom.agent.leases import is_interrupted
from agentloom.agent.sessions import turn_op
from agentloom.errors import FencedOut, RevisionConflict
from agentloom.kernel import Kernel, RunLease

AGENT_SRC = Path(__file__).resolve().parents[2] / "src" / "agentloom" / "agent"


def run_row_writes(source: str, where: str = "<src>") -> list[str]:
    """Each ``Put("runs", …)`` / ``Insert("runs", …)`` built in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("Put", "Insert") and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "runs"):
            found.append(f"{where}:{node.lineno} {node.func.id}")
    return found


def test_13_6_the_agent_layer_builds_no_run_row_itself() -> None:
    found = [w for path in sorted(AGENT_SRC.rglob("*.py"))
             for w in run_row_writes(path.read_text(encoding="utf-8"), path.name)]
    assert found == []
    assert run_row_writes('ops = [Put("runs", {"run_id": r})]') == ["<src>:1 Put"]  # it can fail


@pytest.fixture
async def kernel(store_url: str, tmp_path: Path) -> AsyncIterator[Kernel]:
    k = Kernel(store_url, workspace_root=tmp_path / "ws", sandbox_backend="none")
    yield k
    k.close()


def scope_state(kernel: Kernel, lease: RunLease) -> str:
    (scope,) = kernel.environment.scopes.scopes_for_run(lease.run_id)
    return scope.state


async def test_13_6_end_run_records_status_data_and_the_turn_in_one_fenced_commit(
    kernel: Kernel,
) -> None:
    lease = await kernel.start_run(data={"task": "t"})
    turn = turn_op("s1", 0, run_id=lease.run_id, task="t", output="done")
    cleanup = await kernel.end_run(lease, "succeeded", data={"task": "t", "output": "done"},
                                   with_ops=(turn,))
    row = kernel.store.get("runs", {"run_id": lease.run_id})
    assert row is not None
    assert (row["status"], row["data"], row["lease_epoch"]) == (
        "succeeded", {"task": "t", "output": "done"}, lease.lease_epoch)
    turns = kernel.store.query("session_turns", {"session_id": "s1"})
    assert [(t["run_id"], t["data"]) for t in turns] == [(lease.run_id, {"task": "t",
                                                                         "output": "done"})]
    assert cleanup.state == "done" and scope_state(kernel, lease) == "deleted"


async def test_13_6_end_run_without_data_keeps_the_runs_data(kernel: Kernel) -> None:
    lease = await kernel.start_run(data={"task": "t"})
    await kernel.end_run(lease, "cancelled")
    row = kernel.store.get("runs", {"run_id": lease.run_id})
    assert row is not None and row["status"] == "cancelled" and row["data"]["task"] == "t"


async def test_13_6_a_stale_holder_ends_nothing(kernel: Kernel) -> None:
    stale = await kernel.start_run(data={"task": "t"})
    kernel.claim(stale.run_id)  # another worker takes the run over
    with pytest.raises(FencedOut):
        await kernel.end_run(stale, "failed", data={"task": "t", "output": "late"},
                             with_ops=(turn_op("s1", 0, run_id=stale.run_id, task="t",
                                               output="late"),))
    with pytest.raises(FencedOut):
        await kernel.release_run(stale, data={"task": "t", "failures": {}})
    with pytest.raises(FencedOut):
        await kernel.renew_lease(stale, lease_ttl_s=600)
    row = kernel.store.get("runs", {"run_id": stale.run_id})
    assert row is not None and row["status"] == "running" and "output" not in row["data"]
    assert kernel.store.query("session_turns", {"session_id": "s1"}) == []
    assert scope_state(kernel, stale) == "registered"


async def test_13_6_a_conflicting_turn_records_and_cleans_nothing_so_the_end_can_be_retried(
    kernel: Kernel,
) -> None:
    lease = await kernel.start_run(data={"task": "t"})
    taken = turn_op("s1", 0, run_id="another-run", task="x", output="y")
    await kernel.end_run(await kernel.start_run(), with_ops=(taken,))  # seq 0 is taken
    with pytest.raises(RevisionConflict):
        await kernel.end_run(lease, "succeeded", data={"task": "t"},
                             with_ops=(turn_op("s1", 0, run_id=lease.run_id, task="t",
                                               output="o"),))
    row = kernel.store.get("runs", {"run_id": lease.run_id})
    assert row is not None and row["status"] == "running"
    assert scope_state(kernel, lease) == "registered"
    await kernel.end_run(lease, "succeeded", data={"task": "t"},
                         with_ops=(turn_op("s1", 1, run_id=lease.run_id, task="t", output="o"),))
    assert [t["seq"] for t in kernel.store.query("session_turns", {"session_id": "s1"},
                                                 order_by=("seq",))] == [0, 1]


async def test_13_6_release_lets_the_lease_go_and_renew_takes_it_again(kernel: Kernel) -> None:
    lease = await kernel.start_run(data={"task": "t"})
    await kernel.release_run(lease, data={"task": "t", "failures": {"count": 1}})
    row = kernel.store.get("runs", {"run_id": lease.run_id})
    assert row is not None and row["status"] == "running" and is_interrupted(row)
    assert row["data"] == {"task": "t", "failures": {"count": 1}}
    await kernel.renew_lease(lease, lease_ttl_s=600)
    row = kernel.store.get("runs", {"run_id": lease.run_id})
    assert row is not None and row["lease_expires_at"] > time.time() + 500
    assert row["data"] == {"task": "t", "failures": {"count": 1}}

