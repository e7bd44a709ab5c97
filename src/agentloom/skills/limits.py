"""The bounds every Skill import is checked against while its members are read.

Sizes are counted from the bytes actually read, never from what an archive or a git object
header declares; the expansion ratio is checked as the bytes come out, so a bomb is refused
after at most ``ratio_floor`` + one read of output, never written in full.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "ImportLimits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportLimits:
    """Bounds of one import (all of its skills together)."""

    max_files: int = 2000
    """Members (files and links; folders are not counted)."""
    max_file_bytes: int = 16 << 20
    """One file."""
    max_total_bytes: int = 64 << 20
    """All files together."""
    max_ratio: float = 50.0
    """Archives: bytes written / bytes of the archive file, checked while extracting..."""
    ratio_floor: int = 1 << 20
    """... once more than this many bytes are out (a tiny archive of text may expand well)."""
    max_depth: int = 16
    """Path components of one member."""


DEFAULT_LIMITS = ImportLimits()
