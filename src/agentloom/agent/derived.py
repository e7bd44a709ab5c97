"""Owner deletion follows what was derived (000 §7.4, §9.14; issue 37 point 5)::

    the runs of other owners an agent worked in (a workflow's agent nodes), found by its calls
    (``request.owner_ref``) and the delegations to it (``workflow.agent.<id>``), never by the
    run's owner — so they are found even once that run's own row is gone
      │
      ├─ its own rows there ─────────────► deleted: its model and tool calls with their
      │                                    attempts, hook invocations, approvals, results and
      │                                    context records
      ├─ its texts (what its nodes and     every other row of the run (every table with a
      │  model calls answered) ──────────► run_id, and the attempts and hook invocations of
      │                                    its operations): each copy in a JSON string is
      │                                    replaced by ``[deleted: agent:ID]``, a blob holding
      │                                    one by a text block of that marker; a result row
      │                                    naming such a blob is deleted; its node records
      │                                    also get ``data.deleted = {"owner": "agent:ID"}``
      ├─ artifacts with source_owner ────► rows deleted, their copies in the run's inputs
      │  ``agent:ID``                      folders removed
      └─ blobs only those rows named ────► deleted, in the same write set as the rewrites
                                           (one per run: a crash leaves a run whole or done)

The run's own records and structure stay: its run row, every node record (name, attempt,
status, operation id), the delegation operations (their results now the marker), another
agent's rows (a copy of the deleted agent's text inside them is replaced all the same). A
copy shorter than ``MIN_COPY`` characters is replaced only where it is a whole string (a
short answer such as ``ok`` would otherwise rewrite unrelated text).

Deleting a workflow keeps its agents' own records (``kept_rows``): the rows of an agent's
calls inside the workflow's runs stay when the run row goes; they stay reachable by their
operations' ``request.owner_ref`` (and ``run_id``), which is how deleting that agent later
finds them.

A run of another owner that is still running is stopped first, as the owner's own runs are
(``running_runs``): its driver holds the agent's answers in memory for its next nodes.

Owns: which rows of other owners' runs hold an agent's content, and what they become. Does
not own: the order of owner deletion, the owner's own runs and blobs shared with other rows
(``agent.owners``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloom.agent._derived_copies import (
    MIN_COPY,
    answered_texts,
    blobs_of,
    holds,
    posted_texts,
    scrub,
)
from agentloom.context.blobs import load_blob
from agentloom.kernel import Kernel
from agentloom.refs import OwnerRef
from agentloom.store.artifacts import TABLE as ARTIFACTS_TABLE
from agentloom.store.owners import owner_label
from agentloom.store.ports import Delete, Put, WriteOp, WriteSet
from agentloom.store.records import RunRecord, get_run
from agentloom.store.run_rows import context_record_rows, every_row, operation_rows
from agentloom.store.schema import table
from agentloom.workspace.inputs import inputs_folder

__all__ = ["AGENT_NODE_PREFIX", "MIN_COPY", "DerivedDeletion", "RunScrub", "add_counts", "apart",
           "deletion_marker", "derived_runs", "follow_derivation", "kept_rows", "plan_run",
           "running_runs"]

AGENT_NODE_PREFIX = "workflow.agent."
"""The capability an agent node calls (``squad.nodes.AGENT_NODE_PREFIX``; squad is a layer
above and cannot be imported here — a test pins that the two agree)."""
ARTIFACTS = ARTIFACTS_TABLE
_BY_OPERATION = ("attempts", "hook_invocations", "approvals", "results")

Elsewhere = Callable[[set[str], Mapping[str, set[tuple[Any, ...]]]], set[str]]
"""``(digests, rows not to count) -> the digests another row refers to`` (``agent.owners``)."""


def deletion_marker(owner: OwnerRef) -> str:
    """What replaces a deleted owner's text: names the owner, holds none of its content."""
    return f"[deleted: {owner_label(owner)}]"


