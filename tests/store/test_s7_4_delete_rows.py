"""The store's ``Delete`` write (000 §7.4: owner deletion is its user), on memory, SQLite and
PostgreSQL alike: it removes exactly the rows equal on the named columns, atomically with the
rest of its write set and under its fence, frees their unique keys, and can never empty a
table by naming nothing."""

from __future__ import annotations

import pytest

from agentloom.errors import FencedOut
from agentloom.store import Delete, Fence, Insert, Put, Store, WriteSet

from .test_contract import operation_row, run_row


def operation_ids(store: Store) -> list[str]:
    return sorted(r["operation_id"] for r in store.query("operations"))


def test_s7_4_delete_removes_exactly_the_rows_matching_every_named_column(store: Store) -> None:
    assert store.commit_many([WriteSet((
        Insert("runs", run_row("r1")), Insert("runs", run_row("r2")),
        Insert("operations", operation_row("a", run_id="r1", phase="done")),
        Insert("operations", operation_row("b", run_id="r1", phase="pending")),
        Insert("operations", operation_row("c", run_id="r2", phase="done")),
    ))]) == [None]
    kept_b = store.get("operations", {"operation_id": "b"})

    assert store.commit_many([WriteSet((Delete("operations", {"run_id": "r1",
                                                              "phase": "done"}),))]) == [None]
    assert operation_ids(store) == ["b", "c"]
    assert store.get("operations", {"operation_id": "b"}) == kept_b
    assert store.commit_many([WriteSet((Delete("operations", {"run_id": "nobody"}),))]) == [None]
    assert operation_ids(store) == ["b", "c"]  # nothing matching is no error

    # a deleted row's unique key (run_id, logical_key) is free again, in the same write set
    assert store.commit_many([WriteSet((
        Delete("operations", {"operation_id": "b"}),
        Insert("operations", operation_row("b2", run_id="r1", logical_key="key-b")),
    ))]) == [None]
    assert operation_ids(store) == ["b2", "c"]


def test_s7_4_a_fenced_delete_of_a_moved_run_deletes_nothing(store: Store) -> None:
    assert store.commit_many([WriteSet((Insert("runs", run_row("r1")),
                                        Insert("operations", operation_row("a", run_id="r1"))))
                              ]) == [None]
    store.claim_run("r1", "someone", 60.0)  # epoch 0 -> 1

    [outcome] = store.commit_many([WriteSet((
        Delete("operations", {"run_id": "r1"}), Put("runs", {"run_id": "r1", "status": "x"}),
    ), Fence("r1", 0))])

    assert isinstance(outcome, FencedOut)
    assert operation_ids(store) == ["a"]
    assert store.get("runs", {"run_id": "r1"})["status"] == "running"  # type: ignore[index]


def test_s7_4_a_delete_naming_no_column_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="would empty the table"):
        Delete("runs", {})
