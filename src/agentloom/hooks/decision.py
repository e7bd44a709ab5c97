"""Hook decisions and outcomes (000 §5.1, §5.2).

A hook returns a ``HookDecision`` — or a mapping with the same fields. The
control decision and the patches are validated *separately*: a valid deny stands
even when its patch is invalid.

``ask`` hands the call to a person (issue 17): valid from a before-hook of a tool, model or
delegation call only (``may_ask``), its ``reason`` the question shown; the pipeline records
the call as waiting for an answer (``agentloom.approvals``) and runs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from agentloom.errors import AgentLoomError, ErrorCategory
from agentloom.hooks.patch import (
    ContextPatch,
    PatchInvalid,
    PayloadPatch,
    parse_context_patch,
    parse_payload_patch,
)

Decision = Literal["allow", "deny", "ask"]
ASK_EVENTS = frozenset({"tool", "model", "delegation"})
"""The event types whose before-hooks may answer ``ask``."""
ExecutionStatus = Literal[
    "succeeded", "failed", "timed_out", "invalid", "abandoned", "indeterminate"
]
"""How one hook run ended; ``abandoned``: the run was stopped while it ran (or before)."""


def could_not_decide(status: ExecutionStatus) -> bool:
    """Whether a hook that ended with ``status`` could not decide — the statuses its
    ``on_failure`` applies to (``abandoned`` is the run's stop, not the hook's failure)."""
    match status:
        case "failed" | "timed_out" | "invalid" | "indeterminate":
            return True
        case "succeeded" | "abandoned":
            return False
        case _:
            assert_never(status)


def may_ask(timing: str, event_type: str) -> bool:
    """Whether a hook at ``timing`` of an ``event_type`` call may answer ``ask``."""
    return timing == "before" and event_type in ASK_EVENTS


@dataclass(frozen=True, slots=True)
class HookDecision:
    """What a Python hook returns: ``allow``, ``deny`` or ``ask`` (a before-hook hands the call
    to a person; ``reason`` is the question), an optional ``reason``, and optional
    ``payload_patch`` (JSON Patch on the call's payload or result) and ``context_patch``
    (changes to other context records). A plain dict of the same shape is accepted too.

    A valid deny always stands, even when its patch is invalid (000 §5)."""

    decision: Decision
    payload_patch: PayloadPatch | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None
    context_patch: ContextPatch | Mapping[str, Any] | None = None
    reason: str | None = None

    @classmethod
    def allow(cls, **kwargs: Any) -> HookDecision:
        return cls("allow", **kwargs)

    @classmethod
    def deny(cls, reason: str, **kwargs: Any) -> HookDecision:
        return cls("deny", reason=reason, **kwargs)

    @classmethod
    def ask(cls, question: str | None = None, **kwargs: Any) -> HookDecision:
        """Hand the call to a person with ``question`` (a default question naming the tool
        when None); a patch beside it changes what the person is asked to approve."""
        return cls("ask", reason=question, **kwargs)


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """What one hook run produced, recorded for every hook that ran (or should have)."""

    execution_status: ExecutionStatus
    decision_ref: str | None
    diagnostic_ref: str | None


class InvalidDecision(AgentLoomError):
    """A hook returned no valid control decision (an unknown field, a decision other than
    ``allow`` / ``deny`` / ``ask``, a reason that is not a string, ``ask`` where it is not
    allowed). The hook failed: fail-open for that hook only (000 §5)."""

    default_code = "HOOK_DECISION_INVALID"
    default_category: ErrorCategory = "validation"


@dataclass(frozen=True, slots=True)
class ParsedDecision:
    """A hook's return value after validation: the decision and reason, the normalised patches,
    and ``patch_error`` when the patches were dropped (the decision itself still counts)."""

    decision: Decision
    reason: str | None
    payload_patch: PayloadPatch | None
    context_patch: ContextPatch | None
    patch_error: PatchInvalid | None


def parse_decision(raw: Any) -> ParsedDecision:
    """Validate a hook's return value. Raise ``InvalidDecision`` when there is no valid control
    decision; a bad patch beside a valid decision is reported in ``patch_error`` instead."""
    if isinstance(raw, HookDecision):
        fields: Mapping[str, Any] = {
            "decision": raw.decision,
            "payload_patch": raw.payload_patch,
            "context_patch": raw.context_patch,
            "reason": raw.reason,
        }
    elif isinstance(raw, Mapping):
        fields = raw
        unknown = set(raw) - {"decision", "payload_patch", "context_patch", "reason"}
        if unknown:
            raise InvalidDecision(f"unexpected fields {sorted(unknown)} in hook decision")
    else:
        raise InvalidDecision(
            f"a hook must return a HookDecision or a mapping, got {type(raw).__name__}"
        )
    decision: Decision
    match fields.get("decision"):
        case "allow":
            decision = "allow"
        case "deny":
            decision = "deny"
        case "ask":
            decision = "ask"
        case other:
            raise InvalidDecision(f"decision must be 'allow', 'deny' or 'ask', got {other!r}")
    reason = fields.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise InvalidDecision("reason must be a string")
    payload_patch: PayloadPatch | None = None
    context_patch: ContextPatch | None = None
    patch_error: PatchInvalid | None = None
    try:
        payload_patch = parse_payload_patch(fields.get("payload_patch"))
        context_patch = parse_context_patch(fields.get("context_patch"))
    except PatchInvalid as exc:
        payload_patch, context_patch, patch_error = None, None, exc
    return ParsedDecision(decision, reason, payload_patch, context_patch, patch_error)
