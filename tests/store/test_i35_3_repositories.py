"""Issue #35 item 3: the repositories of ``store/`` write the rows their records read back.

Each op builder's row, committed, reads back as the record it was made from (or the one the
reader expects); the run repository refuses a column ``runs`` does not have.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentloom.refs import Principal
from agentloom.store import Store, WriteSet, open_store
from agentloom.store.api_keys import ApiKey, all_keys, get_key, new_key_op, revoke_op
from agentloom.store.controls import consumed_op, control_op, run_controls
from agentloom.store.ports import Op
from agentloom.store.runs import get_run, new_run_op, principal_page, requeue_op, update_run_op
from agentloom.store.workers import WorkerRecord, all_workers, heartbeat_op
from agentloom.store.workflow_nodes import WorkflowNodeRecord, node_op, node_records

ALICE = Principal(actor="alice", project="p")


@pytest.fixture
def store() -> Iterator[Store]:
    opened = open_store("memory://")
    yield opened
    opened.close()


def commit(store: Store, *ops: Op) -> None:
    assert store.commit_many([WriteSet(tuple(ops))]) == [None]


def test_i35_3_a_new_run_reads_back_with_its_principal_and_columns(store: Store) -> None:
    commit(store, new_run_op("r1", status="pending", data={"agent": "main", "task": "t"},
                             created_at=1.0, priority=3, principal=ALICE))
    run = get_run(store, "r1")
    assert run is not None and run.status == "pending" and run.agent == "main"
    assert (run.actor, run.project, run.priority, run.lease_epoch) == ("alice", "p", 3, 0)
    assert run.done_for(ALICE) and not run.done_for(Principal(actor="bob", project="p"))
    assert store.get("runs", {"run_id": "r1"})["agent"] == "main"  # the queue's column


def test_i35_3_requeue_and_updates_change_only_their_columns(store: Store) -> None:
    commit(store, new_run_op("r1", status="waiting", data={"agent": "main"}, created_at=1.0,
                             lease=(4, "w1", 9.0)))
    commit(store, requeue_op("r1", now=2.0))
    run = get_run(store, "r1")
    assert run is not None
    assert (run.status, run.updated_at, run.lease_epoch, run.fence.lease_epoch) == \
        ("pending", 2.0, 4, 4)
    with pytest.raises(ValueError, match="no column colour"):
        update_run_op("r1", {"colour": "red"})


def test_i35_3_a_principal_page_is_newest_first_and_continues_after_its_last(
        store: Store) -> None:
    for i in range(3):
        commit(store, new_run_op(f"r{i}", status="pending", data={"agent": "main"},
                                 created_at=float(i), principal=ALICE))
    commit(store, new_run_op("other", status="pending", data={}, created_at=9.0))
    first = principal_page(store, ALICE, limit=2)
    assert [r.run_id for r in first.runs] == ["r2", "r1"] and first.last == (1.0, "r1")
    rest = principal_page(store, ALICE, limit=2, after=first.last)
    assert [r.run_id for r in rest.runs] == ["r0"] and rest.last is None
    assert principal_page(store, ALICE, limit=5, agent="other").runs == []


def test_i35_3_controls_workers_nodes_and_keys_read_back_as_written(store: Store) -> None:
    commit(store, control_op(event_id="e1", run_id="r", kind="control.supplement",
                             created_at=1.0, data={"text": "more"}))
    [control] = run_controls(store, "r", kind="control.supplement")
    commit(store, consumed_op(control, 2))
    assert run_controls(store, "r")[0].data == {"text": "more", "consumed_turn": 2}

    worker = WorkerRecord(worker_id="w", host="h", pid=1, state="running", started_at=1.0,
                          heartbeat_at=2.0, data={"held": ["r"]})
    commit(store, heartbeat_op(worker))
    assert all_workers(store) == [worker]

    node = WorkflowNodeRecord(run_id="r", node="a", attempt=1, status="succeeded",
                              operation_id="o", created_at=1.0, updated_at=1.0, data={})
    commit(store, node_op(node, new=True))
    assert store.commit_many([WriteSet((node_op(node, new=True),))])[0] is not None
    assert node_records(store, "r") == [node]

    key = ApiKey(key_id="k", actor="alice", project="p", created_at=1.0, revoked_at=None,
                 digest="d" * 64)
    commit(store, new_key_op(key))
    commit(store, revoke_op("k", now=5.0))
    stored = get_key(store, "k")
    assert stored is not None and stored.digest == "d" * 64 and stored.revoked_at == 5.0
    assert "digest" not in stored.to_dict() and "d" * 64 not in repr(stored)
    assert [k.key_id for k in all_keys(store)] == ["k"]
