"""The file blob store: large content (e.g. a command's full output) kept as
content-addressed files in the system area of the shared root, which is never mounted
for a model or a script (000 §7.1: ``system/<owners>/<file_root_id>/blobs/<prefix>/<sha256>``).

A *location* is the blob's path relative to the shared root; it is stored with the
result it belongs to and is never shown to a model (the model gets a ``result_ref``).
The folders it creates are ``0700`` and the runtime's; a blob keeps its spool file's mode.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from agentloom.workspace._modes import make_private_dirs

_LOCATION = re.compile(r"^system/(agents|workflows)/[A-Za-z0-9._-]+/blobs/[0-9a-f]{2}/[0-9a-f]{64}$")
BLOB_REF_PREFIX = "file-blob:"


class FileBlobStore:
    """Large content (a command's full output) kept as content-addressed files in the shared
    root's system area, which is never mounted for a model or a script (000 §7.1). A blob's
    location is stored with its result; the model only ever sees a ``result_ref``."""

    def __init__(self, shared_root: Path) -> None:
        self.root = Path(shared_root)

    def location_for(self, owners: str, file_root_id: str, digest: str) -> str:
        return f"system/{owners}/{file_root_id}/blobs/{digest[:2]}/{digest}"

    def adopt(self, spool: Path, *, owners: str, file_root_id: str, digest: str | None = None
              ) -> tuple[str, int]:
        """Move a finished spool file into the store under its sha256; return (location, size)."""
        if digest is None:
            digest = _sha256_file(spool)
        location = self.location_for(owners, file_root_id, digest)
        target = self.root / location
        make_private_dirs(target.parent)
        size = spool.stat().st_size
        if target.exists():
            spool.unlink()
        else:
            os.replace(spool, target)
            fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return location, size

    def read(self, location: str, offset: int, limit: int) -> tuple[bytes, int]:
        """Bytes ``[offset, offset+limit)`` of a blob and its total size."""
        if not _LOCATION.match(location):
            raise ValueError("not a blob location")
        path = self.root / location
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if offset >= size:  # never seek past the end (a huge offset is EINVAL or overflow)
                return b"", size
            handle.seek(offset)
            return handle.read(limit), size


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
