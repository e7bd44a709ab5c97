"""Hook specs and matchers: which hook runs at which point, in a fixed order.

Owns: ``HookSpec`` (one compiled hook), ``HookMatch``, ``HookHandler`` (the base of every
handler kind's spec) and the configuration version. Does not own: the handler kinds — each
one's spec and runner is ``hooks/handlers/<kind>.py``, listed in ``hooks.handlers.registry``.
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from agentloom.canonical import canonical_ascii_json
from agentloom.hooks.decision import ExecutionStatus, could_not_decide

Timing = Literal["before", "after"]
OnFailure = Literal["allow", "deny"]
FAILURE_STATUSES: frozenset[ExecutionStatus] = frozenset(
    s for s in get_args(ExecutionStatus) if could_not_decide(s))
"""The hook statuses ``on_failure`` applies to: the hook could not decide."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookMatch:
    """All given fields must match; ``None`` matches anything. ``capability`` is a glob.
    ``node`` is the name of the workflow node the call serves, in its workflow (issue 37): a
    call made for no node never matches a hook that names one."""

    role: str | None = None
    capability: str | None = None
    purpose: str | None = None
    status: str | None = None
    node: str | None = None

    def matches(
        self, *, role: str | None, capability: str, purpose: str | None, status: str | None,
        node: str | None = None,
    ) -> bool:
        if self.role is not None and self.role != role:
            return False
        if self.node is not None and self.node != node:
            return False
        if self.capability is not None and not fnmatch.fnmatchcase(capability, self.capability):
            return False
        if self.purpose is not None and self.purpose != purpose:
            return False
        return not (self.status is not None and status is not None and self.status != status)


Pairs = tuple[tuple[str, str], ...]
"""A small ordered mapping kept hashable in a frozen spec: ``(name, value)`` pairs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookHandler:
    """Where a hook's code is: the base of every handler kind's spec, one frozen dataclass per
    kind (``hooks/handlers/<kind>.py``: ``PythonHookHandler``, ``CommandHookHandler``,
    ``HttpHookHandler``, ``McpHookHandler``, or one registered with ``register_hook_kind``).
    A kind's spec narrows ``kind`` to ``Literal["<kind>"]`` with that default and adds its own
    fields; the ``HookManager`` picks the runner by ``kind``."""

    kind: str

    def to_dict(self) -> dict[str, object]:
        """The handler as recorded in the hook configuration's version (part of its digest): by
        default ``kind`` and every compared field. A kind whose fields hold secrets overrides it
        (an http handler masks literal header values)."""
        return {"kind": self.kind, **{f.name: getattr(self, f.name) for f in fields(self)
                                      if f.compare and f.name != "kind"}}


def HandlerRef(*, kind: str = "python", **values: Any) -> HookHandler:
    """The spec of handler kind ``kind`` built from its fields: ``HandlerRef(ref="m:f")`` is
    ``PythonHookHandler(ref="m:f")``, ``HandlerRef(kind="http", url=...)`` an
    ``HttpHookHandler``. Kept for the published path and for specs read from data; new code
    names the kind's class.

    Raises:
        ValueError: ``kind`` is not registered, or the fields do not fit it.
        TypeError: a field the kind does not have.
    """
    from agentloom.hooks.handlers.registry import build_handler  # the kinds import this module

    return build_handler(kind=kind, **values)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookSpec:
    """One compiled hook: its id, timing (before / after), event type, matcher, handler,
    timeout and ``on_failure``. Frozen into the release; its order in the chain is its
    position in the configuration."""

    hook_id: str
    timing: Timing
    event: str = "tool"
    match: HookMatch = field(default_factory=HookMatch)
    handler: HookHandler
    timeout_s: float = 10.0
    on_failure: OnFailure = "allow"
    """``allow`` (the spec's fail-open) or ``deny``: when the hook fails, times out, returns
    no valid decision, is ``indeterminate`` after a crash or its patch is dropped, the call is
    denied."""

    def to_dict(self) -> dict[str, object]:
        """The hook as recorded in the configuration's version. ``match.node`` is a key only
        when set, so a hook without it keeps the digest it had before nodes could be matched
        (a changed digest would make every stored release look new)."""
        match: dict[str, object] = {
            "role": self.match.role,
            "capability": self.match.capability,
            "purpose": self.match.purpose,
            "status": self.match.status,
        }
        if self.match.node is not None:
            match["node"] = self.match.node
        return {
            "hook_id": self.hook_id,
            "timing": self.timing,
            "event": self.event,
            "match": match,
            "handler": self.handler.to_dict(),
            "timeout_s": self.timeout_s,
            "on_failure": self.on_failure,
        }


def config_version(specs: tuple[HookSpec, ...]) -> str:
    raw = canonical_ascii_json([s.to_dict() for s in specs])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
