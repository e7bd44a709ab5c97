"""The ``blobs`` and ``blob_chunks`` tables: typed reads and the inserts that write them.

::

    store.get("blobs", …)        ──► BlobRecord.from_row ──► get_blob(store, digest)
    store.get("blob_chunks", …)  ──► bytes               ──► chunk(store, digest, seq)
    Insert("blobs", …)           ◄── blob_insert(…)
    Insert("blob_chunks", …)     ◄── chunk_insert(…)

A blob is content-addressed (its ``digest``), so every insert here is ``if_absent``: the
same bytes written twice keep the first row. A chunked blob's ``blobs`` row has empty
``content`` and ``chunk_size`` set, over ``blob_chunks`` rows ``0, 1, …``.

Owns: the rows' shape. Does not own: how a text or a file becomes blobs and is read back a
page at a time (``context.blobs``, ``skills.versions``), nor committing — the op builders
return writes the caller puts in its ``WriteSet``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentloom.store.ports import Insert, Store

__all__ = ["BlobRecord", "blob_insert", "chunk", "chunk_insert", "get_blob"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BlobRecord:
    """One ``blobs`` row: ``size`` bytes; ``content`` holds them unless ``chunk_size`` is set
    (then they are in ``blob_chunks`` of that size, and ``content`` is empty)."""

    digest: str
    size: int
    created_at: float
    content: bytes
    chunk_size: int | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BlobRecord:
        chunk_size = row.get("chunk_size")
        return cls(digest=row["digest"], size=int(row["size"]), created_at=row["created_at"],
                   content=bytes(row["content"]), chunk_size=int(chunk_size) if chunk_size
                   else None)

    @property
    def chunks(self) -> int:
        """How many ``blob_chunks`` rows hold it (0 when it is inline)."""
        return -(-self.size // self.chunk_size) if self.chunk_size else 0


def get_blob(store: Store, digest: str) -> BlobRecord | None:
    """The blob's row, or None when it is not stored."""
    row = store.get("blobs", {"digest": digest})
    return None if row is None else BlobRecord.from_row(row)


def chunk(store: Store, digest: str, seq: int) -> bytes | None:
    """The bytes of chunk ``seq`` of a chunked blob, or None when it is not stored."""
    row = store.get("blob_chunks", {"digest": digest, "seq": seq})
    return None if row is None else bytes(row["content"])


def blob_insert(*, digest: str, size: int, content: bytes, created_at: float,
                chunk_size: int | None = None) -> Insert:
    """The ``blobs`` row (``if_absent``: content-addressed). ``chunk_size`` set: its bytes are
    in ``blob_chunks`` (commit those first) and ``content`` is ``b""``."""
    return Insert("blobs", {"digest": digest, "size": size, "created_at": created_at,
                            "content": content, "chunk_size": chunk_size}, if_absent=True)


def chunk_insert(*, digest: str, seq: int, content: bytes) -> Insert:
    """The ``blob_chunks`` row ``seq`` of a chunked blob (``if_absent``)."""
    return Insert("blob_chunks", {"digest": digest, "seq": seq, "content": content},
                  if_absent=True)

