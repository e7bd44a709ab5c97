"""The CLI's exit codes, and how every failure that reaches the CLI is described to the user.

=====  ==========================================================================
0      the command did what it was asked; ``run`` / ``runs resume``: the run succeeded
1      ``run`` / ``runs resume``: the run failed, was cancelled or timed out;
       any other command: a runtime failure (e.g. the store)
2      a usage or configuration error: a bad option, a config key, an unknown run,
       a missing store, a feature whose extra is not installed — the message says what to fix
=====  ==========================================================================

``describe`` turns any exception into a ``Failure`` — a stable code, a message free of secrets,
an exit code — which ``output`` prints as ``error: CODE: message`` (and as a JSON object with
``--json``)::

    CliFailure       the CLI's own         its code (default CLI_FAILED)        1
    └── UsageFailure                       its code (default USAGE_ERROR)       2
    click usage errors (a bad option)      USAGE_ERROR                          2
    JsonlCorrupt (``--append-to``)         JSONL_CORRUPT                        1
    ConfigError, RunError on a usage code  the error's code                     2
    MissingExtra (a feature's extra)       EXTRA_MISSING                        2
    AgentLoomError (RunError, StoreError)  the error's code                     1
    a store driver's error (sqlite3, …)    STORE_FAILED                         1
    OSError                                its errno name (EACCES, ENOSPC, …)   1
    anything else                          INTERNAL_ERROR                       1
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

import typer

from agentloom.agent import RunError
from agentloom.cli.jsonl import JsonlCorrupt
from agentloom.errors import AgentLoomError, ConfigError, redact_secrets
from agentloom.extras import MissingExtra

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "EXIT_WAITING", "CliFailure", "Failure", "UsageFailure",
           "describe", "is_store_driver_error"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WAITING = 3  # the run waits for a person's answer (runs approve / reject), not ended

USAGE_RUN_CODES = frozenset({"RUN_NOT_FOUND", "RUN_NOT_RUNNING", "RELEASE_CHANGED"})
STORE_DRIVERS = frozenset({"sqlite3", "psycopg", "psycopg2", "psycopg_pool"})


class CliFailure(AgentLoomError):
    """A failure the CLI reports as ``error: CODE: message`` on stderr and an exit code."""

    exit_code = EXIT_FAILED
    default_code = "CLI_FAILED"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.message = message


class UsageFailure(CliFailure):
    """The command was given something it cannot use (exit 2)."""

    exit_code = EXIT_USAGE
    default_code = "USAGE_ERROR"


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """What the user is told about a failure. ``message`` is scrubbed of secrets (a store
    URL's password, tokens) on construction, as ``OperationError``'s is."""

    code: str
    message: str
    exit_code: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redact_secrets(self.message))

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "exit_code": self.exit_code}


def is_store_driver_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a database driver (``sqlite3``, ``psycopg``): a store that
    cannot be reached, is not a database, or cannot be written."""
    return type(exc).__module__.partition(".")[0] in STORE_DRIVERS


def describe(exc: Exception) -> Failure:
    """The code, message and exit code the CLI reports for ``exc`` (table in the module
    docstring)."""
    if isinstance(exc, CliFailure):
        return Failure(code=exc.code, message=exc.message, exit_code=exc.exit_code)
    if isinstance(exc, typer.TyperException):  # click's parsing: a bad option, a missing argument
        return Failure(code="USAGE_ERROR" if exc.exit_code == EXIT_USAGE else "CLI_FAILED",
                       message=exc.format_message(), exit_code=exc.exit_code)
    if isinstance(exc, typer.Abort):
        return Failure(code="ABORTED", message="aborted", exit_code=EXIT_FAILED)
    if isinstance(exc, JsonlCorrupt):
        return Failure(code="JSONL_CORRUPT", message=str(exc), exit_code=EXIT_FAILED)
    if isinstance(exc, ConfigError | MissingExtra):
        return Failure(code=exc.code, message=exc.error.message, exit_code=EXIT_USAGE)
    if isinstance(exc, RunError):
        return Failure(code=exc.code, message=exc.error.message,
                       exit_code=EXIT_USAGE if exc.code in USAGE_RUN_CODES else EXIT_FAILED)
    if isinstance(exc, AgentLoomError):
        return Failure(code=exc.code, message=exc.error.message, exit_code=EXIT_FAILED)
    if is_store_driver_error(exc):
        return Failure(code="STORE_FAILED", message=f"the store failed: {_text(exc)}",
                       exit_code=EXIT_FAILED)
    if isinstance(exc, OSError):
        code = errno.errorcode.get(exc.errno or 0, "OS_ERROR")
        where = f"{exc.filename}: " if exc.filename else ""
        return Failure(code=code, message=f"{where}{exc.strerror or exc}", exit_code=EXIT_FAILED)
    return Failure(code="INTERNAL_ERROR", message=f"{_text(exc)} (run `agentloom --debug …` for "
                   "the traceback)", exit_code=EXIT_FAILED)


def _text(exc: BaseException) -> str:
    """``Type: message`` (the type alone when the message is empty)."""
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
