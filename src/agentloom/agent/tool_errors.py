"""How many turns in a row a model's tool calls could not run (000 §4, self-correction).

A tool call the model formed wrong does not run: it names a tool that was not offered
(``TOOL_NOT_OFFERED``), or its arguments are not a JSON object or do not match the tool's
schema (``INVALID_ARGUMENTS``). It is recorded ``failed`` with no Attempt and the model is
told why, so it can correct itself. A model that does not — ``limits.max_tool_errors`` turns
in a row in which *every* tool call was such a call — ends the invocation
``TOOL_ERRORS_EXCEEDED``, naming the last errors. A turn with one call that ran (whatever its
outcome), or an answer without tool calls, starts the count again.

The count is derived from the calls' envelopes, which a resumed run replays from the store in
turn order: it counts the same after a crash as before it.

Owns: which envelope is a malformed call, the count, the final error. Does not own: why a
call is malformed (``models.calls``, the pipeline's schema check), the turns (``loop``).
"""

from __future__ import annotations

from collections.abc import Sequence

from agentloom.errors import OperationError
from agentloom.models.calls import INVALID_ARGUMENTS, TOOL_NOT_OFFERED
from agentloom.models.types import ToolCall
from agentloom.results import OperationResult

__all__ = ["TOOL_ERRORS_EXCEEDED", "ToolErrorStreak", "malformed"]

TOOL_ERRORS_EXCEEDED = "TOOL_ERRORS_EXCEEDED"
MALFORMED = frozenset({TOOL_NOT_OFFERED, INVALID_ARGUMENTS})
SHOWN = 200  # characters of one error named in the final message


def malformed(envelope: OperationResult) -> bool:
    """Whether ``envelope`` is a call that could not run because the model formed it wrong
    (refused before any Attempt, not a failure of the tool)."""
    error = envelope.error
    return (envelope.outcome == "failed" and envelope.attempts == 0 and error is not None
            and error.code in MALFORMED)


class ToolErrorStreak:
    """The consecutive turns of one invocation whose every tool call was malformed."""

    __slots__ = ("_errors", "_turns", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._turns = 0
        self._errors: list[str] = []  # those of the current streak's turns

    def reset(self) -> None:
        self._turns = 0
        self._errors.clear()

    def turn(self, agent: str, n: int, calls: Sequence[ToolCall],
             results: Sequence[OperationResult]) -> OperationError | None:
        """Count turn ``n``; the error that ends the invocation when the limit is reached."""
        if not results or not all(malformed(r) for r in results):
            self.reset()
            return None
        self._turns += 1
        for call, result in zip(calls, results, strict=True):
            assert result.error is not None
            said = result.error.message.split("\n", 1)[0]
            said = said if len(said) <= SHOWN else said[:SHOWN] + "…"
            self._errors.append(f"turn {n}, call {call.id}: {result.error.code}: {said}")
        if self._turns < self.limit:
            return None
        last = self._errors[-self.limit:]
        return OperationError(
            code=TOOL_ERRORS_EXCEEDED, category="validation",
            message=f"agent {agent!r} made {self._turns} turns in a row whose tool calls could "
            f"not run (limits.max_tool_errors is {self.limit}); the last: {'; '.join(last)}. "
            "Name the agent's tools in its instructions, give it the tool it asks for, or "
            "raise limits.max_tool_errors", details={"errors": last})
