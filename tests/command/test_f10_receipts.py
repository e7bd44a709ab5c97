"""003 F10 / issue 21 acceptance 1: four honest receipts, on real stores and the real pipeline.

A handler error after a side effect is never ``rejected``; an audit (receipt) write failure
after success is ``unknown`` and keeps its operation id; a repeated confirmation runs once; a
receipt is its owner's only."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.command import CommandSpec, Receipt, ReceiptNotFound
from agentloom.errors import StoreError
from agentloom.hooks.spec import HandlerRef, HookSpec
from agentloom.refs import Principal
from agentloom.store import open_store

from .support import ALICE, BOB, rig


async def test_f10_handler_error_after_side_effect_is_unknown_never_rejected(
        durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        receipt = await r.bus.submit("card.charge", {"cents": 500}, principal=ALICE)
        assert receipt.state == "unknown"
        assert receipt.operation_id and receipt.pipeline_operation_id
        assert [e[0] for e in r.effects.done] == ["charge"]
        assert "may or may not have taken effect" in (receipt.reason or "")
        # stored as unknown, reconciled (still unknown: the pipeline knows no more), never re-run
        again = await r.bus.reconcile(receipt.operation_id, principal=ALICE)
        assert again.state == "unknown" and again.operation_id == receipt.operation_id
        assert [e[0] for e in r.effects.done] == ["charge"]


async def test_f10_handler_that_says_nothing_ran_is_rejected(durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        receipt = await r.bus.submit("card.refuse", {}, principal=ALICE)
        assert receipt.state == "rejected"
        assert receipt.reason == "the account is locked; nothing was charged"
        assert r.bus.receipt(receipt.operation_id, principal=ALICE).state == "rejected"


async def test_f10_success_is_committed_with_its_result_and_queryable(durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        receipt = await r.bus.submit("meeting.move", {"day": "friday"}, principal=ALICE)
        assert (receipt.state, receipt.result) == ("committed", {"moved_to": "friday"})
        # the handler saw the command operation id (its idempotency key outside)
        assert r.effects.done == [("move", {"day": "friday"}, receipt.operation_id)]
        stored = r.bus.receipt(receipt.operation_id, principal=ALICE)
        assert stored.to_dict() == receipt.to_dict()
        # one recorded pipeline operation ran it
        op = r.kernel.store.get("operations", {"operation_id": receipt.pipeline_operation_id})
        assert op is not None and op["logical_key"] == f"command:{receipt.operation_id}"


async def test_f10_invalid_params_are_rejected_and_nothing_runs(durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        bad = await r.bus.submit("meeting.move", {"day": 5}, principal=ALICE)
        unknown_command = await r.bus.submit("meeting.nope", {}, principal=ALICE)
        assert (bad.state, unknown_command.state) == ("rejected", "rejected")
        assert bad.error is not None and bad.error["code"] == "COMMAND_PARAMS_INVALID"
        assert r.effects.done == []


async def test_f10_a_hook_deny_is_rejected_and_nothing_runs(durable_store_url: str) -> None:
    hook = HookSpec(hook_id="no-moves", timing="before", handler=HandlerRef(ref="t:deny"))
    deny = {"t:deny": lambda event: {"decision": "deny", "reason": "moves are frozen"}}
    async with rig(durable_store_url, hooks=[hook], hook_functions=deny) as r:
        receipt = await r.bus.submit("meeting.move", {"day": "friday"}, principal=ALICE)
        assert receipt.state == "rejected" and "moves are frozen" in (receipt.reason or "")
        assert r.effects.done == []


class FailingAfterSuccess(StoreReceiptLog):
    """The audit store fails exactly when a committed receipt is written (a fault at the edge:
    the disk, the network); everything else is the real store."""

    async def save(self, receipt: Receipt) -> None:
        if receipt.state == "committed":
            raise StoreError("the audit database is unreachable")
        await super().save(receipt)


async def test_f10_audit_write_failure_after_success_is_unknown_and_keeps_the_id(
        durable_store_url: str) -> None:
    async with rig(durable_store_url, receipts=FailingAfterSuccess) as r:
        receipt = await r.bus.submit("meeting.move", {"day": "friday"}, principal=ALICE)
        assert receipt.state == "unknown"
        assert receipt.operation_id == r.effects.done[0][2]  # the id the handler ran under
        assert receipt.error is not None
        assert receipt.error["code"] == "COMMAND_RECEIPT_NOT_RECORDED"
        # reconciled from the recorded pipeline operation: it did run, once
        reconciled = r.bus.receipt(receipt.operation_id, principal=ALICE)
        assert (reconciled.state, reconciled.result) == ("committed", {"moved_to": "friday"})
        assert len(r.effects.done) == 1
        # and never another principal's
        with pytest.raises(ReceiptNotFound):
            r.bus.receipt(receipt.operation_id, principal=BOB)


async def test_f10_audit_failure_in_the_real_database_keeps_the_id(tmp_path: Any) -> None:
    """The same, with the SQLite database itself refusing the receipt row (a trigger)."""
    url = f"sqlite:///{tmp_path / 'a.db'}"
    open_store(url).close()
    db = sqlite3.connect(tmp_path / "a.db")
    db.execute("CREATE TRIGGER audit_down BEFORE INSERT ON command_receipts "
               "BEGIN SELECT RAISE(ABORT, 'audit down'); END")
    db.commit()
    async with rig(url) as r:
        receipt = await r.bus.submit("meeting.move", {"day": "monday"}, principal=ALICE)
        assert receipt.state == "unknown" and receipt.operation_id
        assert len(r.effects.done) == 1
        db.execute("DROP TRIGGER audit_down")
        db.commit()
        reconciled = await r.bus.reconcile(receipt.operation_id, principal=ALICE)
        assert reconciled.state == "committed"
        assert r.bus.receipts.get(receipt.operation_id) is not None  # written back
    db.close()


async def test_f10_repeated_confirmation_runs_once(durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        queued = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE)
        assert queued.state == "accepted" and queued.confirmation
        assert r.effects.done == []
        token = queued.confirmation
        first, second = await asyncio.gather(*(
            r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE, confirmation=token)
            for _ in range(2)))
        third = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE,
                                   confirmation=token)
        assert len(r.effects.done) == 1
        assert {first.operation_id, second.operation_id, third.operation_id} \
            == {queued.operation_id}
        assert third.state == "committed" and third.result == "wiped"


async def test_f10_confirmation_is_bound_to_the_exact_params_and_principal(
        durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        queued = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE)
        token = queued.confirmation
        assert token is not None
        other_params = await r.bus.submit("disk.wipe", {"disk": "d2"}, principal=ALICE,
                                          confirmation=token)
        other_person = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=BOB,
                                          confirmation=token)
        forged = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE,
                                    confirmation=queued.operation_id + ".guess")
        assert [x.state for x in (other_params, other_person, forged)] == ["rejected"] * 3
        assert r.effects.done == []
        ok = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE, confirmation=token)
        assert ok.state == "committed" and len(r.effects.done) == 1


async def test_f10_declined_confirmation_never_runs(durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        queued = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE)
        declined = await r.bus.decline(queued.operation_id, principal=ALICE)
        assert declined.state == "rejected"
        late = await r.bus.submit("disk.wipe", {"disk": "d1"}, principal=ALICE,
                                  confirmation=queued.confirmation)
        assert late.state == "rejected" and r.effects.done == []


async def test_f10_cross_owner_receipt_query_refused(durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        receipt = await r.bus.submit("meeting.move", {"day": "friday"}, principal=ALICE)
        with pytest.raises(ReceiptNotFound):
            r.bus.receipt(receipt.operation_id, principal=BOB)
        with pytest.raises(ReceiptNotFound):  # same answer as for an id that does not exist
            r.bus.receipt("no-such-id", principal=BOB)
        with pytest.raises(ReceiptNotFound):
            await r.bus.decline(receipt.operation_id, principal=BOB)
        assert r.bus.receipt(receipt.operation_id, principal=ALICE).state == "committed"


class OnlyAlice:
    def refuse(self, principal: Principal, spec: CommandSpec) -> str | None:
        return None if principal == ALICE else f"{principal.actor} may not run {spec.id}"


async def test_f10_an_unauthorised_principal_is_rejected_and_nothing_runs(
        durable_store_url: str) -> None:
    async with rig(durable_store_url) as r:
        r.bus.authoriser = OnlyAlice()
        refused = await r.bus.submit("meeting.move", {"day": "friday"}, principal=BOB)
        assert refused.state == "rejected" and refused.error is not None
        assert refused.error["code"] == "COMMAND_FORBIDDEN" and r.effects.done == []
        assert r.bus.receipt(refused.operation_id, principal=BOB).state == "rejected"
