"""PostgreSQL fencing under real concurrency: two stores (two processes' worth of connections)
on one schema, the old lease holder committing in a loop while the new one claims the run.

The fence takes the run's shared advisory lock before it reads ``runs.lease_epoch`` (the claim
takes the exclusive one). Without that lock a commit that read the old epoch just before the
claim could still land after ``claim_run`` returned; with it the claim waits for in-flight
commits, and every later one sees the new epoch. Each row records
the epoch it was fenced with, so the check is plain: the rows fenced with epoch *e* that
exist once the writer has stopped are exactly those already visible when the claim of
*e + 1* returned, and exactly those the writer was told had committed.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from agentloom.errors import FencedOut
from agentloom.store import Fence, Insert, Store, WriteSet, open_store

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.parametrize("durable_store_url", ["postgres"], indirect=True),
]

RUN = "run-contested"
ROUNDS = 150
OPS_PER_WRITE_SET = 12  # a longer transaction widens the window a missing lock leaves open
MAX_ATTEMPTS_PER_ROUND = 10_000
DEADLINE_S = 30.0


def fenced_rows(store: Store, epoch: int) -> set[str]:
    return {
        r["event_id"]
        for r in store.query("run_controls", {"run_id": RUN, "type": f"fenced@{epoch}"})
    }


class OldHolder:
    """Commits write sets fenced at ``epoch`` until it is fenced out, from its own thread."""

    def __init__(self, store: Store, epoch: int) -> None:
        self.store = store
        self.epoch = epoch
        self.committed: set[str] = set()
        self.refused: set[str] = set()
        self.errors: list[BaseException] = []
        self.first_commit = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _write_set(self) -> tuple[WriteSet, set[str]]:
        ids = {f"e-{self.epoch}-{uuid.uuid4().hex}" for _ in range(OPS_PER_WRITE_SET)}
        ops = tuple(
            Insert(
                "run_controls",
                {
                    "event_id": event_id,
                    "run_id": RUN,
                    "type": f"fenced@{self.epoch}",
                    "created_at": 0.0,
                    "data": {"fence_epoch": self.epoch},
                },
            )
            for event_id in sorted(ids)
        )
        return WriteSet(ops, fence=Fence(RUN, self.epoch)), ids

    def _run(self) -> None:
        try:
            for _ in range(MAX_ATTEMPTS_PER_ROUND):
                ws, ids = self._write_set()
                [outcome] = self.store.commit_many([ws])
                if outcome is None:
                    self.committed |= ids
                    self.first_commit.set()
                elif isinstance(outcome, FencedOut):
                    self.refused |= ids
                    return
                else:
                    raise outcome
            raise AssertionError(f"epoch {self.epoch} was never fenced out")
        except BaseException as exc:
            self.errors.append(exc)
            self.first_commit.set()


def test_old_lease_holder_cannot_commit_once_claim_run_has_returned(
    durable_store_url: str,
) -> None:
    holder_store = open_store(durable_store_url)
    claimer_store = open_store(durable_store_url)
    try:
        create_run = Insert(
            "runs",
            {"run_id": RUN, "status": "running", "lease_epoch": 0, "created_at": 0.0,
             "updated_at": 0.0, "data": {}},
        )
        assert claimer_store.commit_many([WriteSet((create_run,))]) == [None]
        epoch = claimer_store.claim_run(RUN, "holder", 60.0)

        for _ in range(ROUNDS):
            holder = OldHolder(holder_store, epoch)
            holder.thread.start()
            assert holder.first_commit.wait(timeout=DEADLINE_S), "the holder never committed"

            new_epoch = claimer_store.claim_run(RUN, "claimer", 60.0)
            visible_when_claimed = fenced_rows(claimer_store, epoch)

            holder.thread.join(timeout=DEADLINE_S)
            assert not holder.thread.is_alive(), "the old holder was never fenced out"
            assert holder.errors == []
            assert new_epoch == epoch + 1
            late = holder.committed - visible_when_claimed
            assert not late, f"{len(late)} rows fenced at {epoch} committed after the claim"
            assert fenced_rows(claimer_store, epoch) == visible_when_claimed == holder.committed
            assert not holder.refused & fenced_rows(claimer_store, epoch)
            epoch = new_epoch
    finally:
        holder_store.close()
        claimer_store.close()
