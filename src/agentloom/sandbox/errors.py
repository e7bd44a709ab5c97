"""The one exception the sandbox raises to its caller, and its stable codes.

::

    AgentLoomError                 (agentloom.errors)
    └── SandboxError               a command the gateway refused or could not start

Each code below is stable; the category follows the spec's closed vocabulary.
"""

from __future__ import annotations

from typing import Final

from agentloom.errors import AgentLoomError, ErrorCategory, ErrorPhase

SANDBOX_UNAVAILABLE: Final = "SANDBOX_UNAVAILABLE"  # bubblewrap missing or unusable
SHELL_NOT_ALLOWED: Final = "SHELL_NOT_ALLOWED"  # shell_script without policy.allow_shell
COMMAND_INVALID: Final = "COMMAND_INVALID"  # neither or both of argv / shell_script, empty argv
CWD_OUTSIDE_WORK: Final = "CWD_OUTSIDE_WORK"  # cwd not /work or below
ENV_INVALID: Final = "ENV_INVALID"  # a variable name or value the kernel cannot carry
MOUNT_INVALID: Final = "MOUNT_INVALID"  # a read-only mount outside /skills, /resources, /wiki, /inputs
SCOPE_INVALID: Final = "SCOPE_INVALID"  # work_dir or a mount source missing
IMAGE_UNSUPPORTED: Final = "IMAGE_UNSUPPORTED"  # an image digest for a host-runtime gateway
LEASE_REVOKED: Final = "LEASE_REVOKED"  # the (run, epoch) was revoked or superseded
REVOCATION_UNCONFIRMED: Final = "REVOCATION_UNCONFIRMED"  # older executions not provably gone
DEADLINE_EXCEEDED: Final = "DEADLINE_EXCEEDED"  # the run deadline passed before the spawn
UNKNOWN_EXECUTION: Final = "UNKNOWN_EXECUTION"  # inspect / terminate of an id never issued
SPAWN_FAILED: Final = "SPAWN_FAILED"  # the OS refused to start the launcher
FOLDER_UNREACHABLE: Final = "FOLDER_UNREACHABLE"  # the sandbox uid cannot reach a folder it needs

_CATEGORIES: Final[dict[str, ErrorCategory]] = {
    SANDBOX_UNAVAILABLE: "permission",
    SHELL_NOT_ALLOWED: "permission",
    COMMAND_INVALID: "validation",
    CWD_OUTSIDE_WORK: "validation",
    ENV_INVALID: "validation",
    MOUNT_INVALID: "validation",
    SCOPE_INVALID: "validation",
    IMAGE_UNSUPPORTED: "validation",
    LEASE_REVOKED: "conflict",
    REVOCATION_UNCONFIRMED: "conflict",
    DEADLINE_EXCEEDED: "timeout",
    UNKNOWN_EXECUTION: "not_found",
    SPAWN_FAILED: "unknown",
    FOLDER_UNREACHABLE: "permission",
}


class SandboxError(AgentLoomError):
    """A command the sandbox refused (nothing ran) or could not start.

    ``code`` is one of this module's constants; the category is derived from it.
    A refusal always has ``external_outcome="not_started"``.
    """

    default_code = SPAWN_FAILED
    default_category: ErrorCategory = "unknown"

    def __init__(self, code: str, message: str, *, phase: ErrorPhase = "execute") -> None:
        super().__init__(message, code=code, category=_CATEGORIES.get(code, "unknown"), phase=phase)
