"""The CLI's exit codes and the failures that map to them.

=====  ==========================================================================
0      the command did what it was asked; ``run`` / ``runs resume``: the run succeeded
1      ``run`` / ``runs resume``: the run failed, was cancelled or timed out;
       any other command: a runtime failure (e.g. the store)
2      a usage or configuration error: a bad option, a config key, an unknown run,
       a missing store — the message says what to fix
=====  ==========================================================================
"""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "CliFailure", "UsageFailure"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CliFailure(Exception):
    """A failure the CLI reports as one line on stderr and an exit code."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class UsageFailure(CliFailure):
    """The command was given something it cannot use (exit 2)."""

    exit_code = EXIT_USAGE
