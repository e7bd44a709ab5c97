"""Text blobs in the store: content-addressed, written once, read back a page at a time.

Owns: how a text becomes ``blobs`` and ``blob_chunks`` rows (their shape is
``store.blobs``'s) and how a page or the whole text is read back. Does not own: deciding
what is stored as a blob (the pipeline's ``stored`` module, ``ContextManager.result_ops``)
or authorising a read (``ResultReadHandler``).

A blob is keyed by the sha256 of its UTF-8 bytes. Up to ``INLINE_LIMIT`` bytes it is one
``blobs`` row holding the bytes. A larger one is a ``blobs`` row with ``chunk_size`` set and
empty ``content`` over ``blob_chunks`` rows of ``CHUNK_SIZE`` bytes: writing it never holds
more than a write set of its bytes at once, and a page read loads one or two chunks::

    blobs(digest, size, content=b"", chunk_size) ─┬─ blob_chunks(digest, 0, bytes[0:1 MiB])
                                                  ├─ blob_chunks(digest, 1, …)
                                                  └─ …

The chunks are committed first, a few per write set (``BlobText.chunk_groups``); the
``blobs`` row goes with the first commit that refers to the blob (``BlobText.row``). So a
``blobs`` row always has all its chunks; a crash in between leaves chunks no row names
(harmless: the next writer of the same text inserts them again, ``if_absent``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentloom.store.blobs import blob_insert, chunk, chunk_insert, get_blob
from agentloom.store.ports import Insert, Op, Store

CHUNK_SIZE = 1 << 20
INLINE_LIMIT = CHUNK_SIZE  # a blob up to this many bytes is one row
GROUP_CHUNKS = 2  # chunks per write set: bounds what one commit holds (and PostgreSQL quotes)


@dataclass(frozen=True, slots=True)
class BlobText:
    """A text to store as a blob: its digest and size in UTF-8 bytes, and the text itself."""

    digest: str
    size: int
    text: str = field(repr=False, compare=False)

    @classmethod
    def of(cls, text: str) -> BlobText:
        """Hash ``text`` a chunk at a time (never the whole text as bytes at once)."""
        digest = hashlib.sha256()
        size = 0
        for piece in utf8_pieces(text, CHUNK_SIZE):
            digest.update(piece)
            size += len(piece)
        return cls(digest.hexdigest(), size, text)

    @property
    def chunked(self) -> bool:
        return self.size > INLINE_LIMIT

    def chunk_groups(self) -> Iterator[list[Op]]:
        """The ``blob_chunks`` inserts of a chunked blob, ``GROUP_CHUNKS`` per write set, made
        as they are asked for; commit each before the next, and all before ``row``."""
        group: list[Op] = []
        for seq, piece in enumerate(utf8_pieces(self.text, CHUNK_SIZE)):
            group.append(chunk_insert(digest=self.digest, seq=seq, content=piece))
            if len(group) == GROUP_CHUNKS:
                yield group
                group = []
        if group:
            yield group

    def row(self) -> Insert:
        """The ``blobs`` row (with the bytes when the blob is not chunked)."""
        content = b"" if self.chunked else self.text.encode("utf-8")
        return blob_insert(digest=self.digest, size=self.size, created_at=time.time(),
                           content=content, chunk_size=CHUNK_SIZE if self.chunked else None)


def utf8_pieces(text: str, size: int) -> Iterator[bytes]:
    """The UTF-8 bytes of ``text`` in pieces of exactly ``size`` bytes (the last one shorter)."""
    if text.isascii():  # one byte per character: cut the text itself
        for start in range(0, len(text), size):
            yield text[start:start + size].encode("ascii")
        return
    buffer = bytearray()
    step = max(1, size // 4)
    for start in range(0, len(text), step):
        buffer += text[start:start + step].encode("utf-8")
        while len(buffer) >= size:
            yield bytes(buffer[:size])
            del buffer[:size]
    if buffer:
        yield bytes(buffer)


def read_blob(store: Store, digest: str, offset: int, limit: int) -> tuple[bytes, int] | None:
    """Bytes ``[offset, offset + limit)`` of a blob and its size; None when it is not stored."""
    blob = get_blob(store, digest)
    if blob is None:
        return None
    chunk_size = blob.chunk_size
    if not chunk_size:
        content = blob.content
        return content[offset:offset + limit], len(content)
    size = blob.size
    end = min(offset + limit, size)
    if offset >= end:
        return b"", size
    first = offset // chunk_size
    pieces = []
    for seq in range(first, (end - 1) // chunk_size + 1):
        piece = chunk(store, digest, seq)
        if piece is None:
            return None
        pieces.append(piece)
    start = offset - first * chunk_size
    return b"".join(pieces)[start:start + end - offset], size


def load_blob(store: Store, digest: str) -> str | None:
    """The whole text of a blob; None when it (or one of its chunks) is not stored."""
    blob = get_blob(store, digest)
    if blob is None:
        return None
    if not blob.chunk_size:
        return blob.content.decode("utf-8")
    size = blob.size
    data = bytearray()
    for seq in range(blob.chunks):
        piece = chunk(store, digest, seq)
        if piece is None:
            return None
        data += piece
    if len(data) != size:
        return None
    return data.decode("utf-8")
