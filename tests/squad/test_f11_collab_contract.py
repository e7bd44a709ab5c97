"""Spec 003 F11: a workflow run's collaboration state — mailbox, handoffs, task board,
blackboard — is kept in every store (memory, a SQLite file, the PostgreSQL server) and passes
one contract suite here: each table round-trips, the board and the handoffs move by
compare-and-set, no JSON text is ever a map key, and a commit that fails is a persistence
failure (``StoreError``) that leaves nothing partial behind — never swallowed.

Writes go through the real ``CommitCoordinator``, fenced by the run's real lease. Failures
are injected at the store edge: a store that adds a write the database refuses to the same
transaction, a closed SQLite store, a PostgreSQL connection terminated by the server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import drop_store, fresh_store_url
from tests.store.test_contract import is_sqlite, migration_rows, raw_sql
from tests.store.test_run_controls_migration import names, store_at

from agentloom.agent.owners import delete_owner
from agentloom.errors import FencedOut, RevisionConflict, StoreError
from agentloom.kernel import Kernel
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.refs import OwnerRef
from agentloom.squad import collab
from agentloom.squad.collab import BoardTask, Collaboration, Handoff, Message
from agentloom.store import Fence, Insert, Put, Store, WriteSet, open_store
from agentloom.store.schema import MIGRATIONS, TABLES

RUN = "wf-run-1"
COLLAB_TABLES = ("workflow_nodes", "mailbox", "handoffs", "task_board", "blackboard",
                 "collab_revisions")
V12 = 12


# --- helpers ----------------------------------------------------------------------------------


def seed_run(store: Store, run_id: str = RUN) -> Fence:
    """A running run of the store, claimed: the fence its driver commits under."""
    [outcome] = store.commit_many([WriteSet((Insert("runs", {
        "run_id": run_id, "status": "running", "lease_epoch": 0, "created_at": 1.0,
        "updated_at": 1.0, "data": {"owner": {"kind": "workflow", "id": "release"}}}),))])
    assert outcome is None
    return Fence(run_id, store.claim_run(run_id, "driver", 60.0))


def state(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every row of the collaboration tables, by primary key."""
    out: dict[str, list[dict[str, Any]]] = {}
    for t in COLLAB_TABLES:
        key = TABLES[t].key
        out[t] = sorted(store.query(t), key=lambda r: tuple(r[k] for k in key))
    return out


# The suite's own fixtures: tests/squad/conftest.py shares the CLI's one-SQLite-file
# ``store_url``, and this suite runs on every backend (tests/conftest.py makes the URLs).
@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


@pytest.fixture
def store(backend_url: str) -> Iterator[Store]:
    s = open_store(backend_url)
    yield s
    s.close()


@pytest.fixture
def coordinator(store: Store) -> Iterator[CommitCoordinator]:
    c = CommitCoordinator(store)
    yield c
    c.close()


@pytest.fixture
def team(store: Store, coordinator: CommitCoordinator) -> Collaboration:
    return Collaboration(store, coordinator.commit, seed_run(store))


class Pairs(Mapping[Any, Any]):
    """A mapping that can hold keys a dict cannot (a dict, a list): how such a key reaches
    ``blackboard_ops`` from a caller's own mapping type."""

    def __init__(self, *pairs: tuple[Any, Any]) -> None:
        self._pairs = pairs

    def __getitem__(self, key: Any) -> Any:
        return next(v for k, v in self._pairs if k == key)

    def __iter__(self) -> Iterator[Any]:
        return iter([k for k, _ in self._pairs])

    def __len__(self) -> int:
        return len(self._pairs)


