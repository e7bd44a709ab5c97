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
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from agentloom.agent import RunError
from agentloom.cli.errors import EXIT_FAILED, EXIT_USAGE, CliFailure
from agentloom.cli.jsonl import JsonlCorrupt
from agentloom.errors import AgentLoomError, ConfigError

__all__ = ["fail", "print_json", "reported", "setup_logging", "stderr_console", "stdout_console"]

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


def setup_logging() -> None:
    """Warnings (e.g. an unsandboxed exec) on stderr, never on stdout."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("agentloom: %(levelname)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
