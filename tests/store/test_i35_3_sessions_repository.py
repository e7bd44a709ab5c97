"""Issue #35 item 3: the ``sessions`` repository (and the reads ``agent/`` moved into
``store/``) write the rows their records read back.

A session's row says whose it is; a turn slot's insert is the compare-and-set of a session's
occupancy (a second insert of the same slot conflicts), its close frees it; the owner reads
(``owner_sessions``, ``principal_agent_runs``, ``has_cleanup_job``, ``all_version_data``)
return that owner's rows only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentloom.errors import RevisionConflict
from agentloom.refs import OwnerRef, Principal
from agentloom.store import Store, WriteSet, open_store
from agentloom.store.cleanup import cleanup_job_op, has_cleanup_job
from agentloom.store.ports import Op
from agentloom.store.runs import new_run_op, principal_agent_runs
from agentloom.store.sessions import (
    close_op,
    get_session,
    last_turn,
    new_session_op,
    owner_sessions,
    session_turns,
    slot_op,
    turn_op,
)
from agentloom.store.skills import all_version_data, version_insert

MAIN = OwnerRef(kind="agent", id="main", space_id="default")
OTHER = OwnerRef(kind="agent", id="other", space_id="default")


@pytest.fixture
def store() -> Iterator[Store]:
    opened = open_store("memory://")
    yield opened
    opened.close()


def commit(store: Store, *ops: Op) -> BaseException | None:
    return store.commit_many([WriteSet(tuple(ops))])[0]


def test_i35_3_a_session_reads_back_as_its_owners_only(store: Store) -> None:
    assert get_session(store, "s1") is None
    assert commit(store, new_session_op("s1", MAIN, created_at=1.0)) is None
    assert isinstance(commit(store, new_session_op("s1", OTHER, created_at=2.0)),
                      RevisionConflict)  # created once: the first creator's scope stays
    session = get_session(store, "s1")
    assert session is not None and session.identified and session.created_at == 1.0
    assert session.belongs_to(MAIN) and not session.belongs_to(OTHER)
    assert not session.belongs_to(OwnerRef(kind="agent", id="main", space_id="elsewhere"))
    assert [s.session_id for s in owner_sessions(store, MAIN)] == ["s1"]
    assert owner_sessions(store, OTHER) == []


def test_i35_3_a_turn_slot_is_taken_once_and_its_close_frees_it(store: Store) -> None:
    assert last_turn(store, "s1") is None
    taken = slot_op("s1", 0, run_id="r1", task="t1", worker="w1", created_at=1.0)
    assert commit(store, taken) is None
    assert isinstance(commit(store, slot_op("s1", 0, run_id="r2", task="t2", worker="w2",
                                            created_at=1.5)), RevisionConflict)
    slot = last_turn(store, "s1")
    assert slot is not None and (slot.run_id, slot.status, slot.worker) == ("r1", "running", "w1")
    assert commit(store, close_op("s1", 0, run_id="r1", task="t1", status="succeeded",
                                  output="a1")) is None
    assert commit(store, turn_op("s1", 1, run_id="r3", task="t3", output="a3",
                                 created_at=3.0)) is None
    turns = session_turns(store, "s1")
    assert [(t.seq, t.run_id, t.status) for t in turns] == [(0, "r1", "succeeded"),
                                                              (1, "r3", "succeeded")]
    assert turns[0].data["output"] == "a1" and turns[0].created_at == 1.0  # kept by the close
    assert store.get("session_turns", {"session_id": "s1", "seq": 1}) == turns[1].to_row()


def test_i35_3_the_owner_reads_return_that_owners_rows(store: Store) -> None:
    alice, bob = Principal(actor="alice", project="p"), Principal(actor="bob", project="p")
    commit(store, new_run_op("c1", status="running", data={"agent": "@commands"},
                             created_at=1.0, principal=alice),
           new_run_op("c2", status="running", data={"agent": "main"}, created_at=2.0,
                      principal=alice),
           new_run_op("c3", status="running", data={"agent": "@commands"}, created_at=3.0,
                      principal=bob))
    assert [r.run_id for r in principal_agent_runs(store, alice, "@commands")] == ["c1"]
    assert not has_cleanup_job(store, "c1")
    commit(store, cleanup_job_op(new=True, job_id="j1", run_id="c1", state="done", attempts=1,
                                 created_at=1.0, updated_at=1.0, data={}))
    assert has_cleanup_job(store, "c1") and not has_cleanup_job(store, "c2")
    assert all_version_data(store) == []
    commit(store, version_insert(digest="d1", name="sk", created_at=1.0,
                                 data={"files": [{"sha256": "x"}]}))
    assert all_version_data(store) == [{"files": [{"sha256": "x"}]}]
