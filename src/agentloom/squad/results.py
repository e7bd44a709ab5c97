"""A node's step result, materialised from its call's envelope (003 F05).

The audited library turned a step that carried only state patches into a failure, and one
that failed *with* patches into a success; it decided a step interrupted by a crash from the
files it found on disk. Here a node's outcome comes from its one committed envelope only:

==============================  ==========================================================
the envelope                    the node
==============================  ==========================================================
succeeded, with content         ``succeeded``; output = the result's text
succeeded, patches only         ``succeeded``; output ``""``; its patches are applied
succeeded, nothing at all       ``failed`` ``NODE_EMPTY_RESULT`` (the reason says so)
failed (patches or not)         ``failed`` with the call's error; its patches are dropped
denied (a hook, a person)       ``failed`` with the reason (a wait node: output ``rejected``)
unknown (no raw result)         ``waiting``: a person decides; the call is listed as an
                                effect that may or may not have happened
==============================  ==========================================================

Patches are the blackboard entries a result carries in ``metadata["patches"]`` (a mapping of
plain string keys to JSON values): applied in the same commit as the node's record, or never.

Owns: the mapping above. Does not own: running the call (``squad.driver``), storing patches
(``squad.collab``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agentloom.errors import OperationError
from agentloom.results import OperationResult

__all__ = ["NodeOutcome", "NodeStatus", "materialise"]

NodeStatus: TypeAlias = Literal["succeeded", "failed", "waiting"]
ATTEMPTS_KEY = "attempts"  # in a node record's data: how many Attempts its call made


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """How one activation of a node ended (``waiting``: it waits for a person)."""

    status: NodeStatus
    output: str = ""
    error: OperationError | None = None
    patches: Mapping[str, Any] = field(default_factory=dict)
    unknown: tuple[dict[str, Any], ...] = ()  # calls whose effect is not known
    operation_id: str | None = None
    attempts: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def to_data(self) -> dict[str, Any]:
        """What the node's record keeps (``workflow_nodes.data``)."""
        out: dict[str, Any] = {"output": self.output, ATTEMPTS_KEY: self.attempts}
        if self.error is not None:
            out["error"] = self.error.to_dict()
        if self.unknown:
            out["unknown"] = list(self.unknown)
        if self.patches:
            out["patches"] = sorted(self.patches)
        return out

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> NodeOutcome:
        data = row.get("data") or {}
        error = data.get("error")
        attempts = data.get(ATTEMPTS_KEY)
        status = row["status"]
        assert status in ("succeeded", "failed", "waiting")
        return cls(status=status, output=str(data.get("output") or ""),
                   error=OperationError.from_dict(error) if error else None,
                   unknown=tuple(data.get("unknown") or ()),
                   operation_id=row.get("operation_id"), attempts=int(attempts or 0))


def materialise(node: str, envelope: OperationResult, *, wait: bool = False) -> NodeOutcome:
    """The outcome of ``node`` from its call's terminal ``envelope`` (module doc).
    ``wait``: the node is a wait for a person — a denial is its answer ``rejected``."""
    base: dict[str, Any] = {"operation_id": envelope.operation_id,
                            "attempts": envelope.attempts}
    if envelope.outcome == "succeeded":
        result = envelope.result
        patches = _patches(result.metadata if result is not None else {})
        text = result.text() if result is not None else ""
        if not text.strip() and not patches and not (result is not None and result.content):
            return NodeOutcome("failed", error=OperationError(
                code="NODE_EMPTY_RESULT", category="validation", external_outcome="known",
                message=f"node {node!r} returned an empty result (no content and no patches); "
                "an empty result is not a success"), **base)
        return NodeOutcome("succeeded", text, patches=patches, **base)
    if envelope.denied:
        if wait and envelope.outcome == "denied_before_execution":
            return NodeOutcome("succeeded", "rejected", **base)
        return NodeOutcome("failed", error=envelope.error or OperationError(
            code="NODE_DENIED", category="permission", external_outcome="known",
            message=f"node {node!r} was {envelope.outcome.replace('_', ' ')}: "
            f"{envelope.reason or 'no reason given'}"), **base)
    if envelope.outcome == "unknown":
        error = envelope.error or OperationError(
            code="NODE_OUTCOME_UNKNOWN", category="unknown", external_outcome="unknown",
            message=f"node {node!r}: the outcome of its call is not known")
        return NodeOutcome("waiting", error=error, unknown=({
            "operation_id": envelope.operation_id, "capability": envelope.capability,
            "arguments": envelope.executed_arguments or envelope.proposed_arguments or {},
        },), **base)
    return NodeOutcome("failed", error=envelope.error or OperationError(
        code="NODE_FAILED", category="unknown", external_outcome="known",
        message=f"node {node!r} failed"), **base)


def _patches(metadata: Mapping[str, Any]) -> dict[str, Any]:
    patches = metadata.get("patches")
    if not isinstance(patches, Mapping):
        return {}
    return {str(k): v for k, v in patches.items() if isinstance(k, str)}
