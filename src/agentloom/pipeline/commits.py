"""CommitPath: the pipeline's hot path — how the rows of every call reach the store.

Every recorded call commits here, two or three times, so anything done per commit shows in
the cost of a call (``bench/pipeline.py``: ~100 µs a call in memory, under one bare commit
on SQLite). The three savings that keep it there live here and nowhere else:

* **carried commits** (``carry`` / ``flush``): a re-runnable call without hooks (a model
  generation) whose caller asked for it (``Request.defer_commit``) is not committed on its
  own; its rows ride on its invocation's next commit (the intent of the tool calls it asked
  for) or on ``flush``. A crash before then loses a call with no external effect that
  nothing durable depends on, and it is issued again on resume;
* **delta bases** (``delta_base`` / ``remember``): a call's proposed arguments are stored as
  a delta of the previous call of the same capability, role and invocation (a model call:
  the previous history plus a few messages), so a run's bytes per step stay flat;
* **the known-key index** (``find``): while this process holds a run's lease nobody else
  adds operations to it, so the run's logical keys are read once per lease epoch and a key
  not among them is never looked up.

All three are kept per lease epoch: rows carried, a base or an index from an older lease are
never used under a newer one (its commits are fenced out).

Owns: the write of a call's ops as one fenced write set (with the blobs they name), the
carried rows, the delta bases and the known-key index. Does not own: which ops a phase
writes (``pipeline.call``) or how write sets are batched (``pipeline.coordinator``).
"""

from __future__ import annotations

from typing import Any

from agentloom.context.blobs import BlobText
from agentloom.context.manager import ContextManager
from agentloom.errors import FencedOut, RevisionConflict, StoreError
from agentloom.pipeline.context import InvocationContext
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.pipeline.records import OperationState, remember_arguments
from agentloom.pipeline.stored import blobs_to_write, committed
from agentloom.store.blobs import get_blob
from agentloom.store.operations import find_operation, logical_keys
from agentloom.store.ports import Fence, Op, Store, WriteSet

BASES_LIMIT = 10_000  # (run, capability, role, invocation) bases kept for delta-encoded arguments
KNOWN_LIMIT = 10_000  # runs whose committed logical keys are indexed (see find)
_COMMIT_REFUSED = (FencedOut, RevisionConflict, StoreError)  # rolled back: nothing written

_BaseKey = tuple[str, str, str | None, str | None]