class PoisonedStore:
    """The real store, except that every commit carries one more write the database refuses,
    after the caller's writes and in the same write set: the transaction fails part-way."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.url = inner.url
        self.durable = inner.durable

    def commit_many(self, batch: Sequence[WriteSet]) -> list[BaseException | None]:
        poison = Insert("mailbox", {"run_id": RUN, "message_id": "poison", "no_such_column": 1})
        return self.inner.commit_many(
            [WriteSet((*ws.ops, poison), ws.fence, label=ws.label) for ws in batch])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# --- round trips --------------------------------------------------------------------------


async def test_f11_mailbox_round_trips_in_posting_order_and_keeps_equal_messages_apart(
    store: Store, team: Collaboration
) -> None:
    body = {"clarify": "which branch?", "ctx": [1, 2.5, None, True, {"é": "ü"}]}
    sent = [await team.post(sender="plan", recipient="build", body=body),
            await team.post(sender="review", recipient="build", body="steer: go slower"),
            await team.post(sender="plan", recipient="build", body=body),  # the same again
            await team.post(sender="build", recipient="plan", body=None)]
    sent += [await team.post(sender="plan", recipient="build", body=i) for i in range(30)]

    to_build = [m for m in sent if m.recipient == "build"]
    assert team.inbox("build") == to_build  # every one, in the order posted
    assert collab.inbox(store, RUN, "build") == to_build
    assert [m.body for m in team.inbox("build")[:3]] == [body, "steer: go slower", body]
    assert len({m.message_id for m in sent}) == len(sent)
    assert team.inbox("plan") == [sent[3]] and sent[3].body is None
    assert all(isinstance(m, Message) and m.run_id == RUN and m.read_at is None for m in sent)
    assert collab.inbox(store, "another-run", "build") == []


async def test_f11_mailbox_read_marks_filter_unread_and_keep_the_first_read_time(
    store: Store, team: Collaboration
) -> None:
    first, second, third = [await team.post(sender="plan", recipient="build", body=n)
                            for n in ("a", "b", "c")]
    assert await team.mark_read([first.message_id, third.message_id], recipient="build") == 2
    assert [m.message_id for m in team.inbox("build", unread_only=True)] == [second.message_id]
    read = {m.message_id: m.read_at for m in team.inbox("build")}
    assert read[first.message_id] is not None and read[second.message_id] is None

    assert await team.mark_read([first.message_id]) == 0  # read already: its time stays
    assert team.inbox("build")[0].read_at == read[first.message_id]
    with pytest.raises(ValueError, match="no message 'nope'"):
        await team.mark_read(["nope"])
    with pytest.raises(ValueError, match="is for 'build', not 'plan'"):
        await team.mark_read([second.message_id], recipient="plan")
    assert [m.message_id for m in team.inbox("build", unread_only=True)] == [second.message_id]


async def test_f11_handoffs_move_pending_accepted_completed_and_refuse_other_transitions(
    store: Store, team: Collaboration
) -> None:
    one = await team.handoff(from_node="plan", to_node="build", payload={"steps": ["a", "b"]})
    two = await team.handoff(from_node="plan", to_node="review", payload="look at it")
    assert one.status == "pending" and one.payload == {"steps": ["a", "b"]}
    assert team.handoffs() == [one, two]

    with pytest.raises(RevisionConflict, match="is pending, not accepted"):
        await team.complete(one.handoff_id, result="too early")
    accepted = await team.accept(one.handoff_id)
    assert accepted.status == "accepted" and accepted.payload == one.payload
    with pytest.raises(RevisionConflict, match="is accepted, not pending"):
        await team.accept(one.handoff_id)
    done = await team.complete(one.handoff_id, result={"artifact": "dist.tar"})
    assert done.status == "completed" and done.result == {"artifact": "dist.tar"}
    assert done.created_at == one.created_at < done.updated_at

    assert team.handoffs() == [done, two]  # read back equal, in the order made
    assert collab.handoffs(store, RUN)[0] == Handoff.of_row(
        store.get("handoffs", {"run_id": RUN, "handoff_id": one.handoff_id}) or {})
    with pytest.raises(ValueError, match="has no handoff"):
        await team.accept("missing")


async def test_f11_of_two_acceptors_that_read_the_same_pending_handoff_one_commits(
    store: Store, coordinator: CommitCoordinator, team: Collaboration
) -> None:
    h = await team.handoff(from_node="plan", to_node="build", payload=None)
    mine = collab.accept(store, RUN, h.handoff_id)  # both read it pending
    theirs = collab.accept(store, RUN, h.handoff_id)
    await coordinator.commit(WriteSet(tuple(mine), team.fence))
    with pytest.raises(RevisionConflict):
        await coordinator.commit(WriteSet(tuple(theirs), team.fence))
    [row] = store.query("handoffs")
    assert row["status"] == "accepted" and row["updated_at"] == mine[-1].row["updated_at"]
    assert [r["revision"] for r in store.query("collab_revisions", {"kind": "handoff"})] == [2]


async def test_f11_task_board_round_trips_and_writes_by_compare_and_set_on_its_revision(
    store: Store, coordinator: CommitCoordinator, team: Collaboration
) -> None:
    b = await team.board_put("t-b", status="open", data={"title": "build"}, expect_revision=0)
    a = await team.board_put("t-a", status="open", data=["x"], expect_revision=0)
    assert (a.revision, b.revision) == (1, 1)
    assert team.board() == [a, b]  # by task id

    with pytest.raises(RevisionConflict, match="is at revision 1, the write expected 0"):
        await team.board_put("t-a", status="open", expect_revision=0)  # it exists already
    claimed = await team.board_put("t-a", status="claimed", assignee="build", data=["x"],
                                   expect_revision=1)
    assert claimed == BoardTask(run_id=RUN, task_id="t-a", status="claimed", assignee="build",
                                revision=2, updated_at=claimed.updated_at, data=["x"])
    with pytest.raises(RevisionConflict, match="is at revision 2, the write expected 1"):
        await team.board_put("t-a", status="claimed", assignee="review", expect_revision=1)

    # two writers read revision 2; the store lets only the first commit
    mine = collab.board_put(store, RUN, "t-a", status="done", assignee="build",
                            expect_revision=2)
    theirs = collab.board_put(store, RUN, "t-a", status="claimed", assignee="review",
                              expect_revision=2)
    await coordinator.commit(WriteSet(tuple(mine), team.fence))
    with pytest.raises(RevisionConflict):
        await coordinator.commit(WriteSet(tuple(theirs), team.fence))
    task = collab.board_task(store, RUN, "t-a")
    assert task is not None and (task.status, task.assignee, task.revision) == ("done",
                                                                                 "build", 3)
    # no expectation: the next revision, whatever the current one is
    assert (await team.board_put("t-b", status="done")).revision == 2
    assert [t.revision for t in team.board()] == [3, 2]
    assert sorted((r["item"], r["revision"]) for r in store.query(
        "collab_revisions", {"run_id": RUN, "kind": "task"})) == [
        ("t-a", 1), ("t-a", 2), ("t-a", 3), ("t-b", 1), ("t-b", 2)]


JSON_LOOKING_KEYS = ['{"a":1}', '{"a": 1}', '{"a":1,"b":2}', '{"b":2,"a":1}', "[1,2]", "[1, 2]",
                     "1", "1.0", "null", "true", '"quoted"', "plain", " plain", "ключ"]


async def test_f11_blackboard_keys_that_look_like_json_stay_plain_distinct_keys(
    store: Store, team: Collaboration
) -> None:
    patches = {key: {"written_under": key, "n": i} for i, key in enumerate(JSON_LOOKING_KEYS)}
    revisions = await team.patch_blackboard(patches)
    assert revisions == dict.fromkeys(JSON_LOOKING_KEYS, 1)
    board = team.blackboard()
    assert board == patches  # each key kept as written: none decoded, none merged
    assert list(board) == sorted(JSON_LOOKING_KEYS)
    assert sorted(r["entry_key"] for r in store.query("blackboard")) == sorted(JSON_LOOKING_KEYS)

    assert await team.patch_blackboard({'{"a":1}': None, "plain": [1, {"k": "v"}]}) == {
        '{"a":1}': 2, "plain": 2}
    after = collab.blackboard(store, RUN)
    assert after['{"a":1}'] is None and after["plain"] == [1, {"k": "v"}]
    assert after['{"a": 1}'] == patches['{"a": 1}']  # its look-alike untouched


@pytest.mark.parametrize("patches", [
    Pairs(({"a": 1}, "x")), Pairs((["a"], "x")), {("a", 1): "x"}, {1: "x"}, {None: "x"},
    {b"k": "x"}, {"": "x"}, {"ok": "x", 2: "y"},
], ids=["dict", "list", "tuple", "int", "none", "bytes", "empty", "one-bad-of-two"])
async def test_f11_a_blackboard_key_that_is_not_a_plain_string_is_refused_and_nothing_written(
    store: Store, team: Collaboration, patches: Mapping[Any, Any]
) -> None:
    with pytest.raises(ValueError, match=r"blackboard key .* is refused"):
        await team.patch_blackboard(patches)
    assert team.blackboard() == {} and store.query("collab_revisions") == []


@pytest.mark.parametrize("value", [{1: "a"}, {"ok": {("t",): 1}}, {1, 2}, float("nan"),
                                   object()], ids=["int-key", "nested-tuple-key", "set",
                                                   "nan", "object"])
async def test_f11_a_value_that_is_not_json_is_refused_before_anything_is_written(
    store: Store, team: Collaboration, value: Any
) -> None:
    with pytest.raises(ValueError):
        await team.patch_blackboard({"k": value})
    with pytest.raises(ValueError):
        await team.post(sender="a", recipient="b", body=value)
    with pytest.raises(ValueError):
        await team.board_put("t", status="open", data=value)
    with pytest.raises(ValueError):
        await team.handoff(from_node="a", to_node="b", payload=value)
    assert all(rows == [] for rows in state(store).values())


async def test_f11_a_blackboard_patch_that_loses_a_revision_race_is_made_again(
    store: Store, coordinator: CommitCoordinator, team: Collaboration
) -> None:
    await team.patch_blackboard({"k": "first"})
    raced: list[bool] = []

    async def commit_after_a_rival(ws: WriteSet) -> None:
        if not raced:  # another writer commits the same key between our read and commit
            raced.append(True)
            await coordinator.commit(WriteSet(tuple(collab.blackboard_ops(
                store, RUN, {"k": "rival"})), team.fence))
        await coordinator.commit(ws)

    racer = Collaboration(store, commit_after_a_rival, team.fence)
    assert await racer.patch_blackboard({"k": "mine"}) == {"k": 3}
    assert team.blackboard() == {"k": "mine"}
    assert sorted(r["revision"] for r in store.query("collab_revisions", {"item": "k"})) == [
        1, 2, 3]


async def test_f11_workflow_node_rows_round_trip_by_run_in_update_order(
    store: Store, coordinator: CommitCoordinator, team: Collaboration
) -> None:
    rows = [{"run_id": RUN, "node": node, "attempt": attempt, "status": status,
             "operation_id": op, "created_at": 10.0 + i, "updated_at": 20.0 + i,
             "data": {"output": f"{node} out", "unknown": []}}
            for i, (node, attempt, status, op) in enumerate([
                ("plan", 1, "succeeded", "op-1"), ("build", 1, "failed", "op-2"),
                ("build", 2, "running", None), ("approve", 1, "waiting", None)])]
    await coordinator.commit(WriteSet(tuple(Insert("workflow_nodes", r) for r in rows),
                                      team.fence))
    assert store.query("workflow_nodes", {"run_id": RUN}, order_by=("updated_at",)) == rows
    await coordinator.commit(WriteSet((Put("workflow_nodes", {
        **rows[2], "status": "succeeded", "updated_at": 99.0}),), team.fence))
    latest = store.query("workflow_nodes", {"run_id": RUN}, order_by=("updated_at",))[-1]
    assert (latest["node"], latest["attempt"], latest["status"]) == ("build", 2, "succeeded")
    with pytest.raises(RevisionConflict):  # one row per activation
        await coordinator.commit(WriteSet((Insert("workflow_nodes", rows[0]),), team.fence))


# --- failures -------------------------------------------------------------------------------


Write = Callable[[Collaboration], Awaitable[Any]]
WRITES: dict[str, Write] = {
    "post": lambda c: c.post(sender="plan", recipient="build", body={"x": 1}),
    "mark_read": lambda c: c.mark_read([m.message_id for m in c.inbox("build")]),
    "handoff": lambda c: c.handoff(from_node="plan", to_node="build", payload=[1]),
    "accept": lambda c: c.accept(c.handoffs()[0].handoff_id),
    "board_put": lambda c: c.board_put("t-1", status="claimed", assignee="b", expect_revision=1),
    "patch_blackboard": lambda c: c.patch_blackboard({"k": "new", '{"k":1}': 2}),
}


async def _some_state(team: Collaboration) -> None:
    await team.post(sender="plan", recipient="build", body="hello")
    await team.handoff(from_node="plan", to_node="build", payload="p")
    await team.board_put("t-1", status="open", expect_revision=0)
    await team.patch_blackboard({"k": "old"})


@pytest.mark.parametrize("write", list(WRITES))
async def test_f11_a_failed_commit_is_a_persistence_failure_and_leaves_nothing_partial(
    store: Store, team: Collaboration, write: str
) -> None:
    await _some_state(team)
    before = state(store)
    poisoned = PoisonedStore(store)
    failing = CommitCoordinator(poisoned)
    try:
        broken = Collaboration(poisoned, failing.commit, team.fence)
        with pytest.raises(StoreError) as failed:
            await WRITES[write](broken)
    finally:
        failing.close()
    assert type(failed.value) is StoreError and failed.value.code == "STORE_FAILED"
    assert state(store) == before  # not one row of the write, nor of the poison
    await WRITES[write](team)  # the same write on the healthy store commits
    assert state(store) != before


async def test_f11_a_commit_that_raises_anything_else_is_a_persistence_failure_not_swallowed(
    store: Store, team: Collaboration
) -> None:
    async def lost_connection(ws: WriteSet) -> None:
        raise ConnectionResetError("the database went away")

    broken = Collaboration(store, lost_connection, team.fence)
    with pytest.raises(StoreError, match=r"mailbox post of run .* was not persisted: "
                                         r"ConnectionResetError") as failed:
        await broken.post(sender="a", recipient="b", body="x")
    assert isinstance(failed.value.__cause__, ConnectionResetError)
    assert state(store)["mailbox"] == []


async def test_f11_a_writer_that_lost_the_lease_commits_nothing(
    store: Store, team: Collaboration
) -> None:
    await _some_state(team)
    before = state(store)
    store.claim_run(RUN, "another-driver", 60.0)  # a new epoch fences the old writer out
    for write in WRITES.values():
        with pytest.raises(FencedOut):
            await write(team)
    assert state(store) == before


async def test_f11_a_store_that_lost_its_database_is_a_persistence_failure(
    durable_url: str,
) -> None:
    store = open_store(durable_url)
    coordinator = CommitCoordinator(store)
    team = Collaboration(store, coordinator.commit, seed_run(store))
    try:
        await team.post(sender="plan", recipient="build", body="kept")
        if is_sqlite(durable_url):
            store.close()  # the file's connections are gone
        else:  # the server ends the store's write connection
            pid = store._writer.info.backend_pid  # type: ignore[attr-defined]
            raw_sql(durable_url, f"SELECT pg_terminate_backend({int(pid)})")
        with pytest.raises(StoreError) as failed:
            await team.post(sender="plan", recipient="build", body="lost")
        assert type(failed.value) is StoreError
    finally:
        coordinator.close()
        store.close()
    reopened = open_store(durable_url)
    try:
        assert [m.body for m in collab.inbox(reopened, RUN, "build")] == ["kept"]
    finally:
        reopened.close()


# --- durability and migration -------------------------------------------------------------


async def test_f11_after_reopening_the_store_work_goes_on_where_it_stopped(
    durable_url: str,
) -> None:
    first = open_store(durable_url)
    coordinator = CommitCoordinator(first)
    team = Collaboration(first, coordinator.commit, seed_run(first))
    try:
        await _some_state(team)
        await team.post(sender="review", recipient="build", body="hello")  # equal text again
        before = state(first)
    finally:
        coordinator.close()
        first.close()

    store = open_store(durable_url)  # another process takes the run over
    coordinator = CommitCoordinator(store)
    try:
        assert state(store) == before
        team = Collaboration(store, coordinator.commit,
                             Fence(RUN, store.claim_run(RUN, "next-driver", 60.0)))
        mail = team.inbox("build", unread_only=True)
        assert [(m.sender, m.body) for m in mail] == [("plan", "hello"), ("review", "hello")]
        assert await team.mark_read([m.message_id for m in mail]) == 2
        [h] = team.handoffs()
        assert (await team.accept(h.handoff_id)).status == "accepted"
        [task] = team.board()
        claimed = await team.board_put("t-1", status="claimed", assignee="build",
                                       expect_revision=task.revision)
        assert claimed.revision == 2
        assert await team.patch_blackboard({"k": "new"}) == {"k": 2}
        assert team.blackboard() == {"k": "new"}
    finally:
        coordinator.close()
        store.close()


async def test_f11_a_v11_store_migrates_to_v12_with_the_collaboration_tables(
    durable_url: str,
) -> None:
    url = durable_url
    assert len(MIGRATIONS) >= V12 and "mailbox" in MIGRATIONS[V12 - 1].summary
    store_at(url, V12 - 1,
             "INSERT INTO runs (run_id, status, lease_epoch, created_at, updated_at, data) "
             f"VALUES ('{RUN}', 'running', 0, 1.0, 1.0, '{{\"kept\":true}}')")
    assert not {"mailbox", "workflow_nodes"} & names(url)

    store = open_store(url)
    coordinator = CommitCoordinator(store)
    try:
        assert store.schema_version() >= V12  # type: ignore[attr-defined]
        assert [r[0] for r in migration_rows(url)] == list(range(1, len(MIGRATIONS) + 1))
        assert {*COLLAB_TABLES, "workflow_nodes_run", "mailbox_recipient"} <= names(url)
        run = store.get("runs", {"run_id": RUN})
        assert run is not None and run["data"] == {"kept": True}  # the old rows stay

        team = Collaboration(store, coordinator.commit,
                             Fence(RUN, store.claim_run(RUN, "driver", 60.0)))
        await _some_state(team)
        assert [m.body for m in team.inbox("build")] == ["hello"]
        assert team.blackboard() == {"k": "old"}
    finally:
        coordinator.close()
        store.close()


async def test_f11_deleting_a_workflow_owner_deletes_its_runs_collaboration_state_only(
    backend_url: str, tmp_path: Path
) -> None:
    kernel = Kernel(backend_url, workspace_root=tmp_path / "ws", sandbox_backend="none")
    store = kernel.store
    try:
        teams = {}
        for owner in ("release", "other"):
            run_id = f"{owner}-run"
            [outcome] = store.commit_many([WriteSet((Insert("runs", {
                "run_id": run_id, "status": "succeeded", "lease_epoch": 0, "created_at": 1.0,
                "updated_at": 1.0, "data": {"owner": {"kind": "workflow", "id": owner}}}),))])
            assert outcome is None
            team = teams[owner] = Collaboration(store, kernel.coordinator.commit,
                                                run_id=run_id)
            await _some_state(team)
            await kernel.coordinator.commit(WriteSet((Insert("workflow_nodes", {
                "run_id": run_id, "node": "plan", "attempt": 1, "status": "succeeded",
                "operation_id": None, "created_at": 1.0, "updated_at": 2.0, "data": {}}),)))
        others = {t: [r for r in rows if r["run_id"] == "other-run"]
                  for t, rows in state(store).items()}
        assert all(others.values())  # the other owner has rows in every table

        summary = await delete_owner(kernel, OwnerRef(kind="workflow", id="release"))

        assert summary.state == "deleted"
        assert {t: summary.rows.get(t) for t in COLLAB_TABLES} == {
            "workflow_nodes": 1, "mailbox": 1, "handoffs": 1, "task_board": 1,
            "blackboard": 1, "collab_revisions": 2}
        assert state(store) == others  # nothing of the deleted owner, all of the other
    finally:
        kernel.close()


async def test_f11_concurrent_posts_from_many_tasks_are_all_kept(
    store: Store, team: Collaboration
) -> None:
    posted = await asyncio.gather(*[team.post(sender=f"n{i % 4}", recipient="join", body="same")
                                    for i in range(40)])
    assert {m.message_id for m in team.inbox("join")} == {m.message_id for m in posted}
