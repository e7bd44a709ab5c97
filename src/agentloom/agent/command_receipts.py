"""The store adapter of ``agentloom.command.ReceiptLog``: the ``command_receipts`` and
``command_confirmations`` tables (schema v11).

A receipt that records what already happened (``rejected``, ``committed``, ``unknown``) is
written without waiting for the disk (``WriteSet.sync=False``: complete and crash-safe for
this process, carried to the disk by the next synced commit); an ``accepted`` one and a
consumed confirmation precede an effect and are synced.

Owns: the rows and their commits. Does not own: what a receipt says (``agentloom.command``).
"""

from __future__ import annotations

import time

from agentloom.command import Receipt
from agentloom.errors import RevisionConflict
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store import Insert, Put, Store, WriteSet

__all__ = ["StoreReceiptLog"]

RECEIPTS = "command_receipts"
CONFIRMATIONS = "command_confirmations"


class StoreReceiptLog:
    """Receipts in ``store``, written through ``coordinator`` — inline on the caller's thread
    when nothing else is queued for the writer (a receipt mostly follows its pipeline
    operation alone), else in the writer thread's group commit."""

    def __init__(self, store: Store, coordinator: CommitCoordinator) -> None:
        self.store = store
        self._coordinator = coordinator

    async def _commit(self, ws: WriteSet) -> None:
        await self._coordinator.commit(ws, inline=True)

    async def save(self, receipt: Receipt) -> None:
        row = {"operation_id": receipt.operation_id, "actor": receipt.principal.actor,
               "project": receipt.principal.project, "command": receipt.command,
               "state": receipt.state, "created_at": receipt.created_at,
               "updated_at": receipt.updated_at, "data": receipt.record()}
        await self._commit(WriteSet((Put(RECEIPTS, row),), label="command receipt",
                                    sync=receipt.state == "accepted"))

    async def consume(self, operation_id: str) -> bool:
        try:
            await self._commit(WriteSet((Insert(CONFIRMATIONS, {
                "operation_id": operation_id, "created_at": time.time()}),),
                label="command confirmation"))
        except RevisionConflict:
            return False
        return True

    def get(self, operation_id: str) -> Receipt | None:
        row = self.store.get(RECEIPTS, {"operation_id": operation_id})
        return None if row is None else Receipt.from_row(row)
