"""Issue #11, point 10: reading a stored output past its end is an empty read with the size,
never an error that makes ``result_read`` say the blob is missing."""

from __future__ import annotations

from pathlib import Path

from agentloom.workspace.blobs import FileBlobStore


def test_i11_10_a_read_past_the_end_of_a_file_blob_is_empty_with_its_size(tmp_path: Path) -> None:
    spool = tmp_path / "out.stdout"
    spool.write_bytes(b"0123456789" * 100)
    blobs = FileBlobStore(tmp_path / "shared")
    location, size = blobs.adopt(spool, owners="agents", file_root_id="root-1")
    assert size == 1000
    assert blobs.read(location, 990, 100) == (b"0123456789", 1000)
    for offset in (1000, 10**6, 10**18):
        assert blobs.read(location, offset, 100) == (b"", 1000)