class CommitPath:
    """Commits a call's ops, carrying, delta-encoding and indexing as the module says."""

    __slots__ = ("_bases", "_carried", "_known", "active", "context", "coordinator", "store")

    def __init__(self, store: Store, coordinator: CommitCoordinator,
                 context: ContextManager) -> None:
        self.store = store
        self.coordinator = coordinator
        self.context = context
        self.active = 0  # calls in flight; a lone call commits without the writer thread
        # (run, capability, role, invocation) -> the last stored call's (lease epoch,
        # operation id, proposed arguments); a base is only used under its own epoch: a
        # carried call is committed (or lost) with the lease it was made under
        self._bases: dict[_BaseKey, tuple[int, str, dict[str, Any]]] = {}
        # run -> (lease epoch, logical keys committed under it): see find
        self._known: dict[str, tuple[int, set[str]]] = {}
        # (run, invocation) -> (lease epoch, the rows of finished calls waiting to be
        # committed with that invocation's next commit): see carry
        self._carried: dict[tuple[str, str], tuple[int, list[Op]]] = {}

    # -- the known-key index -------------------------------------------------------------
    def find(self, ctx: InvocationContext, logical_key: str, *,
             indexed: bool = True) -> OperationState | None:
        """The stored operation of ``logical_key`` in ``ctx``'s run, if any.

        The keys committed before the lease was taken are read once (per run and epoch) and
        the ones committed here are added: a key not in that set is not looked up.
        ``indexed=False`` always asks the store.
        """
        if indexed:
            known = self._known.get(ctx.run_id)
            if known is None or known[0] != ctx.lease_epoch:
                keys = logical_keys(self.store, ctx.run_id)
                self._known.pop(ctx.run_id, None)
                if len(self._known) >= KNOWN_LIMIT:
                    del self._known[next(iter(self._known))]
                known = self._known[ctx.run_id] = (ctx.lease_epoch, keys)
            if logical_key not in known[1]:
                return None
        found = find_operation(self.store, ctx.run_id, logical_key)
        return None if found is None else OperationState.from_row(found.to_row(), self.store)

    # -- delta bases -----------------------------------------------------------------------
    def delta_base(self, ctx: InvocationContext,
                   capability_key: str) -> tuple[str, dict[str, Any]] | None:
        """The (operation id, proposed arguments) a new call's arguments may be stored as a
        delta of: the last stored call of the same capability, role and invocation, under
        this lease."""
        base = self._bases.get((ctx.run_id, capability_key, ctx.role, ctx.invocation_id))
        if base is None or base[0] != ctx.lease_epoch:
            return None
        return base[1], base[2]

    def remember(self, state: OperationState, ctx: InvocationContext) -> None:
        """A stored call's proposed arguments: the base the next call of the same capability
        and role in this run is stored as a delta of (it is committed, so it can be read)."""
        args = state.request["proposed_arguments"]
        if not any(isinstance(v, list) for v in args.values()):
            return
        key = (ctx.run_id, state.capability_key, ctx.role, ctx.invocation_id)
        self._bases.pop(key, None)
        if len(self._bases) >= BASES_LIMIT:
            del self._bases[next(iter(self._bases))]
        self._bases[key] = (ctx.lease_epoch, state.operation_id, args)
        remember_arguments(state.operation_id, args)

    # -- commits ---------------------------------------------------------------------------
    async def commit(self, ctx: InvocationContext, ops: list[Op], *,
                     state: OperationState | None = None, sync: bool = True) -> None:
        """Commit ``ops`` — after the rows ``state`` deferred, if any — as one write set
        (``sync=False``: a record of what has happened, see ``WriteSet.sync``)."""
        if state is not None and state.deferred:
            ops = [*state.deferred, *ops]
        await self.write(ctx, ops, sync=sync)
        if state is not None:
            state.unsaved, state.deferred = False, []
            if not state.stored:
                state.stored = any(op.table == "operations"
                                   and op.row.get("operation_id") == state.operation_id
                                   for op in ops)

    async def write(self, ctx: InvocationContext, ops: list[Op], *, sync: bool = True) -> None:
        """Commit ``ops`` (after the calls carried for ``ctx``'s invocation) as one write set,
        with the blobs their results name (``pipeline.stored``)."""
        carried = self._take_carried(ctx)
        if carried:
            ops = [*carried, *ops]
        fence = Fence(ctx.run_id, ctx.lease_epoch)
        blobs, named = blobs_to_write(ops, self.context.preview_limit)
        try:
            if blobs:
                ops = [*await self._blob_rows(blobs, fence), *ops]
            await self.coordinator.commit(WriteSet(tuple(ops), fence, sync=sync),
                                          inline=self.active <= 1)
        except _COMMIT_REFUSED:
            if carried:  # rolled back with the rest: they wait for the next commit
                self.carry(ctx, carried, first=True)
            raise
        committed(named)
        known = self._known.get(ctx.run_id)
        if known is not None and known[0] == ctx.lease_epoch:
            known[1].update(op.row["logical_key"] for op in ops if op.table == "operations"
                            and "logical_key" in op.row)

    async def _blob_rows(self, blobs: list[BlobText], fence: Fence) -> list[Op]:
        """The ``blobs`` rows to commit with the rows naming them. A chunked blob's chunks are
        committed first, a few per write set, unless it is stored already: a large result
        is never held as bytes, or quoted into one query, all at once."""
        rows: list[Op] = []
        for blob in blobs:
            if blob.chunked:
                if get_blob(self.store, blob.digest) is not None:
                    continue  # content-addressed: the same text, with all its chunks
                for group in blob.chunk_groups():
                    await self.coordinator.commit(WriteSet(tuple(group), fence),
                                                  inline=self.active <= 1)
            rows.append(blob.row())
        return rows

    # -- carried commits -------------------------------------------------------------------
    def carry(self, ctx: InvocationContext, ops: list[Op], *, first: bool = False) -> None:
        """Hold ``ops`` (a whole finished call) for the next commit of ``ctx``'s invocation;
        ``first`` puts them before what is held already (rows rolled back with a commit)."""
        assert ctx.invocation_id is not None
        key = (ctx.run_id, ctx.invocation_id)
        held = self._carried.get(key)
        if held is None or held[0] != ctx.lease_epoch:  # an older lease's rows are fenced out
            self._carried[key] = (ctx.lease_epoch, list(ops))
        elif first:
            held[1][:0] = ops
        else:
            held[1].extend(ops)

    def _take_carried(self, ctx: InvocationContext) -> list[Op]:
        if ctx.invocation_id is None or not self._carried:
            return []
        held = self._carried.pop((ctx.run_id, ctx.invocation_id), None)
        if held is None or held[0] != ctx.lease_epoch:
            return []
        return held[1]

    async def flush(self, ctx: InvocationContext) -> None:
        """Commit what is carried for ``ctx``'s invocation (nothing to do when nothing is)."""
        if self._carried and ctx.invocation_id is not None \
                and (ctx.run_id, ctx.invocation_id) in self._carried:
            await self.write(ctx, [])
