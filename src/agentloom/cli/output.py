"""The CLI's output channels: consoles, JSON on stdout, errors on stderr with exit codes.

With ``--json`` stdout holds exactly one JSON value (``print_json``); everything else — logs,
warnings, error messages — goes to stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any, NoReturn, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from agentloom.agent import RunError, RunResult
from agentloom.cli.errors import EXIT_FAILED, EXIT_USAGE, CliFailure
from agentloom.cli.jsonl import JsonlCorrupt
from agentloom.errors import AgentLoomError, ConfigError

__all__ = ["fail", "print_json", "reported", "setup_logging", "stderr_console", "stdout_console",
           "warn_unconfirmed"]

PIPE_WIDTH = 200  # rich's 80 columns off a terminal would squeeze tables in logs and pipes


def stdout_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH)
    return console


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


@contextlib.contextmanager
def reported() -> Iterator[None]:
    """Turn the failures a user can act on into one stderr message and an exit code."""
    try:
        yield
    except CliFailure as exc:
        fail(exc.message, exc.exit_code)
    except ConfigError as exc:
        fail(exc.error.message, EXIT_USAGE)
    except RunError as exc:
        usage = exc.code in ("RUN_NOT_FOUND", "RUN_NOT_RUNNING", "RELEASE_CHANGED")
        fail(f"{exc.code}: {exc.error.message}", EXIT_USAGE if usage else EXIT_FAILED)
    except JsonlCorrupt as exc:
        fail(str(exc), EXIT_FAILED)
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), EXIT_FAILED)
    except AgentLoomError as exc:
        fail(f"{exc.code}: {exc.error.message}", EXIT_FAILED)


def fail(message: str, code: int) -> NoReturn:
    stderr_console().print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def warn_unconfirmed(result: RunResult) -> None:
    """One line on stderr when the sandbox could not confirm that the run's commands are gone
    (printed after the live table, never inside it); nothing when it could."""
    if not result.revocation_confirmed:
        stderr_console().print(f"warning: commands of run {result.run_id} may still be running "
                               "(their end could not be confirmed)", highlight=False, markup=False,
                               soft_wrap=True)


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to ``sys.stderr`` as it is when a record comes, not as it was at set-up: while
    the live view runs on a terminal, rich redirects it, and the record is printed above
    the table instead of into it."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler.setStream; the current one wins
        pass


def setup_logging() -> None:
    """Warnings on stderr, never on stdout."""
    root = logging.getLogger()
    if not root.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("agentloom: %(levelname)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
