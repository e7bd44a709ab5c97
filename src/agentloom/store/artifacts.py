"""The ``workflow_artifacts`` repository (issue 37): one row per file a workflow node handed on, as a
frozen ``ArtifactRecord``; its reads and the op that writes it.

::

    store.query("workflow_artifacts", run, node, attempt) ──► ArtifactRecord.from_row ──► artifacts_of(…)
    Insert("workflow_artifacts", row, if_absent) ◄── artifact_insert(record)

Columns: ``run_id``, ``node``, ``attempt``, ``path`` (the key: the file's path below the node's
work folder, ``/``-separated), ``digest`` (the sha256 of its bytes: its ``blobs`` row),
``size``, ``source_owner`` (``agent:<id>`` for an agent node's file, ``workflow:<id>`` for a
capability node's: whose content it is, what deleting an owner follows), ``invocation`` (the
node's task id ``<run>/n/<node>/<attempt>``), ``created_at``; ``data``: ``how``
(``outputs`` or ``publish``) and the ``media_type`` guessed from the path.

The write is ``if_absent``: the key is per node, attempt and path, so a replayed publish or an
outputs record after a publish of the same file keeps the first row (never two).

Owns: ``ArtifactRecord``, the reads, the op builder. Does not own: which files are recorded or
when (``squad.artifacts``), the bytes (``store.blobs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentloom.store.ports import Insert, Store

__all__ = ["TABLE", "ArtifactRecord", "artifact_insert", "artifacts_of", "run_artifacts"]

TABLE = "workflow_artifacts"


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactRecord:
    """One file a node's activation handed on, its bytes in the blob ``digest``."""

    run_id: str
    node: str
    attempt: int
    path: str
    digest: str
    size: int
    source_owner: str
    invocation: str
    created_at: float
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ArtifactRecord:
        owner = str(row["source_owner"])
        if not owner.startswith(("agent:", "workflow:")):
            raise ValueError(f"artifact {row['path']!r}: unknown source_owner {owner!r}")
        return cls(run_id=row["run_id"], node=row["node"], attempt=int(row["attempt"]),
                   path=row["path"], digest=row["digest"], size=int(row["size"]),
                   source_owner=owner, invocation=row["invocation"],
                   created_at=float(row["created_at"]), data=row.get("data") or {})

    def to_row(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "node": self.node, "attempt": self.attempt,
                "path": self.path, "digest": self.digest, "size": self.size,
                "source_owner": self.source_owner, "invocation": self.invocation,
                "created_at": self.created_at, "data": dict(self.data)}


def artifact_insert(record: ArtifactRecord) -> Insert:
    """The write of ``record`` (``if_absent``: the first row of a key stays)."""
    return Insert(TABLE, record.to_row(), if_absent=True)


def artifacts_of(store: Store, run_id: str, node: str, attempt: int) -> list[ArtifactRecord]:
    """The artifacts of one activation, by path."""
    rows = store.query(TABLE, {"run_id": run_id, "node": node, "attempt": attempt})
    return sorted((ArtifactRecord.from_row(r) for r in rows), key=lambda a: a.path)


def run_artifacts(store: Store, run_id: str) -> list[ArtifactRecord]:
    """Every artifact row of a run (any activation, succeeded or not), by node, attempt, path."""
    rows = store.query(TABLE, {"run_id": run_id})
    return sorted((ArtifactRecord.from_row(r) for r in rows),
                  key=lambda a: (a.node, a.attempt, a.path))
