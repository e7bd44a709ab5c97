"""No poison runs: a run whose driving fails the same way ``max_failures`` times ends ``failed``.

A run's loop ends in a terminal state for everything a model, a tool or a hook can do. What
is left is the runtime itself failing while it drives the run — a store that refuses a row,
a defect — and that failure comes back at the same step on every resume. Each such failure
is recorded on the run (``runs.data.failures``; read back as ``store.records.RunFailures``)::

    {"fingerprint": "…", "count": 2, "total": 2, "retry_at": 1733…,
     "last": {"code": "STORE_ERROR", "type": "StoreError", "message": "…", "at": 1733…}}

``count`` is how many times in a row it failed *the same way* (same exception type, code and
message with numbers and ids masked); at ``max_failures`` the run is ended ``failed`` with
``RUN_FAILED_REPEATEDLY`` and the last error. Until then the lease is let go and a worker
resumes it no earlier than ``retry_at`` (``backoff_s`` doubled per failure, at most
``max_backoff_s``). Each failed resume re-issues at most the one model call whose response
was lost with it, so a poison response is requested at most ``max_failures`` times.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from typing import Any

from agentloom.errors import OperationError, redact_secrets
from agentloom.store.records import RunRecord

__all__ = ["FAILED_REPEATEDLY", "RecoveryPolicy", "note_failure", "retry_at"]

FAILED_REPEATEDLY = "RUN_FAILED_REPEATEDLY"
MESSAGE_LIMIT = 2000
_VARYING = re.compile(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\d+")


@dataclass(frozen=True, slots=True)
class RecoveryPolicy:
    """How often a failing run is tried again (config ``recovery``)."""

    max_failures: int = 3
    backoff_s: float = 5.0
    max_backoff_s: float = 600.0

    def __post_init__(self) -> None:
        if self.max_failures < 1:
            raise ValueError("recovery.max_failures must be at least 1")
        if self.backoff_s < 0 or self.max_backoff_s < self.backoff_s:
            raise ValueError("recovery.backoff_s must be >= 0 and <= recovery.max_backoff_s")

    def backoff(self, total: int) -> float:
        """Seconds before the next try after ``total`` failures: doubled each time, capped."""
        return float(min(self.backoff_s * 2 ** max(total - 1, 0), self.max_backoff_s))


def _describe(exc: BaseException) -> tuple[str, str, str]:
    code = str(getattr(exc, "code", None) or type(exc).__name__)
    message = redact_secrets(str(exc) or type(exc).__name__)[:MESSAGE_LIMIT]
    return code, type(exc).__name__, message


def _fingerprint(kind: str, code: str, message: str) -> str:
    masked = _VARYING.sub("#", message)
    return hashlib.sha256(f"{kind}\0{code}\0{masked}".encode()).hexdigest()[:16]


def note_failure(
    data: dict[str, Any], exc: BaseException, policy: RecoveryPolicy, *, now: float | None = None,
) -> tuple[dict[str, Any], OperationError | None]:
    """The run's data with this failure counted, and the error to end it with once it failed
    the same way ``policy.max_failures`` times (else ``None``: it is tried again later)."""
    now = time.time() if now is None else now
    code, kind, message = _describe(exc)
    fingerprint = _fingerprint(kind, code, message)
    before = data.get("failures") or {}
    count = before.get("count", 0) + 1 if before.get("fingerprint") == fingerprint else 1
    total = before.get("total", 0) + 1
    failures = {"fingerprint": fingerprint, "count": count, "total": total,
                "retry_at": now + policy.backoff(total),
                "last": {"code": code, "type": kind, "message": message, "at": now}}
    data = {**data, "failures": failures}
    if count < policy.max_failures:
        return data, None
    return data, OperationError(
        code=FAILED_REPEATEDLY, category="unknown", external_outcome="unknown",
        message=f"the runtime failed {count} times in a row the same way while driving this "
                f"run, so it is not tried again: {code}: {message}",
        details={"failures": count, "last_code": code})


def retry_at(run: RunRecord) -> float:
    """When a worker may resume a run that failed (0: at once)."""
    failures = run.failures
    return failures.retry_at if failures is not None else 0.0
