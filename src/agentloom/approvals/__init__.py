"""Human approval of a call (issue 17, 000 §5.2): a before-hook answers ``ask``, a person
answers, the run goes on.

::

    before-hook ``ask`` ─► pipeline: operation at ``awaiting_approval`` + approvals row
       (pending, question, arguments, deadline, default) in one commit; nothing runs;
       ``ApprovalPending`` raised ─► the run's driver lets the run wait (``waiting``)
    answer(approve / reject) or expire_due (the default) ─► approvals row answered, once;
       the run back in the queue (``pending``) when nothing else of it waits
    the call issued again (same logical key) ─► pending: ``ApprovalPending`` again;
       approved: it runs (one Attempt); rejected / expired with deny: denied_before_execution

Owns: recording an answer once, expiring due approvals, re-queueing a waiting run, and
``ApprovalPending``; the rows' records, reads and ops are the ``store.approvals`` repository's
(re-exported here). Does not own: when a call asks
and what happens on replay (``pipeline.approval``), nor the run's status ``waiting``, its lease
or the CLI (the run's driver, ``agent`` / ``cli``). Imports the store port and the core only.
"""

from agentloom.approvals.answers import (
    Commit,
    answer,
    expire_due,
    get_approval,
    pending_approvals,
    requeue_if_answered,
)
from agentloom.approvals.errors import ApprovalError, ApprovalPending, WaitingCall
from agentloom.approvals.records import (
    ANSWERS,
    APPROVAL_STATUSES,
    Answer,
    ApprovalRecord,
    ApprovalStatus,
    pending_row,
)

__all__ = [
    "ANSWERS",
    "APPROVAL_STATUSES",
    "Answer",
    "ApprovalError",
    "ApprovalPending",
    "ApprovalRecord",
    "ApprovalStatus",
    "Commit",
    "WaitingCall",
    "answer",
    "expire_due",
    "get_approval",
    "pending_approvals",
    "pending_row",
    "requeue_if_answered",
]
