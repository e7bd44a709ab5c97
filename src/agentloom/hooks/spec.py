"""Hook specs and matchers: which hook runs at which point, in a fixed order."""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from agentloom.canonical import canonical_ascii_json
from agentloom.hooks.decision import ExecutionStatus, could_not_decide
from agentloom.secret_refs import masked

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


HandlerKind = Literal["python", "command", "http", "mcp"]
"""The handler kinds a hook may have (000 §5.4)."""
HANDLER_KINDS: tuple[HandlerKind, ...] = get_args(HandlerKind)

Pairs = tuple[tuple[str, str], ...]
"""A small ordered mapping kept hashable in a frozen spec: ``(name, value)`` pairs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerRef:
    """Where the hook's code is, by ``kind``:

    - ``python``: ``ref`` ``"module:function"``, called in this process;
    - ``command``: ``command`` (a line for ``sh -c``) or ``argv`` (no shell), run in the
      sandbox with exactly ``env`` (values may hold ``${VAR}``, read from the runtime's
      environment when the hook runs, never stored), started in ``project_dir``; its
      ``format`` says how the event and its answer are written (``agentloom``, or
      ``claude-code`` for a Claude Code hook script);
    - ``http``: a POST to ``url`` with ``headers`` (values may hold ``${VAR}``);
      private and loopback addresses only with ``allow_private``;
    - ``mcp``: ``tools/call`` of ``tool`` on MCP server ``server`` (its configuration in
      ``server_config``, relative paths read from ``project_dir``), on the run's session.

    Raises:
        ValueError: fields that do not fit the kind (a ``ConfigError`` at the config's level).
    """

    kind: str = "python"
    ref: str = ""
    command: str | None = None
    argv: tuple[str, ...] | None = None
    env: Pairs = ()
    project_dir: str | None = None
    url: str | None = None
    headers: Pairs = ()
    allow_private: bool = False
    format: str = "agentloom"
    server: str | None = None
    tool: str | None = None
    server_config: object = field(default=None, compare=False, repr=False)
    """The ``mcp`` server's ``StdioServerConfig`` / ``HttpServerConfig`` (not part of the
    recorded handler: its ``server`` name is); without it the hook fails when it runs."""

    def __post_init__(self) -> None:
        for name in ("env", "headers"):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, tuple(value.items()))
        if self.argv is not None and not isinstance(self.argv, tuple):
            object.__setattr__(self, "argv", tuple(self.argv))
        if self.kind == "command" and (self.command is None) == (self.argv is None):
            raise ValueError("a command hook needs exactly one of command or argv")
        if self.format not in ("agentloom", "claude-code"):
            raise ValueError(f"unknown handler format {self.format!r}; use agentloom or "
                             "claude-code")
        if self.kind == "http" and not self.url:
            raise ValueError("an http hook needs a url")
        if self.kind == "mcp" and not (self.server and self.tool):
            raise ValueError("an mcp hook needs a server and a tool")

    def to_dict(self) -> dict[str, object]:
        """The handler as recorded in the hook configuration's version. ``${VAR}`` references
        are kept as written; a literal header value is replaced by ``[redacted]``."""
        out: dict[str, object] = {"kind": self.kind, "ref": self.ref}
        if self.kind == "command":
            out.update(command=self.command, argv=None if self.argv is None else list(self.argv),
                       env=dict(self.env), project_dir=self.project_dir)
            if self.format != "agentloom":  # the versions of earlier configs stay the same
                out["format"] = self.format
        elif self.kind == "http":
            out.update(url=self.url, allow_private=self.allow_private,
                       headers=masked(dict(self.headers)))
        elif self.kind == "mcp":
            out.update(server=self.server, tool=self.tool)
        return out


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
            "handler": self.handler.to_dict(),
            "timeout_s": self.timeout_s,
            "on_failure": self.on_failure,
        }


def config_version(specs: tuple[HookSpec, ...]) -> str:
    raw = canonical_ascii_json([s.to_dict() for s in specs])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
