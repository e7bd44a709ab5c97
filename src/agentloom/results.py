"""Results: the raw result a handler returns and the envelope a caller receives.

``ToolResult`` is what one capability handler produced (000 §2.2): succeeded,
failed or unknown, with content blocks (text / json / artifact_ref). The
``OperationResult`` envelope is what the waiter gets back from the pipeline: it
tells apart a result that was denied *before* execution (no Attempt ever ran),
one denied *after* execution (the raw result is kept and side effects were not
rolled back), succeeded, failed, unknown and cancelled.

The closed sets of the durable rows are declared here, once: ``Outcome`` (an envelope),
``OperationPhase`` (``operations.phase``), ``RunStatus`` and ``TerminalRunStatus`` (``runs.status``).

A stored result is named for ``result_read`` by a *result ref*, ``res:<operation_id>``
(the call's whole text) or ``res:<operation_id>:<part>`` (one stored part, e.g. an
``exec`` stream): ``result_ref`` makes one and ``parse_result_ref`` reads one; nothing
else spells the format.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias, assert_never, get_args

from agentloom.canonical import readable_json
from agentloom.errors import OperationError
from agentloom.text import storable

ResultStatus = Literal["succeeded", "failed", "unknown"]

TerminalRunStatus = Literal["succeeded", "failed", "cancelled", "timed_out"]
"""How a run ended (``runs.status`` once it is terminal; ``RunResult.status``)."""
RunStatus = Literal["running", "succeeded", "failed", "cancelled", "timed_out", "pending",
                    "waiting", "suspended"]
"""A run's ``runs.status``: ``pending`` (submitted, in the queue: no holder yet), ``running``
(lease held, epoch fenced), ``waiting`` (a call waits for a person's answer: nobody holds it),
``suspended`` (a takeover could not confirm the old holder's processes are gone: only
``runs resume --force`` goes on), then one terminal status."""
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
TERMINAL_RUN_STATUSES: frozenset[TerminalRunStatus] = frozenset(get_args(TerminalRunStatus))

OperationPhase = Literal["intent_saved", "hooks_before", "awaiting_approval", "attempt_started",
                         "raw_saved", "hooks_after", "delivered"]
"""The last committed phase of an operation (``operations.phase``, 000 §3.1), in the order
a call goes through them; recovery restarts from it. ``awaiting_approval``: a before-hook
answered ``ask`` and the call waits for a person's answer (``agentloom.approvals``); nothing
has run."""
OPERATION_PHASES: tuple[OperationPhase, ...] = get_args(OperationPhase)


RESULT_REF_PREFIX = "res:"


def result_ref(operation_id: str, part: str | None = None) -> str:
    """The opaque reference ``result_read`` reads a stored result by: the whole text of
    ``operation_id``'s result, or its stored ``part``. Never a storage path."""
    if not operation_id or ":" in operation_id:
        raise ValueError(f"an operation id in a result ref cannot be empty or hold ':', "
                         f"got {operation_id!r}")
    if part is None:
        return f"{RESULT_REF_PREFIX}{operation_id}"
    if not part:
        raise ValueError("a result ref's part cannot be empty")
    return f"{RESULT_REF_PREFIX}{operation_id}:{part}"


def parse_result_ref(ref: str) -> tuple[str, str | None] | None:
    """``(operation_id, part)`` of a ref ``result_ref`` made (``part`` None for the whole
    result); None for any other string."""
    if not ref.startswith(RESULT_REF_PREFIX):
        return None
    operation_id, colon, part = ref[len(RESULT_REF_PREFIX):].partition(":")
    if not operation_id or (colon and not part):
        return None
    return operation_id, part if colon else None


def rendered_json(data: Any) -> str:
    """A JSON block as text: what ``ToolResult.text`` shows and ``result_read`` reads."""
    return readable_json(data)


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactRef:
    """A reference to a stored artifact (a workspace file or a system blob), never a host path."""

    ref: str
    media_type: str = "application/octet-stream"
    size: int | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "media_type": self.media_type, "size": self.size, "name": self.name}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArtifactRef:
        return cls(
            ref=data["ref"],
            media_type=data.get("media_type", "application/octet-stream"),
            size=data.get("size"),
            name=data.get("name"),
        )


