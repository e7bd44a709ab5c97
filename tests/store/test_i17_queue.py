"""The run queue in the store (issue 17 "Queue", 003 F12 / U9): ``claim_next`` takes one
pending run by priority then age, within the worker's and the agents' caps checked in one
transaction; PostgreSQL wakes listeners at the commit that queues a run.

Every claim test runs on memory, a SQLite file and PostgreSQL (``store`` / ``store_url``);
the concurrent one gives each thread its own store (its own connections) on the SQL backends.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import drop_store, fresh_store_url
from tests.store.test_contract import raw_sql

from agentloom.errors import FencedOut, StoreError
from agentloom.store import Fence, Insert, Put, Store, WriteSet, open_store
from agentloom.store.ports import Claimed

DEADLINE_S = 120.0


def pending(run_id: str, *, agent: str = "a", priority: int = 0, created_at: float = 1.0,
            status: str = "pending", release_id: str | None = None) -> Insert:
    return Insert("runs", {"run_id": run_id, "status": status, "lease_epoch": 0,
                           "created_at": created_at, "updated_at": created_at,
                           "data": {"agent": agent}, "agent": agent, "priority": priority,
                           "release_id": release_id})


def submit(store: Store, *ops: Insert) -> None:
    assert store.commit_many([WriteSet(ops)]) == [None]


def claim(store: Store, worker: str = "w1", *, agents: tuple[str, ...] = ("a", "b"),
          worker_cap: int = 100, **kwargs: Any) -> Claimed | None:
    return store.claim_next(worker, 60.0, agents=agents, worker_cap=worker_cap, **kwargs)


def finish(store: Store, held: Claimed, status: str = "succeeded") -> None:
    """The holder ends (or re-queues) its run, fenced by its epoch."""
    put = Put("runs", {"run_id": held.run_id, "status": status, "updated_at": 9.0})
    assert store.commit_many([WriteSet((put,), fence=Fence(held.run_id, held.lease_epoch))]) \
        == [None]


def running(store: Store, **where: Any) -> int:
    return len(store.query("runs", {"status": "running", **where}))


# --- what one claim takes ----------------------------------------------------------------


def test_i17_claim_takes_the_highest_priority_first_then_the_oldest(store: Store) -> None:
    submit(store,
           pending("low-old", priority=0, created_at=1.0),
           pending("high-new", priority=5, created_at=3.0),
           pending("high-old", priority=5, created_at=2.0, agent="b"),
           pending("tie-2", priority=1, created_at=4.0),
           pending("tie-1", priority=1, created_at=4.0),
           pending("negative", priority=-3, created_at=0.5))
    order = []
    while (held := claim(store)) is not None:
        order.append(held.run_id)
    assert order == ["high-old", "high-new", "tie-1", "tie-2", "low-old", "negative"]


def test_i17_a_claim_sets_running_and_takes_the_lease(store: Store) -> None:
    submit(store, pending("r1", agent="b", priority=4, created_at=2.5))
    held = claim(store, "worker-7", now=1000.0)
    assert held == Claimed(run_id="r1", lease_epoch=1, agent="b", priority=4, created_at=2.5)
    row = store.get("runs", {"run_id": "r1"})
    assert row is not None
    assert (row["status"], row["lease_epoch"], row["lease_owner"], row["lease_expires_at"],
            row["updated_at"]) == ("running", 1, "worker-7", 1060.0, 1000.0)


def test_i17_claim_takes_only_runs_of_the_listed_agents(store: Store) -> None:
    submit(store, pending("r-c", agent="c", priority=9), pending("r-a", agent="a"))
    assert claim(store, agents=("a", "b")) == Claimed(run_id="r-a", lease_epoch=1, agent="a",
                                                      priority=0, created_at=1.0)
    assert claim(store, agents=("a", "b")) is None
    assert claim(store, agents=()) is None
    assert store.get("runs", {"run_id": "r-c"})["status"] == "pending"  # type: ignore[index]


@pytest.mark.parametrize("status", ["running", "waiting", "suspended", "succeeded", "failed"])
def test_i17_claim_never_takes_a_run_that_is_not_pending(store: Store, status: str) -> None:
    submit(store, pending("r1", status=status))
    assert claim(store) is None
    row = store.get("runs", {"run_id": "r1"})
    assert row is not None and (row["status"], row["lease_epoch"]) == (status, 0)


def test_i17_a_worker_of_a_release_takes_only_that_release_s_runs(store: Store) -> None:
    submit(store, pending("old", release_id="rel-1", priority=9), pending("new", release_id="rel-2"))
    held = claim(store, release_id="rel-2")
    assert held is not None and held.run_id == "new"
    assert claim(store, release_id="rel-2") is None
    held = claim(store)  # no release named: any
    assert held is not None and held.run_id == "old"


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"worker_cap": 0}, "worker_cap"),
    ({"worker_cap": True}, "worker_cap"),
    ({"agent_caps": {"a": 0}}, "agent_caps['a']"),
    ({"agents": "ab"}, "'ab'"),
    ({"agents": ("a", 7)}, "names, got 7"),
    ({"ttl_s": 0.0}, "ttl_s"),
    ({"release_id": ""}, "release_id"),
])
def test_i17_bad_claim_arguments_are_refused_by_name(store: Store, kwargs: dict[str, Any],
                                                     named: str) -> None:
    submit(store, pending("r1"))
    args: dict[str, Any] = {"agents": ("a",), "worker_cap": 1, "ttl_s": 60.0, **kwargs}
    ttl_s = args.pop("ttl_s")
    with pytest.raises(ValueError, match=re.escape(named)):
        store.claim_next("w1", ttl_s, **args)
    assert store.get("runs", {"run_id": "r1"})["status"] == "pending"  # type: ignore[index]


# --- the caps (003 F12) ------------------------------------------------------------------


def test_f12_runtime_cap_1_with_two_agents_claims_only_one(store: Store) -> None:
    submit(store, pending("r-a", agent="a"), pending("r-b", agent="b", created_at=2.0))
    first = claim(store, worker_cap=1)
    assert first is not None and first.run_id == "r-a"
    assert claim(store, worker_cap=1) is None  # agent b has a pending run: the worker is full
    assert running(store, lease_owner="w1") == 1
    other = claim(store, "w2", worker_cap=1)  # the cap is the worker's own
    assert other is not None and other.run_id == "r-b"


def test_f12_same_agent_across_workers_is_limited_by_its_agent_cap(store: Store) -> None:
    submit(store, *(pending(f"a-{i}", agent="a", priority=5, created_at=i) for i in range(4)),
           pending("b-0", agent="b"))
    caps = {"a": 2}
    taken = [claim(store, worker, agent_caps=caps, worker_cap=5) for worker in ("w1", "w2")]
    assert [t.run_id for t in taken if t] == ["a-0", "a-1"]
    third = claim(store, "w3", agent_caps=caps, worker_cap=5)
    assert third is not None and third.run_id == "b-0"  # a is full: its runs are passed over
    assert claim(store, "w4", agent_caps=caps, worker_cap=5) is None
    assert running(store, agent="a") == 2


def test_f12_claims_go_on_after_release(store: Store) -> None:
    submit(store, *(pending(f"r{i}", created_at=i) for i in range(4)))
    caps = {"a": 1}
    held = claim(store, agent_caps=caps, worker_cap=1)
    assert held is not None and held.run_id == "r0"
    assert claim(store, agent_caps=caps, worker_cap=1) is None
    assert claim(store, "w2", agent_caps=caps, worker_cap=1) is None
    finish(store, held, "succeeded")
    second = claim(store, "w2", agent_caps=caps, worker_cap=1)
    assert second is not None and second.run_id == "r1"
    finish(store, second, "pending")  # queued again (an approval answered): claimed again
    again = claim(store, agent_caps=caps, worker_cap=1)
    assert again is not None and (again.run_id, again.lease_epoch) == ("r1", 2)


def test_i17_each_claim_raises_the_epoch_by_one_and_fences_the_old_holder(store: Store) -> None:
    submit(store, pending("r1"))
    first = claim(store)
    assert first is not None and first.lease_epoch == 1
    finish(store, first, "pending")
    second = claim(store, "w2")
    assert second is not None and second.lease_epoch == 2
    stale = WriteSet((Put("runs", {"run_id": "r1", "status": "failed"}),), fence=Fence("r1", 1))
    [outcome] = store.commit_many([stale])
    assert isinstance(outcome, FencedOut)
    row = store.get("runs", {"run_id": "r1"})
    assert row is not None and (row["status"], row["lease_owner"]) == ("running", "w2")


def test_f12_a_failed_read_refuses_the_claim(durable_store_url: str) -> None:
    store = open_store(durable_store_url)
    try:
        submit(store, pending("r1"))
        raw_sql(durable_store_url, "ALTER TABLE runs RENAME TO runs_away")
        with pytest.raises(StoreError, match="claiming a queued run for worker w1"):
            claim(store, agent_caps={"a": 1}, worker_cap=1)
        raw_sql(durable_store_url, "ALTER TABLE runs_away RENAME TO runs")
        row = store.get("runs", {"run_id": "r1"})
        assert row is not None and (row["status"], row["lease_epoch"]) == ("pending", 0)
    finally:
        store.close()


def test_i17_a_read_only_store_refuses_a_claim(durable_store_url: str) -> None:
    writable = open_store(durable_store_url)
    submit(writable, pending("r1"))
    reader = open_store(durable_store_url, read_only=True)
    try:
        with pytest.raises(StoreError) as refused:
            claim(reader)
        assert refused.value.code == "STORE_READ_ONLY"
        assert writable.get("runs", {"run_id": "r1"})["status"] == "pending"  # type: ignore[index]
    finally:
        reader.close()
        writable.close()


# --- concurrency -------------------------------------------------------------------------

RUNS = 200
THREADS = 8
CAPS = {"a": 1, "b": 2}  # "c" has no cap
WORKER_CAP = 1  # two threads share each worker id: its cap is contested too


class Claimer:
    """One claimer in its own thread, with its own store (on SQL backends), claiming until the
    queue is empty; after each claim it counts what is running, then ends the run."""

    def __init__(self, store: Store, worker_id: str) -> None:
        self.store = store
        self.worker_id = worker_id
        self.claimed: list[str] = []
        self.over_cap: list[str] = []
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                held = claim(self.store, self.worker_id, agents=("a", "b", "c"),
                             worker_cap=WORKER_CAP, agent_caps=CAPS)
                if held is None:
                    if not self.store.query("runs", {"status": "pending"}, limit=1):
                        return
                    time.sleep(0.001)  # every slot of the caps is taken: try again
                    continue
                self.claimed.append(held.run_id)
                self._check_caps(held)
                finish(self.store, held)
            raise AssertionError(f"{self.worker_id} did not drain the queue in {DEADLINE_S}s")
        except BaseException as exc:
            self.errors.append(exc)

    def _check_caps(self, held: Claimed) -> None:
        cap = CAPS.get(held.agent)
        now_running = running(self.store, agent=held.agent)
        if cap is not None and now_running > cap:
            self.over_cap.append(f"{now_running} runs of {held.agent} running (cap {cap})")
        mine = running(self.store, lease_owner=self.worker_id)
        if mine > WORKER_CAP:
            self.over_cap.append(f"{self.worker_id} holds {mine} runs (cap {WORKER_CAP})")


@pytest.fixture
def stores(store_url: str) -> Iterator[list[Store]]:
    """One store per thread on the SQL backends; the memory store is shared (it is one)."""
    first = open_store(store_url)
    rest = [first if store_url == "memory://" else open_store(store_url)
            for _ in range(THREADS - 1)]
    yield [first, *rest]
    for s in {id(s): s for s in [first, *rest]}.values():
        s.close()


def test_f12_concurrent_claims_never_exceed_the_caps(stores: list[Store]) -> None:
    agents = ["a", "b", "c"]
    submit(stores[0], *(pending(f"r{i:03d}", agent=agents[i % 3], priority=i % 4,
                                created_at=float(i)) for i in range(RUNS)))
    claimers = [Claimer(s, f"w{i // 2}") for i, s in enumerate(stores)]
    for c in claimers:
        c.thread.start()
    for c in claimers:
        c.thread.join(timeout=DEADLINE_S + 10)
    assert not any(c.thread.is_alive() for c in claimers)
    assert [e for c in claimers for e in c.errors] == []
    assert [v for c in claimers for v in c.over_cap] == []
    taken = Counter(run_id for c in claimers for run_id in c.claimed)
    assert set(taken) == {f"r{i:03d}" for i in range(RUNS)}
    assert [r for r, n in taken.items() if n > 1] == []  # each run claimed exactly once
    assert len(stores[0].query("runs", {"status": "succeeded"})) == RUNS
    assert running(stores[0]) == 0


# --- wake-ups ----------------------------------------------------------------------------

postgres_only = pytest.mark.parametrize("durable_store_url", ["postgres"], indirect=True)


@pytest.fixture
def pg_pair(durable_store_url: str) -> Iterator[tuple[Store, Store]]:
    """A listening store and a committing one (another process's worth of connections)."""
    listening, committing = open_store(durable_store_url), open_store(durable_store_url)
    yield listening, committing
    listening.close()
    committing.close()


@pytest.mark.postgres
@postgres_only
def test_i17_postgres_listener_wakes_when_another_store_queues_a_run(
    pg_pair: tuple[Store, Store],
) -> None:
    listening, committing = pg_pair
    listener = listening.listen()
    try:
        woken: list[bool] = []
        waiter = threading.Thread(target=lambda: woken.append(listener.wait(30.0)))
        waiter.start()
        submit(committing, pending("r1"))
        waiter.join(timeout=DEADLINE_S)
        assert woken == [True]
        assert listener.wait(0.2) is False  # that wake-up was used up
    finally:
        listener.close()


@pytest.mark.postgres
@postgres_only
def test_i17_postgres_listener_times_out_when_nothing_is_queued(
    pg_pair: tuple[Store, Store],
) -> None:
    listening, committing = pg_pair
    listener = listening.listen()
    try:
        assert listener.wait(0.2) is False
        submit(committing, pending("r-running", status="running"))  # not queued: no wake-up
        assert listener.wait(0.2) is False
    finally:
        listener.close()


@pytest.mark.postgres
@postgres_only
def test_i17_a_run_queued_again_wakes_listeners(pg_pair: tuple[Store, Store]) -> None:
    listening, committing = pg_pair
    submit(committing, pending("r1"))
    held = claim(committing)
    assert held is not None
    listener = listening.listen()
    try:
        finish(committing, held, "pending")  # a partial Put of an existing run
        assert listener.wait(5.0) is True
    finally:
        listener.close()


@pytest.mark.postgres
@postgres_only
def test_i17_only_a_committed_write_set_wakes_listeners(pg_pair: tuple[Store, Store]) -> None:
    listening, committing = pg_pair
    submit(committing, pending("held", status="running"))
    listener = listening.listen()
    try:
        stale = WriteSet((pending("r-refused"),), fence=Fence("held", 7))
        assert isinstance(committing.commit_many([stale])[0], FencedOut)
        assert listener.wait(0.2) is False
        outcomes = committing.commit_many([stale, WriteSet((pending("r-ok"),))])
        assert isinstance(outcomes[0], FencedOut) and outcomes[1] is None
        assert listener.wait(5.0) is True
    finally:
        listener.close()


@pytest.mark.postgres
@postgres_only
def test_i17_a_listener_ignores_runs_queued_in_another_schema(
    pg_pair: tuple[Store, Store], tmp_path: Path,
) -> None:
    listening, _ = pg_pair
    other = open_store(fresh_store_url("postgres", tmp_path))
    listener = listening.listen()
    try:
        submit(other, pending("elsewhere"))
        assert listener.wait(0.2) is False
    finally:
        listener.close()
        drop_store(other)


@pytest.mark.postgres
@postgres_only
def test_i17_postgres_claim_passes_over_a_run_whose_fenced_commit_is_in_flight(
    pg_pair: tuple[Store, Store], durable_store_url: str,
) -> None:
    """The claim only *tries* the run's lease lock (a fenced commit of an old holder shares
    it): it takes the next run instead of waiting, and the first one once the commit ends."""
    import psycopg

    _, store = pg_pair
    submit(store, pending("r1", priority=1), pending("r2"))
    base, schema = durable_store_url.split("?schema=")
    with psycopg.connect(base) as committer:  # an old holder, mid-commit
        committer.execute(f'SET search_path TO "{schema}"')
        committer.execute("SELECT pg_advisory_xact_lock_shared(16716, hashtext('r1'))")
        held = claim(store)
        assert held is not None and held.run_id == "r2"
    held = claim(store)
    assert held is not None and held.run_id == "r1"


@pytest.mark.parametrize("store_url", ["memory", "sqlite"], indirect=True)
def test_i17_without_notifications_a_listener_only_times_out(store: Store) -> None:
    listener = store.listen()
    try:
        submit(store, pending("r1"))
        assert listener.wait(0.05) is False
    finally:
        listener.close()


def test_i17_queue_position_counts_the_pending_runs_claimed_before_a_run(store: Store) -> None:
    """`runs show`'s queue place, counted in the store: higher priority first, then older, then
    the run id; only runs of the same release; ``None`` once the run is not pending."""
    submit(store, pending("old", created_at=1.0), pending("new", created_at=2.0),
           pending("urgent", priority=5, created_at=3.0), pending("tie", created_at=2.0),
           pending("other", created_at=0.5, release_id="rel-other"))
    assert {r: store.queue_position(r) for r in ("urgent", "old", "new", "tie")} == {
        "urgent": 0, "old": 1, "new": 2, "tie": 3}  # "new" < "tie" at the same time
    assert store.queue_position("other") == 0  # alone in its release
    held = claim(store)
    assert held is not None and held.run_id == "urgent"
    assert store.queue_position("urgent") is None  # running now
    assert store.queue_position("old") == 0 and store.queue_position("tie") == 2
    assert store.queue_position("no-such-run") is None
