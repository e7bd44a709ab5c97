"""Deleting an agent or workflow owner and everything of it (000 §7.4)::

    tombstone (deleting) ─► stop its running runs, wait for them to end ─► revoke + folders
      │ new runs / sessions refused: OWNER_DELETED        (an unconfirmed revocation stops here)
      ▼
    its blobs no one else refers to ─► its rows, table by table ─► tombstone (deleted, counts)

The tombstone is committed first, so from then on no run or session of the owner starts
(``store.owners.check_owner``). Its running runs get the stop control ``runs stop`` sends;
the process that drives each one cancels it and ends it (its sandbox processes killed, its
run folder cleaned). A run nobody drives any more is claimed, which fences out any writer it
may still have. Then the owner's processes are revoked and its folders deleted
(``RunCleanup.delete_owner``) and its rows deleted: sessions and turns, runs, operations,
attempts, hook invocations, context records, results, run controls, cleanup jobs, a workflow
run's node rows and collaboration state (mailbox, handoffs, task board, blackboard), workspace
scopes, its file root. Blobs are content-addressed and may be shared: a blob goes only when no
row of another owner refers to it. Nothing else of another owner is written: an agent's
content derived into another owner's run (a workflow's agent nodes) is deleted or replaced by
a deletion marker there, and such a run still running is stopped first (``agent.derived``);
a workflow's runs keep the rows of the agents it called.

A deletion that cannot finish — a run still driven by a live process after ``wait_s``, a
revocation the sandbox cannot confirm, a crash — leaves the tombstone ``deleting``: new runs
stay refused, and calling it again carries on where it stopped. Once ``deleted``, a call is a
no-op that says so (``already_deleted``).

Owns: the order of owner deletion and which rows are the owner's. Does not own: the tombstone
(``store.owners``), the folders (``workspace.cleanup``), stopping a run (``Runtime.stop`` /
the stop control).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from agentloom.agent.controls import STOP, record_control
from agentloom.agent.derived import add_counts, apart, follow_derivation, kept_rows, running_runs
from agentloom.agent.leases import is_interrupted
from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.kernel import Kernel
from agentloom.refs import OwnerRef
from agentloom.store.artifacts import TABLE as ARTIFACTS_TABLE
from agentloom.store.cleanup import has_cleanup_job
from agentloom.store.owners import owner_label, tombstone, tombstone_op
from agentloom.store.ports import Delete, WriteOp, WriteSet
from agentloom.store.records import RunRecord, get_run, runs
from agentloom.store.schema import table
from agentloom.store.scopes import file_root_id, scopes_where
from agentloom.store.sessions import owner_sessions, session_turns
from agentloom.store.skills import all_version_data

__all__ = ["OwnerDeletion", "OwnerDeletionPending", "delete_owner", "owner_runs",
           "parse_owner", "plan_owner_rows"]

WAIT_S = 60.0
"""How long ``delete_owner`` waits for the owner's running runs to end after stopping them."""
POLL_S = 0.1
OPS_PER_COMMIT = 500
MAX_ROUNDS = 5  # rows that appear while deleting (a run that had passed the check) are found again
STOP_REASON = "owner deleted"

# The rows of an owner, in the order they are deleted: what refers to a row goes before it.
_ARTIFACTS = (ARTIFACTS_TABLE,)  # issue 37 (a workflow's grants)
ROW_TABLES = ("approvals", "attempts", "hook_invocations", "results", "context_records",
              "operations", "run_controls", "cleanup_jobs", "revocations", *_ARTIFACTS,
              "workflow_nodes", "mailbox", "handoffs", "task_board", "blackboard", "collab_revisions",
              "workspace_scopes", "session_turns", "sessions", "runs", "file_roots")