def _ref_of(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kind, id)`` of the owner an operation row was called for (``request.owner_ref``)."""
    data = row.get("data")
    request = data.get("request") if isinstance(data, Mapping) else None
    ref = request.get("owner_ref") if isinstance(request, Mapping) else None
    if isinstance(ref, Mapping) and ref.get("kind") and ref.get("id"):
        return str(ref["kind"]), str(ref["id"])
    return None


def _is_delegation_to(row: Mapping[str, Any], owner: OwnerRef) -> bool:
    return owner.kind == "agent" and row.get("capability_key") == AGENT_NODE_PREFIX + owner.id


def derived_runs(kernel: Kernel, owner: OwnerRef, *, own: Iterable[str] = ()) -> list[str]:
    """The runs, other than ``own`` (the owner's), where ``owner`` made calls or was
    delegated to, by their operations (a run whose row is gone is found too)."""
    skip = set(own)
    found = {str(row["run_id"]) for row in operation_rows(kernel.store)
             if _ref_of(row) == (owner.kind, owner.id) or _is_delegation_to(row, owner)}
    return sorted(found - skip)


def running_runs(kernel: Kernel, owner: OwnerRef, own: Sequence[RunRecord]) -> tuple[str, ...]:
    """The running runs among ``own`` (the owner's) and among the runs of others it worked
    in: a workflow run's driver holds the agent's answers in memory, to hand to its next
    nodes, so it is stopped (as the owner's own runs are) before its content goes."""
    others = derived_runs(kernel, owner, own=[r.run_id for r in own])
    return (*(r.run_id for r in own if r.status == "running"),
            *(run_id for run_id in others if (run := get_run(kernel.store, run_id, lenient=True))
              is not None and run.status == "running"))


def add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Two per-table counts added."""
    return {t: a.get(t, 0) + b.get(t, 0) for t in {**a, **b}}


def _key(table_name: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(c) for c in table(table_name).key)


def _key_where(table_name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    return {c: row.get(c) for c in table(table_name).key}


def _scopes_of(ops: Iterable[Mapping[str, Any]]) -> set[str]:
    """The context scopes (and message scopes) the calls ``ops`` were made in."""
    out: set[str] = set()
    for row in ops:
        request = (row.get("data") or {}).get("request") or {}
        for name in ("context_scope", "message_scope"):
            if isinstance(request.get(name), str):
                out.add(request[name])
    return out


def _in_scopes(scope_id: str, scopes: set[str], prefixes: Iterable[str]) -> bool:
    return scope_id in scopes or any(scope_id == p or scope_id.startswith(p + "/")
                                     for p in prefixes)


def kept_rows(kernel: Kernel, run_id: str, owner: OwnerRef) -> dict[str, set[tuple[Any, ...]]]:
    """The keys of the rows of ``run_id`` that are another owner's calls (an agent a workflow
    called): deleting ``owner`` keeps them."""
    store = kernel.store
    ops = [row for row in operation_rows(store, run_id)
           if (ref := _ref_of(row)) is not None and ref != (owner.kind, owner.id)]
    if not ops:
        return {}
    kept: dict[str, set[tuple[Any, ...]]] = {"operations": {_key("operations", r) for r in ops}}
    for op in ops:
        for t in _BY_OPERATION:
            for row in store.query(t, {"operation_id": op["operation_id"]}):
                kept.setdefault(t, set()).add(_key(t, row))
    agents = {ref[1] for op in ops if (ref := _ref_of(op)) and ref[0] == "agent"}
    scopes = _scopes_of(ops)
    prefixes = [f"{run_id}/role/{a}" for a in agents]
    for row in context_record_rows(store, run_id):
        if _in_scopes(str(row.get("scope_id") or ""), scopes, prefixes):
            kept.setdefault("context_records", set()).add(_key("context_records", row))
    return kept


def apart(table_name: str, where: Mapping[str, Any], rows: list[dict[str, Any]],
          kept: set[tuple[Any, ...]] | None) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """``rows`` (every row matching ``where``) as the deletes that spare ``kept``: one by
    ``where`` when none is kept, else one by its key for each row not kept."""
    if not kept:
        return [(dict(where), rows)]
    return [(_key_where(table_name, r), [r]) for r in rows if _key(table_name, r) not in kept]


@dataclass(slots=True)
class RunScrub:
    """What deleting ``owner`` does to one run of another owner it worked in."""

    run_id: str
    deletes: list[Delete] = field(default_factory=list)
    puts: list[Put] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)  # its own rows deleted, per table
    derived: dict[str, int] = field(default_factory=dict)  # rows tombstoned, per table
    touched: dict[str, set[tuple[Any, ...]]] = field(default_factory=dict)
    candidates: set[str] = field(default_factory=set)  # blobs those rows referred to
    still: set[str] = field(default_factory=set)  # blobs the rewritten rows still name
    inputs: list[Path] = field(default_factory=list)  # its artifacts' copies on disk

    def delete(self, table_name: str, row: Mapping[str, Any]) -> None:
        key = _key(table_name, row)
        if key in self.touched.setdefault(table_name, set()):
            return
        self.touched[table_name].add(key)
        self.deletes.append(Delete(table_name, _key_where(table_name, row)))
        self.rows[table_name] = self.rows.get(table_name, 0) + 1
        self.candidates.update(blobs_of(table_name, row))

    def rewrite(self, table_name: str, old: Mapping[str, Any], new: dict[str, Any]) -> None:
        self.touched.setdefault(table_name, set()).add(_key(table_name, old))
        self.puts.append(Put(table_name, new))
        self.derived[table_name] = self.derived.get(table_name, 0) + 1
        self.candidates.update(blobs_of(table_name, old))
        self.still.update(blobs_of(table_name, new))


def plan_run(kernel: Kernel, run_id: str, owner: OwnerRef) -> RunScrub:
    """What deleting agent ``owner`` deletes and rewrites in ``run_id`` (module docstring).
    Reads only."""
    marker = deletion_marker(owner)
    label = owner_label(owner)
    plan = RunScrub(run_id)
    rows = every_row(kernel.store, run_id)
    own_ops = [r for r in rows["operations"] if _ref_of(r) == (owner.kind, owner.id)]
    own_ids = {r["operation_id"] for r in own_ops}
    for t in (*_BY_OPERATION, "operations"):
        for row in rows[t]:
            if row.get("operation_id") in own_ids:
                plan.delete(t, row)
    scopes, prefixes = _scopes_of(own_ops), [f"{run_id}/role/{owner.id}"]
    for row in rows["context_records"]:
        if _in_scopes(str(row.get("scope_id") or ""), scopes, prefixes):
            plan.delete("context_records", row)
    delegations = [r for r in rows["operations"] if _is_delegation_to(r, owner)]
    delegated = {r["operation_id"] for r in delegations}
    nodes = [r for r in rows["workflow_nodes"] if r.get("operation_id") in delegated]
    artifact_nodes: set[str] = set()
    for row in rows[ARTIFACTS]:
        if row.get("source_owner") == label:
            plan.delete(ARTIFACTS, row)
            artifact_nodes.add(str(row["node"]))
    answers = [r for r in own_ops if r.get("event_type") == "model"]
    texts = answered_texts(kernel, delegations, nodes, answers, marker) | \
        posted_texts(rows, {str(r["node"]) for r in nodes}, marker)
    tainted = _tainted(kernel, rows, texts, plan)
    mine = {(r["node"], r["attempt"]) for r in nodes}
    for name, found in rows.items():
        json_columns = table(name).json_columns
        for row in found:
            if _key(name, row) in plan.touched.get(name, set()):
                continue
            if name == "results" and row.get("digest") in tainted:
                plan.delete(name, row)  # it only points at the agent's content
                continue
            new = {c: scrub(row.get(c), texts, marker, tainted) if c in json_columns
                   else row.get(c) for c in table(name).columns}
            stamp = {"owner": label}
            if name == "workflow_nodes" and (row["node"], row["attempt"]) in mine \
                    and (new.get("data") or {}).get("deleted") != stamp:
                new["data"] = {**(new.get("data") or {}), "deleted": stamp}
            if any(new[c] is not row.get(c) for c in json_columns):
                plan.rewrite(name, row, new)
    plan.inputs = _input_copies(kernel, run_id, artifact_nodes)
    return plan


def _tainted(kernel: Kernel, rows: Mapping[str, list[dict[str, Any]]], texts: set[str],
             plan: RunScrub) -> set[str]:
    """The blobs the run's rows name whose text holds one of the agent's ``texts``."""
    if not texts:
        return set()
    named: set[str] = set()
    for name, found in rows.items():
        if name == ARTIFACTS:  # another owner's file: its own content, immutable
            continue
        for row in found:
            if _key(name, row) not in plan.touched.get(name, set()):
                named |= blobs_of(name, row)
    return {d for d in named if holds(_text(kernel, d), texts)}


def _text(kernel: Kernel, digest: str) -> str:
    try:
        return load_blob(kernel.store, digest) or ""
    except UnicodeDecodeError:  # bytes, not a text: no copy of an answer
        return ""


def _input_copies(kernel: Kernel, run_id: str, nodes: set[str]) -> list[Path]:
    """The folders the run's node scopes hold copies of ``nodes``' artifacts in."""
    if not nodes:
        return []
    env = kernel.environment
    found: list[Path] = []
    for scope in env.scopes.scopes_for_run(run_id):
        folder = inputs_folder(env.root, scope)
        if folder is None or folder.is_symlink():  # never a folder a link leads to
            continue
        found += [folder / n for n in sorted(nodes) if os.path.lexists(folder / n)]
    return found


def _remove(path: Path) -> None:
    """Remove a copy (a link itself, never what it points at); gone already is fine. The
    copies are read only (folders 0555): made writable for their owner first."""
    parent = path.parent
    mode = parent.stat().st_mode
    try:
        os.chmod(parent, mode | stat.S_IWUSR)
        with contextlib.suppress(FileNotFoundError):
            if path.is_symlink() or not path.is_dir():
                path.unlink()
                return
            for folder, _dirs, _files in os.walk(path):  # never follows a link
                os.chmod(folder, stat.S_IRWXU)
            shutil.rmtree(path)
    finally:
        os.chmod(parent, stat.S_IMODE(mode))


@dataclass(frozen=True, slots=True, kw_only=True)
class DerivedDeletion:
    """What following the derivation did (would do): rows deleted and tombstoned per table,
    the runs it touched."""

    rows: Mapping[str, int]
    derived: Mapping[str, int]
    runs: tuple[str, ...]
    blobs_kept: int = 0


async def follow_derivation(kernel: Kernel, owner: OwnerRef, *, own: Iterable[str],
                            elsewhere: Elsewhere, dry_run: bool = False) -> DerivedDeletion:
    """Delete and tombstone agent ``owner``'s content in every run of another owner it worked
    in (module docstring): per run, the copies on disk, then one atomic write set — its
    rewrites, its deletes and the blobs no other row names. A second call finds nothing to do."""
    rows: dict[str, int] = {}
    derived: dict[str, int] = {}
    touched: list[str] = []
    kept = 0
    if owner.kind != "agent":
        return DerivedDeletion(rows=rows, derived=derived, runs=())
    for run_id in derived_runs(kernel, owner, own=own):
        plan = plan_run(kernel, run_id, owner)
        shared = elsewhere(plan.candidates, plan.touched) | plan.still
        blobs: list[WriteOp] = []
        for digest in sorted(plan.candidates - shared):
            for t in ("blob_chunks", "blobs"):
                n = len(kernel.store.query(t, {"digest": digest}))
                if n:
                    blobs.append(Delete(t, {"digest": digest}))
                    rows[t] = rows.get(t, 0) + n
        kept += len(plan.candidates & (shared - plan.still))
        ops: tuple[WriteOp, ...] = (*plan.puts, *plan.deletes, *blobs)
        if not ops and not plan.inputs:
            continue
        touched.append(run_id)
        for t, n in plan.rows.items():
            rows[t] = rows.get(t, 0) + n
        for t, n in plan.derived.items():
            derived[t] = derived.get(t, 0) + n
        if dry_run:
            continue
        for path in plan.inputs:  # first: a crash before the commit finds them again
            _remove(path)
        if ops:
            await kernel.coordinator.commit(WriteSet(ops, label="owner.delete.derived"))
    return DerivedDeletion(rows=rows, derived=derived, runs=tuple(touched), blobs_kept=kept)
