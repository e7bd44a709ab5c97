"""Errors: the one error value every operation reports, and the exception root.

``OperationError`` is a *value*: it travels inside results, is stored with the
operation and may be shown to the model (its message never holds a secret).
The exceptions are raised to the *caller* of the runtime. Every public exception in
``agentloom`` sits under one root (pinned by ``tests/test_errors_tree.py``); each carries an
``OperationError`` and so a stable ``code`` (default in brackets)::

    AgentLoomError                   root; carries an OperationError        [AGENTLOOM_ERROR]
    ├── ConfigError                  a bad configuration, at load / compile  [CONFIG_INVALID]
    │   └── config._templates.TemplateError  a workflow template that names nothing known
    ├── extras.MissingExtra          a feature whose optional extra is not installed [EXTRA_MISSING]
    ├── CatalogError                 a capability catalog that does not compile
    ├── RegistrationError            a second owner for one event type, a bad handler
    ├── StoreError                   a required commit did not happen (never fail-open)
    │   ├── FencedOut                the run's lease epoch moved on: a stale writer
    │   └── RevisionConflict         compare-and-set on a revision lost
    ├── store.owners.OwnerDeleted    a run or session of a deleted owner      [OWNER_DELETED]
    ├── bus.BatchError               request_many: a member hit a runtime failure [BATCH_FAILED]
    ├── hooks.patch.PatchInvalid     a hook's patch that cannot be accepted  [HOOK_PATCH_*]
    ├── hooks.decision.InvalidDecision  a hook returned no valid decision [HOOK_DECISION_INVALID]
    ├── hooks.threads.HookThreadsExhausted  too many abandoned sync hooks still running
    ├── hooks.runners._common.HookRunFailed  an out-of-process hook ran and failed
    │   └── HookStartFailed          a command hook that could not start (its sandbox refused)
    ├── hooks.claude.shim.ClaudeHookError  a Claude Code hook's answer AgentLoom cannot honour
    ├── hooks.claude.tools.ClaudeMappingError  a Claude Code name or field with no exact mapping
    │   └── settings.ClaudeImportError  a settings file (or part) that cannot be imported
    ├── approvals.errors.ApprovalPending  a before-hook asked: the call waits for a person
    ├── approvals.errors.ApprovalError  an answer that cannot be recorded
    ├── agent.RunError               start / resume / stop a run             [RUN_ERROR, …]
    │   └── runtime.SessionBusy      another run occupies the session        [SESSION_BUSY]
    ├── agent.sessions.SessionError  a session used from another scope
    ├── agent.owners.OwnerDeletionPending  an owner deletion that stopped before the end
    ├── agent.fork.ForkError         a run that cannot be forked there  [FORK_*, OPERATION_NOT_FOUND]
    ├── models.errors.ModelAttemptError  one model attempt failed (classified)
    ├── models.gateway.ModelCallFailed   the model call failed after its retries
    ├── models.offline.ScriptError   the scripted test model ran out / was misused
    ├── sandbox.SandboxError         a command could not be confined or run (codes in
    │                                sandbox/errors.py)
    ├── workspace.WorkspaceError     every file-tool failure (codes in workspace/_errors.py)
    ├── workspace.scope.WorkspaceScopeError  a scope that cannot be resolved
    ├── squad.artifacts.ArtifactError  a workflow artifact not recorded or read [ARTIFACT_*]
    ├── mcp.errors.McpError          an MCP server not started, reached or understood
    ├── mcp.claude_import.McpImportError  a .mcp.json (or entry) that cannot be imported
    ├── a2a.errors.A2aError          a remote agent whose card or answer cannot be used
    ├── skills.errors.SkillImportError  a Skill import refused (nothing stored)
    ├── command.ports.CommandNotExecuted  a command handler that did nothing
    ├── command.bus.ReceiptNotFound  no receipt of that id for this principal
    ├── host.problems.Problem        a failed HTTP request, as its problem-details body
    ├── host.keys.AuthError          a request without a valid API key       [UNAUTHENTICATED]
    ├── host.keys.ApiKeyError        a key command that cannot be done       [KEY_NOT_FOUND, …]
    ├── cli.jsonl.JsonlCorrupt       (also a ValueError) a damaged JSONL file [JSONL_CORRUPT]
    └── cli.errors.CliFailure        the CLI's own failure, exit 1           [CLI_FAILED]
        └── UsageFailure             the command cannot use its input, exit 2 [USAGE_ERROR]

Control-flow signals (``asyncio.CancelledError``) are not errors and are not under the root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

ErrorCategory = Literal[
    "validation",
    "permission",
    "not_found",
    "conflict",
    "transport",
    "rate_limit",
    "timeout",
    "business",
    "protocol",
    "cancelled",
    "unknown",
]
ERROR_CATEGORIES: tuple[str, ...] = get_args(ErrorCategory)

ExternalOutcome = Literal["not_started", "known", "unknown"]
EXTERNAL_OUTCOMES: tuple[str, ...] = get_args(ExternalOutcome)

ErrorPhase = Literal["validate", "route", "hooks", "ensure", "execute", "deliver"]
"""Where an operation failed: its request did not ``validate`` (arguments, schema, an offered
tool), the bus could not ``route`` it, a ``hooks`` decision denied it, its sandbox could not
``ensure`` the command's confinement, it failed to ``execute`` (the spec's connect / send /
receive / execute of an outside call are all ``execute`` here), or its result
could not be delivered, ``deliver`` (an invalid response, a stop before delivery)."""
ERROR_PHASES: tuple[str, ...] = get_args(ErrorPhase)

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 [REDACTED]"),
    (re.compile(r"\b(sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{8,}"), "[REDACTED]"),
    (  # also a URL's query: postgresql://host/db?password=…, libpq's sslpassword=…
        re.compile(
            r"(?i)\b(api[_-]?key|apikey|token|secret|(?:ssl)?password|passwd|authorization)"
            r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
        ),
        r"\1\2[REDACTED]",
    ),
    # A URL's password: scheme://user:***@host. It runs to the authority's last "@" (as
    # urllib splits it), so a password holding an unencoded "@" is masked whole.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#\s:@]*):([^/?#\s]*)@"), r"\1\2:***@"),
)


def redact_secrets(text: str) -> str:
    """Return ``text`` with credentials masked: bearer tokens, API keys, ``key=value``
    secrets and a URL's password (``postgresql://user:***@host/db``).

    The one redaction of the code base: error messages, the CLI's hints, errors and log lines.
    """
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationError:
    """What went wrong with one operation, in the spec's closed vocabulary (000 §2.2).

    ``message`` is scrubbed of secrets on construction, so it is safe to store and
    to hand to a model. ``external_outcome`` says whether the outside world may
    have been changed: ``not_started`` (certainly not), ``known`` (the remote
    answered, so its effect is known) or ``unknown`` (a request may have landed).
    """

    code: str
    category: ErrorCategory
    message: str
    phase: ErrorPhase = "execute"
    external_outcome: ExternalOutcome = "not_started"
    provider_code: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.category not in ERROR_CATEGORIES:
            raise ValueError(f"unknown error category {self.category!r}")
        if self.phase not in ERROR_PHASES:
            raise ValueError(f"unknown error phase {self.phase!r}; known: {list(ERROR_PHASES)}")
        if self.external_outcome not in EXTERNAL_OUTCOMES:
            raise ValueError(f"unknown external_outcome {self.external_outcome!r}")
        object.__setattr__(self, "message", redact_secrets(self.message))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "category": self.category,
            "message": self.message,
            "phase": self.phase,
            "external_outcome": self.external_outcome,
            "provider_code": self.provider_code,
        }
        if self.details:
            out["details"] = self.details
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OperationError:
        return cls(
            code=data["code"],
            category=data["category"],
            message=data["message"],
            phase=data.get("phase", "execute"),
            external_outcome=data.get("external_outcome", "not_started"),
            provider_code=data.get("provider_code"),
            details=dict(data.get("details") or {}),
        )


class AgentLoomError(Exception):
    """Root of every exception AgentLoom raises to its caller."""

    default_code = "AGENTLOOM_ERROR"
    default_category: ErrorCategory = "unknown"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        category: ErrorCategory | None = None,
        phase: ErrorPhase = "execute",
        external_outcome: ExternalOutcome = "not_started",
    ) -> None:
        self.error = OperationError(
            code=code or self.default_code,
            category=category or self.default_category,
            message=message,
            phase=phase,
            external_outcome=external_outcome,
        )
        super().__init__(self.error.message)

    @property
    def code(self) -> str:
        return self.error.code


class ConfigError(AgentLoomError):
    """A configuration that cannot be used, found at load or compile time — never mid-run.
    The message names the key and says how to fix it."""

    default_code = "CONFIG_INVALID"
    default_category: ErrorCategory = "validation"


class CatalogError(AgentLoomError):
    """A capability catalog that does not compile: a bad schema, a duplicate key, a remote
    ``$ref`` (000 §2.1)."""

    default_code = "CATALOG_INVALID"
    default_category: ErrorCategory = "validation"


class RegistrationError(AgentLoomError):
    """A second owner for one event type, or a handler that cannot be registered on the
    bus; raised at wiring time, never for a request."""

    default_code = "REGISTRATION_CONFLICT"
    default_category: ErrorCategory = "conflict"


class StoreError(AgentLoomError):
    """A commit the runtime needs did not happen. Never fail-open: the operation stops here
    rather than run on unrecorded (DESIGN §3)."""

    default_code = "STORE_FAILED"
    default_category: ErrorCategory = "unknown"


class FencedOut(StoreError):
    """The run's lease epoch moved on: this writer is stale and another worker owns the run.
    Nothing it commits lands (DESIGN §4)."""

    default_code = "LEASE_FENCED"
    default_category: ErrorCategory = "conflict"


class RevisionConflict(StoreError):
    """A compare-and-set on a revision (``base_revision``) lost to a concurrent writer;
    re-read and try again."""

    default_code = "REVISION_CONFLICT"
    default_category: ErrorCategory = "conflict"
