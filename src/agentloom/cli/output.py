"""The CLI's output channels: consoles, JSON on stdout, errors on stderr with exit codes.

With ``--json`` stdout holds exactly one JSON value (``print_json``); everything else — logs,
warnings, error messages — goes to stderr. ``ReportingGroup`` keeps stdout for that value
while a ``--json`` command runs (``stdout_for_json``): the JSON goes to a private copy of the
stdout descriptor, and descriptor 1 and ``sys.stdout`` point at stderr, so what user code
writes — a Python hook's or tool's ``print`` on any thread, a write to descriptor 1, a child
process that inherits it — lands on stderr, never inside the document. Everything written
for people goes through
``terminal.printable`` (control characters escaped) and error and log text through
``redact_secrets`` (no store password, no token).

Every failure of every command ends in ``ReportingGroup.main``, the top-level command group:
it prints ``error: CODE: message`` on stderr (``errors.describe``), a JSON error object on stdout
with ``--json``, the traceback only with the global ``--debug``, and exits with the failure's
code.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup, TyperOption

from agentloom.agent import RunResult
from agentloom.cli.errors import EXIT_OK, describe
from agentloom.cli.terminal import plain, printable
from agentloom.errors import redact_secrets

__all__ = ["ReportingGroup", "hide_flag_types", "print_json", "report", "say", "setup_logging",
           "stderr_console", "stdout_console", "stdout_for_json", "warn_unconfirmed"]

PIPE_WIDTH = 200  # rich's 80 columns off a terminal would squeeze tables in logs and pipes
# JSON keeps these as they are (ensure_ascii=False); written as \\u escapes they still decode
# to the exact text, and no terminal showing the JSON acts on a C1 control or DEL, nor does
# a lone surrogate make the UTF-8 encoding of stdout fail.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff]")


def stdout_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH)
    return console


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def say(console: Console, *parts: object) -> None:
    """One line for people: ``parts`` joined, control characters escaped, never markup."""
    console.print(plain("".join(str(p) for p in parts)), highlight=False, soft_wrap=True)


_document: TextIO | None = None  # where print_json writes while stdout_for_json holds stdout


def print_json(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    out = _document if _document is not None else sys.stdout
    out.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    out.flush()


@contextlib.contextmanager
def stdout_for_json() -> Iterator[None]:
    """Keep stdout for ``print_json`` while the block runs: every other write to it goes to
    stderr — ``sys.stdout`` is ``sys.stderr``, and where stdout is a real descriptor, that
    descriptor is stderr too (user code and its children write there), the document going to
    a private duplicate of the original. Restored when the block ends."""
    global _document
    out, err = sys.stdout, sys.stderr
    saved: int | None = None
    try:
        stdout_fd, stderr_fd = out.fileno(), err.fileno()
    except (AttributeError, OSError, ValueError):  # not a descriptor (a test runner's buffer)
        document: TextIO = out
    else:
        out.flush()
        saved = os.dup(stdout_fd)
        os.dup2(stderr_fd, stdout_fd)
        document = open(saved, "w", encoding=out.encoding or "utf-8",  # noqa: SIM115
                        errors=out.errors or "strict", closefd=False)
    _document, sys.stdout = document, err
    try:
        yield
    finally:
        _document, sys.stdout = None, out
        document.flush()
        if saved is not None:
            err.flush()
            out.flush()  # what user code left in its buffer belongs to stderr
            os.dup2(saved, stdout_fd)
            document.close()
            os.close(saved)


def report(exc: Exception, *, as_json: bool, debug: bool) -> int:
    """Tell the user about ``exc``; returns the exit code.

    stderr gets ``error: CODE: message`` (after click's usage line for a bad option, and after
    the traceback with ``--debug``); stdout gets ``{"error": {"code", "message", "exit_code"}}``
    with ``--json`` and nothing otherwise.
    """
    failure = describe(exc)
    err = stderr_console()
    if debug:
        err.print(plain("".join(traceback.format_exception(exc)).rstrip("\n")), highlight=False,
                  soft_wrap=True)
    ctx = getattr(exc, "ctx", None)  # a usage error: show the command's usage
    if ctx is not None:
        say(err, ctx.get_usage())
        say(err, f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.")
    err.print(Text.assemble(("error:", "bold red"), " ", plain(f"{failure.code}: {failure.message}")),
              highlight=False, soft_wrap=True)
    if as_json:
        print_json({"error": failure.to_dict()})
    return failure.exit_code


def _given(argv: Sequence[str], flag: str) -> bool:
    """``flag`` anywhere before a ``--``."""
    return flag in (argv[: argv.index("--")] if "--" in argv else argv)


def _given_globally(argv: Sequence[str], flag: str) -> bool:
    """``flag`` among the options before the command name (``agentloom --debug runs list``)."""
    for arg in argv:
        if arg == flag:
            return True
        if arg == "--" or not arg.startswith("-"):
            return False
    return False


class ReportingGroup(TyperGroup):
    """The ``agentloom`` command group, which reports every failure of its commands.

    Click runs in non-standalone mode underneath, so that a usage error, a store that cannot be
    opened or a bug all come back here as exceptions and are reported one way (``report``);
    ``--json`` and ``--debug`` are read from the command line, as a failure may come before
    (or while) they are parsed.
    """

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        hide_flag_types(self)
        as_json = _given(argv, "--json")
        with stdout_for_json() if as_json else contextlib.nullcontext():
            if not standalone_mode:
                return super().main(argv, prog_name, complete_var, False, windows_expand_args,
                                    **extra)
            try:
                code = super().main(argv, prog_name, complete_var, False, windows_expand_args,
                                    **extra)
            except Exception as exc:
                if type(exc).__name__ == "NoArgsIsHelpError":  # the help is printed already
                    code = getattr(exc, "exit_code", 2)
                else:
                    code = report(exc, as_json=as_json, debug=_given_globally(argv, "--debug"))
        sys.exit(code if isinstance(code, int) else EXIT_OK)


def hide_flag_types(command: Any, parent: typer.Context | None = None, name: str | None = None
                    ) -> None:
    """Show no value type after a flag in the help, of ``command`` and every command below it.

    typer prints the type of every option, a flag's too (``--json <bool>``), which reads as if
    the flag took a value; an empty metavar prints nothing. ``--help`` is built per command
    from a context (``get_params`` adds it), so each command gets one made as click makes it.
    """
    ctx = typer.Context(command, parent=parent, info_name=name, **command.context_settings)
    for param in command.get_params(ctx):
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    for sub_name, sub in getattr(command, "commands", {}).items():
        hide_flag_types(sub, ctx, sub_name)


def warn_unconfirmed(result: RunResult) -> None:
    """One line on stderr when the sandbox could not confirm that the run's commands are gone
    (printed after the live table, never inside it); nothing when it could."""
    if not result.revocation_confirmed:
        say(stderr_console(), f"warning: commands of run {result.run_id} may still be running "
            "(their end could not be confirmed)")


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


class _SafeFormatter(logging.Formatter):
    """A log record as one would show it to people: secrets redacted, control characters
    escaped (a record may quote a store URL, a tool's output, a model's text)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(redact_secrets(super().format(record)))


def setup_logging() -> None:
    """Warnings on stderr, never on stdout."""
    root = logging.getLogger()
    if not root.handlers:
        handler = _StderrHandler()
        handler.setFormatter(_SafeFormatter("agentloom: %(levelname)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
