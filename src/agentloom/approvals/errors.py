"""The approvals' exceptions: the signal that a call waits for a person, and a refused answer.

::

    AgentLoomError
    ├── ApprovalPending   a call (or batch members) waits for a person   [APPROVAL_PENDING]
    └── ApprovalError     an answer that cannot be recorded    [APPROVAL_ALREADY_ANSWERED,
                                                      APPROVAL_NOT_FOUND, APPROVAL_BUSY]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.results import OperationResult


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingCall:
    """One call that waits for a person's answer: what ``ApprovalPending`` names."""

    run_id: str
    operation_id: str
    capability_key: str
    question: str
    deadline: float | None


class ApprovalPending(AgentLoomError):
    """A before-hook answered ``ask``: the call is recorded with its ``approvals`` row and
    nothing ran. Raised by ``bus.request`` (and again on every replay while no answer is
    recorded); ``bus.request_many`` raises it once every member settled, naming each waiting
    member in ``calls`` and keeping every member's envelope in ``results`` (None for a waiting
    one).

    ``run_id``, ``operation_id``, ``question``, ``capability_key`` and ``deadline`` are the
    first waiting call's. The run's driver lets the run wait (no process waits for a person);
    ``approvals.answer`` records the answer and the run goes on when the call is issued again
    with the same logical key.
    """

    default_code = "APPROVAL_PENDING"
    default_category: ErrorCategory = "permission"

    def __init__(self, calls: Sequence[WaitingCall],
                 results: Sequence[OperationResult | None] = ()) -> None:
        if not calls:
            raise ValueError("ApprovalPending needs at least one waiting call")
        first = calls[0]
        named = "; ".join(f"{c.capability_key} (operation {c.operation_id}): {c.question}"
                          for c in calls)
        super().__init__(f"run {first.run_id}: {len(calls)} call(s) wait for a person's "
                         f"answer: {named}", phase="hooks")
        self.calls = tuple(calls)
        self.results = tuple(results)
        self.run_id = first.run_id
        self.operation_id = first.operation_id
        self.question = first.question
        self.capability_key = first.capability_key
        self.deadline = first.deadline


class ApprovalError(AgentLoomError):
    """An answer that cannot be recorded: the call was answered already
    (``APPROVAL_ALREADY_ANSWERED``, the message names that answer and when) or no call of that
    run waits under that operation id (``APPROVAL_NOT_FOUND``), or the run was claimed again
    and again while the answer was being recorded (``APPROVAL_BUSY``: nothing written, retry)."""

    default_code = "APPROVAL_NOT_FOUND"
    default_category: ErrorCategory = "conflict"
