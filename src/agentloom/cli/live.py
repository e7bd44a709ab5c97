"""Driving one run from the command line: start or resume it, show its events live, turn
Ctrl-C / SIGTERM into a recorded stop, and return its result."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from agentloom.agent import RunHandle, RunResult, Runtime
from agentloom.cli import render
from agentloom.cli.errors import CliFailure
from agentloom.cli.output import say, stderr_console, stdout_console
from agentloom.cli.stream import DeltaPrinter

__all__ = ["consume", "drive", "run_sync"]


async def drive(runtime: Runtime, begin: Callable[[], Awaitable[RunHandle]], *,
                as_json: bool, live: bool = True, stream: bool = False) -> RunResult:
    """Start (or resume) a run, show it live, stop it on Ctrl-C / SIGTERM, return its result.

    ``live=False`` (a run that has finished already) reads the result without subscribing.
    ``stream``: also write the model's text and reasoning as they arrive (``cli.stream``; on
    stderr with ``--json``), the calls as lines instead of a table.
    """
    loop = asyncio.get_running_loop()
    try:
        handle = await begin()
        stops: list[asyncio.Future[None]] = []

        def interrupt(name: str) -> None:
            say(stderr_console(), f"{name}: stopping run {handle.run_id} (again to quit at once)")
            stops.append(asyncio.ensure_future(handle.stop(f"interrupted ({name})")))
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

        for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, interrupt, name)
        with contextlib.ExitStack() as stack:
            view = None
            if live and not as_json:  # streamed text between table redraws would be torn:
                view = render.LiveView(stdout_console())  # lines only (a view not entered)
                if not stream:
                    stack.enter_context(view)
            if live:
                text = DeltaPrinter(stderr_console() if as_json else stdout_console()) \
                    if stream else None
                await consume(handle, view, text)
        result = await handle.result()
        for stop in stops:
            with contextlib.suppress(Exception):
                await stop
        return result
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
        await runtime.aclose()


async def consume(handle: RunHandle, view: render.LiveView | None,
                  deltas: DeltaPrinter | None = None) -> None:
    """Show the handle's events until the run ends; iterated in the caller's task so the
    subscription exists before the run's task takes its first step (no event is missed).
    With ``deltas``, the model's text and reasoning are written as they arrive."""
    async for event in handle.events(deltas=deltas is not None):
        if event.type == "model.delta":
            if deltas is not None:
                deltas.piece(event.data)
            continue
        if deltas is not None:
            deltas.end()
        # One line on stderr as it happens, with --json too; the human output lists them all
        # again at its end (main._finish, from the store: those of an earlier process too).
        if event.type == "hook.warning":
            say(stderr_console(), render.hook_warning(event.data))
        elif view is not None:
            view.handle(event)


def run_sync(main: Coroutine[Any, Any, RunResult]) -> RunResult:
    try:
        return asyncio.run(main)
    except KeyboardInterrupt:  # a second Ctrl-C: quit now, the run stays resumable
        raise CliFailure("interrupted before the run finished; continue it with "
                         "`agentloom runs resume RUN_ID`", code="INTERRUPTED") from None
