"""RetryPolicy: snapshotted per run; off by default (000 §3.3).

Only the *error category* decides: ``transport`` and ``rate_limit`` may be
retried; idempotency / read-only annotations of a capability are never consulted.
A 429 waits ``max(interval_s, Retry-After)``. No wait may cross the run deadline.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentloom.errors import OperationError

RETRYABLE_CATEGORIES = frozenset({"transport", "rate_limit"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When a failed Attempt is tried again: off by default; when ``enabled``, only
    ``transport`` and ``rate_limit`` errors, up to ``max_attempts`` in all (the first included),
    ``interval_s`` apart (or ``Retry-After`` if longer), never past the run deadline (000 §3.3).
    Snapshotted per run."""

    enabled: bool = False
    max_attempts: int = 2
    interval_s: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("retry.max_attempts must be at least 1 (it counts the first try)")
        if self.interval_s < 0:
            raise ValueError("retry.interval_s cannot be negative")

    def next_wait(
        self, error: OperationError, *, attempt_no: int, now: float, deadline: float
    ) -> float | None:
        """Seconds to wait before Attempt ``attempt_no + 1``, or None when no retry is allowed."""
        if not self.enabled or attempt_no >= self.max_attempts:
            return None
        if error.category not in RETRYABLE_CATEGORIES:
            return None
        wait = self.interval_s
        if error.category == "rate_limit":
            retry_after = error.details.get("retry_after_s")
            if isinstance(retry_after, int | float) and retry_after >= 0:
                wait = max(wait, float(retry_after))
        if now + wait >= deadline:
            return None
        return wait

    def to_dict(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "max_attempts": self.max_attempts,
            "interval_s": self.interval_s,
        }
