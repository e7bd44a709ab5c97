"""Trusted references shared by every layer (core): who owns a capability use."""

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
