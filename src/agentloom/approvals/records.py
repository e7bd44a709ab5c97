"""The ``approvals`` records, kept importable from here: they live in ``store.approvals`` (the
repository of the ``approvals`` table: ``ApprovalRecord``, its closed sets, reads and op
builders)."""

from __future__ import annotations

from agentloom.store.approvals import (
    ANSWERS,
    APPROVAL_STATUSES,
    Answer,
    ApprovalRecord,
    ApprovalStatus,
    pending_row,
)

__all__ = ["ANSWERS", "APPROVAL_STATUSES", "Answer", "ApprovalRecord", "ApprovalStatus",
           "pending_row"]
