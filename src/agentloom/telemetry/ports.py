"""What tracing needs of the pipeline and the runtime, and what it offers them.

The pipeline holds a ``CallTracer`` (or ``None``: tracing off) and calls it at three points:
``observe`` beside its own notifications, ``attempt`` around one Attempt and ``hook`` around one
hook run. The runtime holds a ``RunTracer``. Both see an operation only as an
``OperationView``, so this package imports nothing of the pipeline.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class OperationView(Protocol):
    """The parts of one operation's working state (``pipeline.records.OperationState``) that
    its spans are built from."""

    operation_id: str
    run_id: str
    capability_key: str
    event_type: str
    phase: str
    request: dict[str, Any]
    created_at: float
    attempts: int
    raw: dict[str, Any] | None
    result: dict[str, Any] | None
    envelope: dict[str, Any] | None


class CallTracer(Protocol):
    """The pipeline's side: operation spans from its records, live spans around the work."""

    def observe(self, kind: str, state: OperationView) -> None:
        """``operation.started`` / ``operation.completed`` of ``state``."""

    async def attempt(self, state: OperationView, attempt_no: int, work: Awaitable[T]) -> T:
        """Await ``work`` (one Attempt) inside its span, the current one meanwhile."""

    async def hook(self, state: OperationView, *, hook_id: str, timing: str, position: int,
                   work: Awaitable[T]) -> T:
        """Await ``work`` (one hook run, a ``HookRun``) inside its span; its status and
        decision become attributes."""


class RunTracer(CallTracer, Protocol):
    """The runtime's side: the run and each invocation, live."""

    async def run(self, run_id: str, *, agent: str, session_id: str | None,
                  work: Awaitable[T], first: Mapping[str, str] | None = None) -> T:
        """Await ``work`` (driving the run to its ``RunResult``) inside the run's span;
        ``first``: the ids (``current_ids``) of the run's first span when this drive resumes it
        (after an approval, a takeover, a restart) — the new span links to it."""

    def current_ids(self) -> dict[str, str] | None:
        """``{"trace_id", "span_id"}`` (hex) of the current span, None outside one: what a
        run records so a later drive links back to it."""

    async def invocation(self, invocation_id: str, *, run_id: str, agent: str,
                         work: Awaitable[T]) -> T:
        """Await ``work`` (one invocation's loop, a ``LoopOutcome``) inside its span."""

    def route(self, run_id: str, models: AgentModels) -> None:
        """Run ``run_id``'s agents talk to ``models`` (its project's route), not the release's."""

    def unroute(self, run_id: str) -> None:
        """Forget ``route`` of a run this process no longer drives."""

    def shutdown(self) -> None:
        """Export what is buffered and stop, when this tracer made its own provider."""


AgentModels = Mapping[str, object]
"""An agent's name -> its model (a ``Connection`` or an offline model): what its model spans
say it requests (``model``) and of which provider (a connection's ``name``; else ``openai``
for a connection, ``agentloom`` for an offline model)."""