@dataclass(frozen=True, slots=True)
class TextBlock:
    """A content block of plain text in a ``ToolResult``."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class JsonBlock:
    """A content block holding a JSON value in a ``ToolResult``."""

    data: Any
    type: Literal["json"] = "json"


@dataclass(frozen=True, slots=True)
class ArtifactBlock:
    """A content block referring to an artifact (a file or blob) by ``ArtifactRef`` instead of
    carrying its bytes."""

    artifact: ArtifactRef
    type: Literal["artifact_ref"] = "artifact_ref"


ContentBlock: TypeAlias = TextBlock | JsonBlock | ArtifactBlock


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, JsonBlock):
        return {"type": "json", "data": block.data}
    if isinstance(block, ArtifactBlock):
        return {"type": "artifact_ref", "artifact": block.artifact.to_dict()}
    assert_never(block)


def block_from_dict(data: dict[str, Any]) -> ContentBlock:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data["text"]))
    if kind == "json":
        return JsonBlock(data.get("data"))
    if kind == "artifact_ref":
        return ArtifactBlock(ArtifactRef.from_dict(data["artifact"]))
    raise ValueError(f"unknown content block type {kind!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The raw outcome of one capability execution (000 §2.2).

    A ``succeeded`` result carries no error; ``failed`` and ``unknown`` always do,
    so a caller can never read an uncertain outcome as a success.
    """

    status: ResultStatus
    content: tuple[ContentBlock, ...] = ()
    error: OperationError | None = None
    artifacts: tuple[ArtifactRef, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in ("succeeded", "failed", "unknown"):
            raise ValueError(f"unknown result status {self.status!r}")
        if self.status == "succeeded" and self.error is not None:
            raise ValueError("a succeeded ToolResult cannot carry an error")
        if self.status != "succeeded" and self.error is None:
            raise ValueError(f"a {self.status} ToolResult must carry an OperationError")
        object.__setattr__(self, "content", tuple(self.content))
        object.__setattr__(self, "artifacts", tuple(self.artifacts))

    @classmethod
    def success(
        cls,
        value: Any = None,
        *,
        artifacts: tuple[ArtifactRef, ...] | list[ArtifactRef] = (),
        metadata: dict[str, Any] | None = None,
    ) -> ToolResult:
        """A succeeded result: ``str`` becomes a text block, anything else a JSON block."""
        content: tuple[ContentBlock, ...]
        if value is None:
            content = ()
        elif isinstance(value, str):
            content = (TextBlock(value),)
        elif isinstance(value, TextBlock | JsonBlock | ArtifactBlock):
            content = (value,)
        else:
            content = (JsonBlock(value),)
        return cls(
            status="succeeded",
            content=content,
            artifacts=tuple(artifacts),
            metadata=dict(metadata or {}),
        )

    @classmethod
    def failure(
        cls,
        error: OperationError | str,
        *,
        category: Literal[
            "validation", "permission", "not_found", "conflict", "business", "protocol"
        ] = "business",
        code: str = "TOOL_FAILED",
        metadata: dict[str, Any] | None = None,
    ) -> ToolResult:
        """A failed result whose outcome is known (the tool says nothing was left half done)."""
        if isinstance(error, str):
            error = OperationError(
                code=code, category=category, message=error, external_outcome="known"
            )
        return cls(status="failed", error=error, metadata=dict(metadata or {}))

    @classmethod
    def unknown(cls, error: OperationError) -> ToolResult:
        return cls(status="unknown", error=error)

    def text(self) -> str:
        """All content rendered as text (JSON blocks serialised)."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, JsonBlock):
                parts.append(rendered_json(block.data))
            else:
                parts.append(f"[artifact {block.artifact.ref}]")
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "content": [block_to_dict(b) for b in self.content],
            "error": self.error.to_dict() if self.error else None,
            "artifacts": [a.to_dict() for a in self.artifacts],
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResult:
        error = data.get("error")
        return cls(
            status=data["status"],
            content=tuple(block_from_dict(b) for b in data.get("content") or ()),
            error=OperationError.from_dict(error) if error else None,
            artifacts=tuple(ArtifactRef.from_dict(a) for a in data.get("artifacts") or ()),
            metadata=dict(data.get("metadata") or {}),
        )


Outcome = Literal[
    "succeeded",
    "failed",
    "unknown",
    "denied_before_execution",
    "denied_after_execution",
    "cancelled",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
TERMINAL_OUTCOMES: frozenset[str] = frozenset(OUTCOMES)

SIDE_EFFECTS_NOT_ROLLED_BACK = (
    "denied after execution: the capability already ran and its side effects were not rolled back"
)


def storable_result(result: ToolResult) -> ToolResult:
    """``result`` with every code point no store can hold (a lone surrogate, NUL) replaced
    by U+FFFD (``agentloom.text``), and the count in ``metadata["text_replaced"]``; the same
    object when nothing needed replacing."""
    total = 0
    blocks: list[ContentBlock] = []
    for block in result.content:
        if isinstance(block, TextBlock):
            text, n = storable(block.text)
            blocks.append(TextBlock(text) if n else block)
        elif isinstance(block, JsonBlock):
            data, n = storable(block.data)
            blocks.append(JsonBlock(data) if n else block)
        else:
            ref, n = storable(block.artifact.to_dict())
            blocks.append(ArtifactBlock(ArtifactRef.from_dict(ref)) if n else block)
        total += n
    artifacts = []
    for artifact in result.artifacts:
        ref, n = storable(artifact.to_dict())
        artifacts.append(ArtifactRef.from_dict(ref) if n else artifact)
        total += n
    error = result.error
    if error is not None:
        cleaned, n = storable({"message": error.message, "details": error.details,
                               "provider_code": error.provider_code})
        if n:
            error = replace(error, **cleaned)
            total += n
    metadata, n = storable(result.metadata)
    total += n
    if not total:
        return result
    return ToolResult(status=result.status, content=tuple(blocks), error=error,
                      artifacts=tuple(artifacts), metadata={**metadata, "text_replaced": total})


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationResult:
    """The response envelope a waiter receives for one logical call.

    ``result`` is the *effective* result (after post-hooks); ``raw`` is what the
    handler returned, kept when a post-hook denied delivery. A result denied
    before execution has ``attempts == 0`` and neither raw nor result.
    ``result_ref`` names the stored full text of ``describe()`` when the context kept
    only a preview of it (it was longer than the context's preview limit), else None:
    a ref in it always reads.
    """

    operation_id: str
    capability: str
    outcome: Outcome
    result: ToolResult | None = None
    raw: ToolResult | None = None
    error: OperationError | None = None
    reason: str | None = None
    attempts: int = 0
    executed_arguments: dict[str, Any] | None = None
    proposed_arguments: dict[str, Any] | None = None
    result_ref: str | None = None

    @property
    def denied(self) -> bool:
        return self.outcome in ("denied_before_execution", "denied_after_execution")

    @property
    def succeeded(self) -> bool:
        return self.outcome == "succeeded"

    @property
    def side_effects_rolled_back(self) -> bool:
        """Always False: AgentLoom never claims to undo an effect that happened."""
        return False

    def describe(self) -> str:
        """A one-line, model-facing account of what happened."""
        message = self.error.message if self.error else ""
        match self.outcome:
            case "succeeded":
                return self.result.text() if self.result else ""
            case "denied_before_execution":
                return f"denied before execution (nothing ran): {self.reason or 'no reason given'}"
            case "denied_after_execution":
                return f"{SIDE_EFFECTS_NOT_ROLLED_BACK}: {self.reason or 'no reason given'}"
            case "unknown":
                return f"outcome unknown (it may or may not have taken effect): {message}"
            case "failed" | "cancelled":
                return f"{self.outcome}: {message}"
            case _:
                assert_never(self.outcome)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation_id": self.operation_id,
            "capability": self.capability,
            "outcome": self.outcome,
            "result": self.result.to_dict() if self.result else None,
            "raw": self.raw.to_dict() if self.raw else None,
            "error": self.error.to_dict() if self.error else None,
            "reason": self.reason,
            "attempts": self.attempts,
            "executed_arguments": self.executed_arguments,
            "proposed_arguments": self.proposed_arguments,
            "result_ref": self.result_ref,
            "side_effects_rolled_back": False,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OperationResult:
        result, raw, error = data.get("result"), data.get("raw"), data.get("error")
        return cls(
            operation_id=data["operation_id"],
            capability=data["capability"],
            outcome=data["outcome"],
            result=ToolResult.from_dict(result) if result else None,
            raw=ToolResult.from_dict(raw) if raw else None,
            error=OperationError.from_dict(error) if error else None,
            reason=data.get("reason"),
            attempts=int(data["attempts"]) if "attempts" in data else 0,
            executed_arguments=data.get("executed_arguments"),
            proposed_arguments=data.get("proposed_arguments"),
            result_ref=data.get("result_ref"),
        )
