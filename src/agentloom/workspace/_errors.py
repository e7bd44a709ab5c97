"""The file service's one exception and its closed set of codes.

Error hierarchy::

    AgentLoomError
    └── WorkspaceError   every file-tool failure; ``code`` is one of ``WorkspaceErrorCode``

Each code maps to one of the spec's categories (000 §2.2). Messages name the *relative*
path and say how to fix the call; the host root never appears in one. Refusals happen
before any effect, so ``external_outcome`` is ``not_started`` unless a message says otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from agentloom.errors import AgentLoomError, ErrorCategory, ExternalOutcome

WorkspaceErrorCode = Literal[
    "INVALID_PATH",
    "PATH_TOO_LONG",
    "NAME_TOO_LONG",
    "PATH_ESCAPE",
    "SYMLINK_REFUSED",
    "HARDLINK_REFUSED",
    "RESERVED_PATH",
    "ROOT_REFUSED",
    "READ_ONLY",
    "PERMISSION_DENIED",
    "NOT_FOUND",
    "NOT_A_DIRECTORY",
    "IS_A_DIRECTORY",
    "NOT_A_FILE",
    "EXISTS",
    "NOT_EMPTY",
    "ETAG_REQUIRED",
    "ETAG_MISMATCH",
    "MATCH_COUNT",
    "PATCH_INVALID",
    "PATCH_CONFLICT",
    "BINARY_FILE",
    "FILE_TOO_LARGE",
    "INVALID_ARGUMENTS",
    "INVALID_PATTERN",
    "PATH_BUSY",
    "LOCK_TIMEOUT",
    "WORKSPACE_UNAVAILABLE",
    "IO_ERROR",
]

CATEGORIES: dict[str, ErrorCategory] = {
    "INVALID_PATH": "validation",
    "PATH_TOO_LONG": "validation",
    "NAME_TOO_LONG": "validation",
    "PATH_ESCAPE": "permission",
    "SYMLINK_REFUSED": "permission",
    "HARDLINK_REFUSED": "permission",
    "RESERVED_PATH": "permission",
    "ROOT_REFUSED": "permission",
    "READ_ONLY": "permission",
    "PERMISSION_DENIED": "permission",
    "NOT_FOUND": "not_found",
    "NOT_A_DIRECTORY": "validation",
    "IS_A_DIRECTORY": "validation",
    "NOT_A_FILE": "validation",
    "EXISTS": "conflict",
    "NOT_EMPTY": "conflict",
    "ETAG_REQUIRED": "validation",
    "ETAG_MISMATCH": "conflict",
    "MATCH_COUNT": "conflict",
    "PATCH_INVALID": "validation",
    "PATCH_CONFLICT": "conflict",
    "BINARY_FILE": "validation",
    "FILE_TOO_LARGE": "validation",
    "INVALID_ARGUMENTS": "validation",
    "INVALID_PATTERN": "validation",
    "PATH_BUSY": "conflict",
    "LOCK_TIMEOUT": "conflict",
    "WORKSPACE_UNAVAILABLE": "not_found",
    "IO_ERROR": "unknown",
}


class WorkspaceError(AgentLoomError):
    """A file tool refused or failed a call; ``code`` is stable, ``category`` is the spec's."""

    default_code = "IO_ERROR"
    default_category: ErrorCategory = "unknown"

    def __init__(
        self,
        code: WorkspaceErrorCode,
        message: str,
        *,
        external_outcome: ExternalOutcome = "not_started",
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, code=code, category=CATEGORIES[code], external_outcome=external_outcome)
        if details:
            self.error = replace(self.error, details=dict(details))
