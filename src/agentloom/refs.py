"""Trusted references shared by every layer (core): who owns a capability use, and whom a run
is done for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerRef:
    """The typed owner of a run's capability use: an agent or a workflow, in a space."""

    kind: Literal["agent", "workflow"]
    id: str
    space_id: str = "default"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.id, "space_id": self.space_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeRef:
    """The workflow node a call is made for (000 §2.1.4, issue 37): the workflow run, the
    node's name in its workflow and the activation's attempt. ``task_id`` is the call
    context's ``node_task_id`` (``<workflow run>/n/<name>/<attempt>``, the node's logical
    key)."""

    workflow_run_id: str
    name: str
    attempt: int

    @property
    def task_id(self) -> str:
        return f"{self.workflow_run_id}/n/{self.name}/{self.attempt}"

    def to_dict(self) -> dict[str, str | int]:
        return {"workflow_run_id": self.workflow_run_id, "name": self.name,
                "attempt": self.attempt}


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Whom a run is done for (the host's identity, issue 18): an ``actor`` in a ``project``.
    Every run, session and workspace the host creates is owned by one; another principal
    neither sees nor controls it. ``None`` where a run is started from the CLI or Python."""

    actor: str
    project: str

    def to_dict(self) -> dict[str, str]:
        return {"actor": self.actor, "project": self.project}
