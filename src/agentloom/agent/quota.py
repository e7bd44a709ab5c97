"""The run's token quota (000 §4: the root's budget governs the whole execution tree).

``limits.max_total_tokens`` of the agent a run starts with caps the tokens of every model call
of the run — the root's, every Executor's and every compaction's. Once the calls made so far
add up to the quota, no invocation of the tree makes another model call: each ends
``RUN_BUDGET_EXHAUSTED`` (an Executor's end is an error result for its Planner, whose own next
call is refused too). A call in flight is not cut off, so a run can end a little above it.

A call counts its provider's ``total_tokens`` (else input + output); when the provider reports
no usage, the pessimistic estimate of the compaction stage (JSON characters / 3 of the request
and the response). The count is keyed by the call's logical key, so a resumed run — which
replays its calls — counts each once; it starts from the usage stored with the run's
committed model calls (a finished delegation is not replayed, its calls still count).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentloom.agent.compaction import CHARS_PER_TOKEN, Estimator, estimate_tokens
from agentloom.errors import OperationError
from agentloom.models.gateway import response_from_dict
from agentloom.models.types import Message, ModelResponse
from agentloom.pipeline.records import stored_envelope
from agentloom.results import JsonBlock
from agentloom.store.ports import Store
from agentloom.store.records import operations

__all__ = ["TokenQuota", "tokens_of"]


def tokens_of(response: ModelResponse, messages: Sequence[Message] = (),
              sizes: Estimator | None = None) -> int:
    """The tokens one model call used, as its provider reported them (else estimated; pass
    the invocation's ``sizes`` so a long history is not measured again on every call)."""
    usage = response.usage
    if usage is not None:
        # A negative count from a provider is not believed (it would refund the quota).
        total, sent_n, out_n = (_counted(usage.total_tokens), _counted(usage.input_tokens),
                                _counted(usage.output_tokens))
        if total is not None:
            return total
        if sent_n is not None or out_n is not None:
            return (sent_n or 0) + (out_n or 0)
    out = len(response.text) + len(response.reasoning or "") + sum(
        len(c.arguments) for c in response.tool_calls)
    sent = sizes.tokens(messages) if sizes is not None else estimate_tokens(messages)
    return sent + math.ceil(out / CHARS_PER_TOKEN)


def _counted(value: int | None) -> int | None:
    return value if value is not None and value >= 0 else None


class TokenQuota:
    """The tokens a run tree has used, by call, against its limit (``None``: no limit)."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 1:
            raise ValueError("max_total_tokens must be at least 1")
        self.limit = limit
        self._used: dict[str, int] = {}

    @classmethod
    def of_run(cls, store: Store, run_id: str, limit: int | None) -> TokenQuota:
        """A quota that already counts the run's committed model calls (for a resumed run)."""
        quota = cls(limit)
        if limit is None:
            return quota
        for op in operations(store, run_id, event_type="model"):
            envelope = stored_envelope(op.to_row(), store) if op.terminal else None
            result = envelope.result if envelope is not None else None
            if result is None or len(result.content) != 1 \
                    or not isinstance(result.content[0], JsonBlock):
                continue  # no response: nothing was delivered
            try:
                response = response_from_dict(result.content[0].data)
            except ValueError:
                continue  # not a response the gateway could read: it was not delivered
            quota.charge(op.logical_key, tokens_of(response))
        return quota

    def charge(self, key: str, tokens: int) -> None:
        self._used[key] = tokens

    @property
    def used(self) -> int:
        return sum(self._used.values())

    def refusal(self, turn: int) -> OperationError | None:
        """The error that ends an invocation about to make a model call, if the quota is spent."""
        if self.limit is None or self.used < self.limit:
            return None
        return OperationError(
            code="RUN_BUDGET_EXHAUSTED", category="business",
            message=f"the run used {self.used} of its {self.limit} tokens before turn {turn}; "
            "raise limits.max_total_tokens of the agent the run started with")
