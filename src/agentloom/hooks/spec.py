"""Hook specs and matchers: which hook runs at which point, in a fixed order."""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field
from typing import Literal, get_args

from agentloom.canonical import canonical_ascii_json
from agentloom.hooks.decision import ExecutionStatus, could_not_decide

Timing = Literal["before", "after"]
OnFailure = Literal["allow", "deny"]
FAILURE_STATUSES: frozenset[ExecutionStatus] = frozenset(
    s for s in get_args(ExecutionStatus) if could_not_decide(s))
"""The hook statuses ``on_failure`` applies to: the hook could not decide."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookMatch:
    """All given fields must match; ``None`` matches anything. ``capability`` is a glob."""

    role: str | None = None
    capability: str | None = None
    purpose: str | None = None
    status: str | None = None

    def matches(
        self, *, role: str | None, capability: str, purpose: str | None, status: str | None
    ) -> bool:
        if self.role is not None and self.role != role:
            return False
        if self.capability is not None and not fnmatch.fnmatchcase(capability, self.capability):
            return False
        if self.purpose is not None and self.purpose != purpose:
            return False
        return not (self.status is not None and status is not None and self.status != status)


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerRef:
    """Where the hook's code is: ``kind: python`` with ``ref: "module:function"`` for now."""

    kind: str = "python"
    ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HookSpec:
    """One compiled hook: its id, timing (before / after), event type, matcher, handler,
    timeout and ``on_failure``. Frozen into the release; its order in the chain is its
    position in the configuration."""

    hook_id: str
    timing: Timing
    event: str = "tool"
    match: HookMatch = field(default_factory=HookMatch)
    handler: HandlerRef
    timeout_s: float = 10.0
    on_failure: OnFailure = "allow"
    """``allow`` (the spec's fail-open) or ``deny``: when the hook fails, times out, returns
    no valid decision, is ``indeterminate`` after a crash or its patch is dropped, the call is
    denied."""

    def to_dict(self) -> dict[str, object]:
        return {
            "hook_id": self.hook_id,
            "timing": self.timing,
            "event": self.event,
            "match": {
                "role": self.match.role,
                "capability": self.match.capability,
                "purpose": self.match.purpose,
                "status": self.match.status,
            },
            "handler": {"kind": self.handler.kind, "ref": self.handler.ref},
            "timeout_s": self.timeout_s,
            "on_failure": self.on_failure,
        }


def config_version(specs: tuple[HookSpec, ...]) -> str:
    raw = canonical_ascii_json([s.to_dict() for s in specs])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
