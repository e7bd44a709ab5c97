"""A call its before-hooks hand to a person (``ask``, issue 17): recording the wait, and what
the call does when it is issued again (000 §5.2).

::

    before chain ends, no deny, a hook asked ─► operation at ``awaiting_approval`` + approvals
        row ``pending`` (question, arguments, deadline, default), committed with the last
        hook's decision ─► ``ApprovalPending`` (nothing ran)
    issued again (same logical key; the hooks are not run again) ─► the approvals row:
        pending ─► ``ApprovalPending`` again (a passed deadline is ``approvals.expire_due``'s)
        approved, or expired with the default ``approve`` ─► final checks, one Attempt,
            after-hooks, delivery: as any call
        rejected, or expired with the default ``deny`` ─► ``denied_before_execution`` with
            the reason, as a hook's deny (the model is told)

Patches and ``ask``: the chain goes on after a hook asks, and every patch it accepts — of a
hook before the one that asked, of that hook itself, of one after it — applies first; the
person is asked about the effective arguments at the end of the chain, which are exactly what
runs when approved. A hook after it that denies ends the call: deny wins and nobody is asked.
Several hooks that ask make one approval, their questions in chain order.

Owns: the wait's ops and the replay's reading of the answer. Does not own: the
``approvals`` rows and answers (``agentloom.approvals``), the chain (``pipeline.chain``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from agentloom.approvals import ApprovalPending, ApprovalRecord, WaitingCall, get_approval
from agentloom.approvals import pending_row as approval_row
from agentloom.errors import StoreError
from agentloom.results import OperationResult
from agentloom.store.ports import Op

if TYPE_CHECKING:
    from agentloom.pipeline.call import Call


def default_question(call: Call) -> str:
    """The question of an ``ask`` that gave none: it names the call."""
    request = call.request
    return (f"Allow the {request.event_type} call {request.exposed_name} "
            f"({call.state.capability_key}) to run with these arguments?")


def awaiting_ops(call: Call) -> list[Op]:
    """Move the call to ``awaiting_approval`` and return the approvals row to commit with its
    operation row (the caller builds that row after this)."""
    state, ctx = call.state, call.request.context
    state.phase = "awaiting_approval"
    state.cursor = None
    return [approval_row(
        operation_id=state.operation_id, run_id=state.run_id,
        question="\n".join(a["question"] for a in state.asks),
        capability_key=state.capability_key, exposed_name=call.request.exposed_name,
        arguments=state.payload, asked_by=[a["hook_id"] for a in state.asks],
        timeout_s=ctx.approval_timeout_s, default=ctx.approval_default,
        now=call.pipeline.store.now())]  # its deadline in the store's time, as expiry reads it


def pending(call: Call) -> ApprovalPending:
    """The signal that the call waits for its (stored) approval."""
    return ApprovalPending([_waiting(_record(call))])


async def answered(call: Call) -> OperationResult:
    """Go on with a call that waited for a person, by its approval's answer (module doc)."""
    record = _record(call)
    match record.status:
        case "pending":
            raise ApprovalPending([_waiting(record)])
        case "approved":
            return await call.execute([])
        case "rejected":
            who = record.actor or "a person"
            why = record.reason or "no reason given"
            return await call.finish("denied_before_execution", None,
                                     reason=f"rejected by {who}: {why}", pending=[])
        case "expired":
            if record.answer == "approve":
                return await call.execute([])
            return await call.finish(
                "denied_before_execution", None, pending=[],
                reason="nobody answered before the approval deadline; the default answer "
                "(deny) applies")
        case _:
            assert_never(record.status)


def _record(call: Call) -> ApprovalRecord:
    state = call.state
    record = get_approval(call.pipeline.store, state.operation_id)
    if record is None:
        raise StoreError(f"operation {state.operation_id} of run {state.run_id} waits for an "
                         "approval that is not stored; the store lost a row it committed")
    return record


def _waiting(record: ApprovalRecord) -> WaitingCall:
    return WaitingCall(run_id=record.run_id, operation_id=record.operation_id,
                       capability_key=record.capability_key, question=record.question,
                       deadline=record.deadline)