BLOB_TABLES = ("blob_chunks", "blobs")
# Tables whose JSON rows may refer to a blob ({"blob": {"digest": …}}), and the column.
_JSON_REFERRERS = {"runs": "data", "operations": "data", "attempts": "data", "approvals": "data",
                   "hook_invocations": "data", "context_records": "data",
                   "session_turns": "data", "run_controls": "data", "sessions": "data",
                   "workflow_nodes": "data", "mailbox": "data", "handoffs": "data",
                   "task_board": "data", "blackboard": "data"}


class OwnerDeletionPending(AgentLoomError):
    """An owner deletion stopped before the end (``OWNER_DELETION_PENDING``): a run still
    driven by a live process, or processes the sandbox cannot confirm gone. The tombstone
    stays, so new runs stay refused; call it again to carry on."""

    default_code = "OWNER_DELETION_PENDING"
    default_category: ErrorCategory = "conflict"


def parse_owner(text: str, *, space_id: str = "default") -> OwnerRef:
    """``kind:id`` (``agent:main``, ``workflow:release``) as an ``OwnerRef``.

    Raises:
        ValueError: not ``agent:ID`` or ``workflow:ID`` (a bare id is refused: deleting is
            never guessed).
    """
    kind, sep, ident = text.partition(":")
    if not sep or kind not in ("agent", "workflow") or not ident.strip():
        hint = f" (for the agent, write agent:{text})" if not sep and text.strip() else ""
        raise ValueError(f"owner {text!r} is not KIND:ID with KIND agent or workflow, e.g. "
                         f"agent:main or workflow:release{hint}")
    return OwnerRef(kind="agent" if kind == "agent" else "workflow", id=ident,
                    space_id=space_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerDeletion:
    """What deleting an owner did (or, ``dry_run``, would do): the rows deleted per table, the
    blobs deleted and the shared ones kept, the runs stopped, the scopes whose folders went.
    ``state`` is ``deleted``, ``already_deleted`` (a second call: nothing done) or
    ``would_delete`` (a dry run: nothing done). ``derived``: the rows of other owners' runs
    whose copies of an agent's content were tombstoned, per table (``agent.derived``)."""

    owner: OwnerRef
    state: Literal["deleted", "already_deleted", "would_delete"]
    rows: Mapping[str, int] = field(default_factory=dict)
    blobs_kept: int = 0
    stopped: tuple[str, ...] = ()
    running: tuple[str, ...] = ()
    scopes: int = 0
    derived: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The summary as ``agentloom owners delete --json`` prints it."""
        return {"owner": owner_label(self.owner), "state": self.state,
                "rows": dict(self.rows), "total_rows": sum(self.rows.values()),
                "blobs_kept": self.blobs_kept, "stopped": list(self.stopped),
                "running": list(self.running), "scopes": self.scopes,
                "derived": dict(self.derived), "total_derived": sum(self.derived.values())}


# -- which rows are the owner's --------------------------------------------------------------


def _run_owner(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kind, id)`` of a run's owner (from its ``data``): recorded on it, else the agent it
    ran."""
    owner = data.get("owner") if isinstance(data, Mapping) else None
    if isinstance(owner, Mapping) and owner.get("kind") and owner.get("id"):
        return str(owner["kind"]), str(owner["id"])
    agent = data.get("agent") if isinstance(data, Mapping) else None
    return ("agent", str(agent)) if agent else None


def owner_runs(kernel: Kernel, owner: OwnerRef) -> list[RunRecord]:
    """The owner's runs, oldest first: recorded with it as owner, or a turn of one of its
    sessions. (A scope of the owner inside another owner's run — a workflow calling an
    agent — does not make that run the owner's: only the scope is.)"""
    store = kernel.store
    ids = {r.run_id for r in runs(store, lenient=True)
           if _run_owner(r.data) == (owner.kind, owner.id)}
    for session in owner_sessions(store, owner):
        ids |= {t.run_id for t in session_turns(store, session.session_id)}
    found = [get_run(store, run_id, lenient=True) for run_id in ids]
    return sorted((r for r in found if r is not None), key=lambda r: (r.created_at, r.run_id))


def _blob_refs(value: Any) -> Iterator[str]:
    """The digests of every ``{"blob": {"digest": …}}`` inside a JSON value."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, Mapping):
            ref = item.get("blob")
            if isinstance(ref, Mapping) and isinstance(ref.get("digest"), str):
                yield ref["digest"]
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)


def _row_blobs(table_name: str, row: Mapping[str, Any]) -> Iterable[str]:
    if table_name in ("results", *_ARTIFACTS):
        return [row["digest"]] if row.get("digest") and not row.get("location") else []
    column = _JSON_REFERRERS.get(table_name)
    return _blob_refs(row.get(column)) if column else []


_Found = tuple[tuple[Any, ...], tuple[str, ...]]
"""A row of the owner as the plan needs it: its key and the blobs it refers to."""


def _found(table_name: str, row: Mapping[str, Any]) -> _Found:
    """``row`` (at least its key columns and the column that may refer to blobs) found."""
    return (tuple(row.get(c) for c in table(table_name).key),
            tuple(_row_blobs(table_name, row)))


@dataclass(slots=True)
class _Plan:
    """The owner's rows found in one pass: the deletes (in order) and the counts."""

    deletes: list[Delete] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    blobs_kept: int = 0

    def add(self, table_name: str, where: Mapping[str, Any], count: int) -> None:
        if count:
            self.deletes.append(Delete(table_name, dict(where)))
            self.rows[table_name] = self.rows.get(table_name, 0) + count


def plan_owner_rows(kernel: Kernel, owner: OwnerRef) -> _Plan:
    """Every row of ``owner`` in every table, as deletes in a safe order: its blobs no other
    row refers to first, then what refers to a row before that row. Reads only."""
    store = kernel.store
    run_ids = sorted(r.run_id for r in owner_runs(kernel, owner))
    mine: dict[str, list[tuple[dict[str, Any], list[_Found]]]] = {t: [] for t in ROW_TABLES}
    owner_where = {"owner_kind": owner.kind, "owner_id": owner.id}
    sessions = owner_sessions(store, owner)
    op_ids: list[str] = []
    for run_id in run_ids:
        # a workflow's run keeps the rows of the agents it called (000 §7.4: agent.derived)
        kept = kept_rows(kernel, run_id, owner) if owner.kind == "workflow" else {}
        for t in ("results", "context_records", "run_controls", "cleanup_jobs", "approvals",
                  "revocations", *_ARTIFACTS, "workflow_nodes", "mailbox", "handoffs",
                  "task_board", "blackboard", "collab_revisions", "operations"):
            for where, rows in apart(t, {"run_id": run_id}, store.query(t, {"run_id": run_id}),
                                     kept.get(t)):
                mine[t].append((where, [_found(t, row) for row in rows]))
                op_ids += [row["operation_id"] for row in rows] if t == "operations" else []
        run = get_run(store, run_id, lenient=True)
        mine["runs"].append(({"run_id": run_id}, [] if run is None else [
            _found("runs", {"run_id": run.run_id, "data": run.data})]))
    for op_id in op_ids:
        for t in ("attempts", "hook_invocations"):
            mine[t].append(({"operation_id": op_id},
                            [_found(t, row) for row in store.query(t, {"operation_id": op_id})]))
    # its scopes, by owner: a scope of another owner in one of its runs is that owner's
    scopes = scopes_where(store, owner_kind=owner.kind, owner_id=owner.id)
    mine["workspace_scopes"].append((owner_where, [
        _found("workspace_scopes", {"workspace_scope_id": s.workspace_scope_id})
        for s in scopes]))
    for session in sessions:
        turns = {"session_id": session.session_id}
        mine["session_turns"].append((turns, [_found("session_turns", t.to_row())
                                              for t in session_turns(store, session.session_id)]))
    mine["sessions"].append((owner_where, [_found("sessions", s.to_row()) for s in sessions]))
    root = file_root_id(store, owner.kind, owner.id)
    mine["file_roots"].append((owner_where, [] if root is None else [
        _found("file_roots", owner_where)]))

    plan = _Plan()
    seen: dict[str, set[tuple[Any, ...]]] = {t: set() for t in ROW_TABLES}
    candidates: set[str] = set()
    for t in ROW_TABLES:
        for where, found in mine[t]:
            fresh = 0
            for row_key, blobs in found:
                if row_key not in seen[t]:
                    seen[t].add(row_key)
                    fresh += 1
                candidates.update(blobs)
            plan.add(t, where, fresh)
    shared = _referenced_elsewhere(kernel, candidates, seen)
    plan.blobs_kept = len(candidates & shared)
    blob_deletes: list[Delete] = []
    blob_counts: dict[str, int] = {}
    for digest in sorted(candidates - shared):
        for t in BLOB_TABLES:
            n = len(store.query(t, {"digest": digest}))
            if n:
                blob_deletes.append(Delete(t, {"digest": digest}))
                blob_counts[t] = blob_counts.get(t, 0) + n
    plan.deletes[:0] = blob_deletes
    plan.rows = {**blob_counts, **plan.rows}
    return plan


def _referenced_elsewhere(kernel: Kernel, digests: set[str],
                          mine: Mapping[str, set[tuple[Any, ...]]]) -> set[str]:
    """The ``digests`` a row that is not the owner's refers to (such a blob stays)."""
    if not digests:
        return set()
    store = kernel.store
    found: set[str] = set()
    for t in ("results", *_ARTIFACTS, *_JSON_REFERRERS):
        key_columns = table(t).key
        for row in store.query(t):
            if tuple(row.get(c) for c in key_columns) in mine.get(t, set()):
                continue
            found.update(d for d in _row_blobs(t, row) if d in digests)
    # an imported Skill's files are blobs too, owned by no run: identical text stays
    for version in all_version_data(store):
        found.update(f["sha256"] for f in version.get("files", ())
                     if f.get("sha256") in digests)
    return found


# -- deleting --------------------------------------------------------------------------------


Stopper = Callable[[str, str], Awaitable[None]]


async def delete_owner(kernel: Kernel, owner: OwnerRef, *, stop: Stopper | None = None,
                       wait_s: float = WAIT_S, dry_run: bool = False) -> OwnerDeletion:
    """Delete ``owner`` and everything of it, in every table of the store (module docstring).

    ``stop(run_id, reason)`` stops a running run (``Runtime.stop``; default: the stop control,
    as ``agentloom runs stop`` sends it). ``dry_run`` changes nothing and says what would go.

    Raises:
        OwnerDeletionPending: a run is still driven by a live process after ``wait_s``, or
            the sandbox cannot confirm its processes are gone; the tombstone stays and new
            runs stay refused — call again to carry on.
    """
    store = kernel.store
    stone = tombstone(store, owner)
    if stone is not None and stone["state"] == "deleted":
        return OwnerDeletion(owner=owner, state="already_deleted")
    if dry_run:
        plan = plan_owner_rows(kernel, owner)
        would = await follow_derivation(kernel, owner, own=[r.run_id for r in owner_runs(
            kernel, owner)], elsewhere=partial(_referenced_elsewhere, kernel), dry_run=True)
        return OwnerDeletion(owner=owner, state="would_delete",
                             rows=add_counts(plan.rows, would.rows),
                             blobs_kept=plan.blobs_kept + would.blobs_kept,
                             running=_running_runs(kernel, owner), derived=would.derived)
    created = float(stone["created_at"]) if stone is not None else None
    await kernel.coordinator.commit(WriteSet((tombstone_op(owner, "deleting",
                                                           created_at=created),)))
    rows: dict[str, int] = {}
    kept = 0
    stopped: list[str] = []
    scopes: set[str] = set()
    derived: dict[str, int] = {}
    for _ in range(MAX_ROUNDS):  # again while a run that passed the check before appears
        stopped += await _stop_runs(kernel, owner, stop, wait_s)
        try:
            scopes.update(await kernel.environment.cleanup.delete_owner(owner))
        except RuntimeError as exc:  # an unconfirmed revocation: nothing more is deleted
            raise OwnerDeletionPending(f"{owner_label(owner)}: {exc}; run the deletion again "
                                       "once its processes are gone") from exc
        # its content in other owners' runs first: found from its calls there, which go now
        followed = await follow_derivation(kernel, owner, own=[r.run_id for r in owner_runs(
            kernel, owner)], elsewhere=partial(_referenced_elsewhere, kernel))
        derived, rows = add_counts(derived, followed.derived), add_counts(rows, followed.rows)
        plan = plan_owner_rows(kernel, owner)
        kept = max(kept, plan.blobs_kept + followed.blobs_kept)
        if not plan.deletes and not followed.runs:
            break
        for start in range(0, len(plan.deletes), OPS_PER_COMMIT):
            batch: tuple[WriteOp, ...] = tuple(plan.deletes[start:start + OPS_PER_COMMIT])
            await kernel.coordinator.commit(WriteSet(batch, label="owner.delete"))
        rows = add_counts(rows, plan.rows)
    else:
        raise OwnerDeletionPending(f"{owner_label(owner)}: new rows kept appearing while it "
                                   "was deleted; run the deletion again")
    summary = OwnerDeletion(owner=owner, state="deleted", rows=rows, blobs_kept=kept,
                            stopped=tuple(stopped), scopes=len(scopes), derived=derived)
    await kernel.coordinator.commit(WriteSet((tombstone_op(
        owner, "deleted", created_at=created or time.time(),
        data={"rows": rows, "blobs_kept": kept, "stopped": list(stopped),
              "scopes": len(scopes), "derived": derived}),)))
    return summary



def _running_runs(kernel: Kernel, owner: OwnerRef) -> tuple[str, ...]:
    """Its running runs, and those of others it worked in: all are stopped before it goes."""
    return running_runs(kernel, owner, owner_runs(kernel, owner))


async def _stop_runs(kernel: Kernel, owner: OwnerRef, stop: Stopper | None,
                     wait_s: float) -> tuple[str, ...]:
    """Stop the owner's running runs and wait until each has ended (its run-end cleanup
    recorded) or nobody drives it (then it is claimed: any stale writer is fenced out)."""
    store = kernel.store
    running = _running_runs(kernel, owner)
    for run_id in running:
        if stop is not None:
            await stop(run_id, STOP_REASON)
        else:
            await record_control(kernel.coordinator, run_id, STOP, {"reason": STOP_REASON})
    deadline = time.monotonic() + wait_s
    waiting = set(running)
    while waiting:
        for run_id in sorted(waiting):
            run = get_run(store, run_id, lenient=True)
            if run is None or (run.status != "running" and has_cleanup_job(store, run_id)):
                waiting.discard(run_id)
            elif run.status == "running" and is_interrupted(run, store.now()):
                kernel.claim(run_id)  # a new epoch: a writer it had left commits nothing more
                waiting.discard(run_id)
        if not waiting:
            break
        if time.monotonic() >= deadline:
            if not any(_running(kernel, run_id) for run_id in waiting):
                break  # they ended; a cleanup that never got recorded is no writer
            raise OwnerDeletionPending(
                f"{owner_label(owner)}: run(s) {', '.join(sorted(waiting))} still driven by a "
                f"live process {wait_s:g}s after the stop; nothing of the owner was deleted "
                "yet and its new runs stay refused; run the deletion again")
        await asyncio.sleep(POLL_S)
    return tuple(running)


def _running(kernel: Kernel, run_id: str) -> bool:
    run = get_run(kernel.store, run_id, lenient=True)
    return run is not None and run.status == "running"
