"""``agentloom runs``: list, show, events, resume, fork, stop, supplement (approve and reject come
from ``cli/queue.py``), and how a command that drove a run reports its end (``finish_run``).

Owns: the ``runs_app`` group, opening the store a ``runs`` command reads (``store_session``)
and the config a run was started from. Does not own: starting a run (``agentloom run``, in
``cli/main.py``), driving it live (``cli/live.py``), or the run views (``views``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.agent import RunHandle, RunResult, run_events
from agentloom.agent.controls import STOP, SUPPLEMENT, send_control
from agentloom.agent.fork import ForkError, plan_fork, start_fork
from agentloom.agent.leases import is_interrupted
from agentloom.assembly import runtime_from_config
from agentloom.cli import render
from agentloom.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_WAITING, UsageFailure
from agentloom.cli.jsonl import append_jsonl
from agentloom.cli.live import drive, run_sync
from agentloom.cli.options import ConfigOpt, JsonOpt, RunIdArg, StoreOpt
from agentloom.cli.output import (
    print_json,
    say,
    setup_logging,
    stderr_console,
    stdout_console,
    warn_unconfirmed,
)
from agentloom.cli.queue import approve, reject
from agentloom.cli.run_replay import newest_replayable, print_report, replay_runs
from agentloom.cli.stores import open_existing_store, resolve_store_url
from agentloom.config import load_config
from agentloom.errors import redact_secrets
from agentloom.store import Store
from agentloom.store.records import RunRecord, get_run
from agentloom.views import run_detail, run_summaries

__all__ = ["finish_run", "runs_app", "store_session"]

runs_app = typer.Typer(no_args_is_help=True, help="Inspect and control runs in a store.")
runs_app.command("approve")(approve)
runs_app.command("reject")(reject)


def finish_run(result: RunResult, agent: str | None, as_json: bool, store_url: str | None,
               *, hint: bool = True) -> None:
    """Report the end a command drove ``result`` to (``run``, ``runs resume``) and exit with
    its code: 0 succeeded, 1 failed, 3 waiting for a person.

    Raises:
        typer.Exit: always, with that code.
    """
    warn_unconfirmed(result)
    # The run as `runs show` has it: its usage totals and its hook warnings (every one the run
    # recorded, those of an earlier process that drove it included).
    detail: dict[str, Any] = {}
    if store_url is not None:
        with store_session(store_url, None, read_only=True) as opened:
            detail = run_detail(opened, result.run_id) or {}
    warnings = detail.get("warnings", [])
    if as_json:
        print_json({**result.to_dict(), "agent": agent, "usage": detail.get("usage"),
                    "duration_s": detail.get("duration_s"), "warnings": warnings})
    else:
        render.print_result(stdout_console(), result)
        if result.workspace is not None:
            say(stdout_console(), f"\nFiles: {result.workspace}")
        elif hint and result.status not in ("waiting", "pending"):
            say(stdout_console(), "\nThe run's folder was removed when it ended; keep its files "
                "with --workdir PATH (a folder of yours), --session ID, or workspace.keep: true")
        if hint and store_url is not None:  # the password, if any, stays with the user
            where = f" --store {redact_secrets(store_url)}"
            say(stdout_console(), "\nEvery call is recorded. See them with:\n"
                f"  agentloom runs show {result.run_id}{where}\n"
                f"  agentloom runs events {result.run_id}{where}")
        render.print_hook_warnings(stderr_console(), warnings)  # last, where one looks
    if result.status in ("waiting", "pending"):
        raise typer.Exit(EXIT_WAITING)
    raise typer.Exit(EXIT_OK if result.status == "succeeded" else EXIT_FAILED)


@contextlib.contextmanager
def store_session(store: str | None, config: Path | None, *, read_only: bool = False
           ) -> Iterator[Store]:
    """The store of a ``runs`` command; ``read_only`` for the commands that only read it (it
    is neither created nor migrated, and a folder or database the user may only read works)."""
    opened = open_existing_store(resolve_store_url(store, config), read_only=read_only)
    try:
        yield opened
    finally:
        opened.close()


@runs_app.command("list")
def runs_list(
    store: StoreOpt = None,
    config: ConfigOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many runs.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """List runs, newest first."""
    setup_logging()
    with store_session(store, config, read_only=True) as opened:
        runs = run_summaries(opened, limit)
    if as_json:
        print_json(runs)
    else:
        render.print_runs(stdout_console(), runs)


@runs_app.command("show")
def runs_show(
    run_id: RunIdArg,
    store: StoreOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a run and its operations: attempts, hooks, arguments and results.

    Each operation shows the proposed beside the executed arguments and the raw beside the
    effective result (truncated here; complete with --json).
    """
    setup_logging()
    with store_session(store, config, read_only=True) as opened:
        detail = run_detail(opened, run_id)
        if detail is None:
            raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
    if as_json:
        print_json(detail)
    else:
        render.print_run_detail(stdout_console(), detail)


@runs_app.command("events")
def runs_events(
    run_id: RunIdArg,
    store: StoreOpt = None,
    config: ConfigOpt = None,
    append_to: Annotated[Path | None, typer.Option(
        "--append-to", metavar="FILE", help="Also append the events to FILE as JSON Lines "
        "(a torn last line left by a crash is repaired first).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The run's events (run, model, tool and delegation calls), oldest first."""
    setup_logging()
    with store_session(store, config, read_only=True) as opened:
        if get_run(opened, run_id) is None:
            raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        events = [e.to_dict() for e in run_events(opened, run_id)]
        if append_to is not None:
            report = append_jsonl(append_to, events)
            warning = report.warning()
            if warning:
                say(stderr_console(), f"warning: {warning}")
            say(stderr_console(), f"appended {report.appended} event(s) to {append_to}")
    if as_json:
        print_json(events)
    else:
        render.print_events(stdout_console(), events)


@runs_app.command("resume")
def runs_resume(
    run_id: RunIdArg,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", metavar="CONFIG",
        help="Resume with this config instead of the file the run was started from.")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Take the run over even from a live process (a call it has in flight "
        "may run twice).")] = False,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Continue RUN_ID from its last committed step (a finished run prints its result).

    The run is resumed with the config file it was started from (recorded on the run);
    --config overrides it. A run a live process drives is refused, naming that process,
    unless --force. Exits like `run`.
    """
    setup_logging()
    url = resolve_store_url(store, config)
    with store_session(url, None) as opened:  # writable: it migrates a store of an older version
        run = get_run(opened, run_id)
    if run is None:
        raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
    runtime = runtime_from_config(load_config(config or _recorded_config(run)), store=url)
    if force and run.status in ("running", "suspended"):
        doubled = runtime.in_flight(run_id)
        if doubled and (run.status == "suspended"
                        or not is_interrupted(run, runtime.store.now())):
            calls = ", ".join(f"{op.capability_key} (op {op.operation_id}, {op.phase})"
                              for op in doubled)
            say(stderr_console(), f"warning: taking run {run_id} over from "
                f"{run.lease_owner}, which may still be running: {calls} may run twice")
    result = run_sync(drive(runtime, lambda: runtime.resume(run_id, force=force),
                            as_json=as_json,
                            live=run.status in ("running", "suspended", "pending")))
    finish_run(result, run.agent, as_json, url, hint=False)


def _recorded_config(run: RunRecord) -> Path:
    """The config file a run was started from (``runs.data.config.path``)."""
    recorded = run.config_path
    if not recorded:
        raise UsageFailure(
            f"run {run.run_id} records no config file (it was started from Python, or by "
            "an older AgentLoom); pass --config CONFIG", code="CONFIG_REQUIRED")
    path = Path(recorded)
    if not path.is_file():
        raise UsageFailure(
            f"run {run.run_id} was started from {recorded}, which no longer exists; pass "
            "--config CONFIG", code="CONFIG_NOT_FOUND")
    return path


@runs_app.command("fork")
def runs_fork(
    run_id: RunIdArg,
    at: Annotated[str, typer.Option(
        "--at", metavar="OPERATION_ID", help="The model or tool call of RUN_ID's agent to "
        "fork at (`runs show` lists them); the fork's history stops before it.")],
    message: Annotated[str | None, typer.Option(
        "--message", "-m", metavar="TEXT",
        help="A new user message after the history.")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", metavar="CONFIG",
        help="Run the fork with this config instead of the file RUN_ID was started "
        "from.")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start a new run from RUN_ID's call OPERATION_ID, linked to it (forked_from).

    Its history is what RUN_ID's model saw before that call (hook edits included), then
    --message; it continues live with a new model call. Nothing before the call runs again:
    the files the file tools wrote before it are rebuilt from the record (after exec or an
    MCP call, the fork starts from a copy of RUN_ID's kept folder). RUN_ID is never
    written. Exits like `run`.
    """
    setup_logging()
    url = resolve_store_url(store, config)
    with store_session(url, None) as opened:  # writable: it migrates a store of an older version
        run = get_run(opened, run_id)
        if run is None:
            raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        try:
            plan = plan_fork(opened, run_id, at, message=message)
        except ForkError as exc:
            raise UsageFailure(exc.error.message, code=exc.error.code) from None
    runtime = runtime_from_config(load_config(config or _recorded_config(run)), store=url)
    say(stderr_console(), f"forking run {run_id} at {at} (turn {plan.turn}); its files: "
        f"{plan.files_note}")

    async def begin() -> RunHandle:
        return await runtime.resume(await start_fork(runtime, plan))

    result = run_sync(drive(runtime, begin, as_json=as_json))
    finish_run(result, plan.agent, as_json, url, hint=False)


@runs_app.command("replay")
def runs_replay(
    run_ids: Annotated[list[str] | None, typer.Argument(
        metavar="[RUN_ID]...", help="The finished agent run(s) to replay (see `runs list`).",
        show_default=False)] = None,
    last: Annotated[int | None, typer.Option(
        "--last", metavar="N", min=1, help="Also the newest N runs that can be replayed "
        "(finished agent runs without a session).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", metavar="CONFIG",
        help="Replay against this config instead of the file each run was started from.")] = None,
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-drive finished runs against the current config and code, executing nothing.

    Model turns are served from the record, in order; every capability's recorded raw result
    is served in place of running it; hooks run live. Reports the first call that differs
    (the call proposed, a model request, a hook's decision or patch, the effective result, a
    turn the record does not have), with both sides. Nothing is written to the store.
    Exits 0 when every run replays the same, 1 on a divergence, 2 for bad input.
    """
    setup_logging()
    url = resolve_store_url(store, config)
    named = list(run_ids or [])
    if not named and last is None:
        raise UsageFailure("name the runs to replay (RUN_ID...) or give --last N",
                           code="USAGE_ERROR")
    with store_session(url, None, read_only=True) as opened:
        chosen = [*named, *(newest_replayable(opened, last, besides=named) if last else [])]
        if not chosen:
            raise UsageFailure("no run in this store can be replayed (finished agent runs "
                               "without a session)", code="RUN_NOT_FOUND")
        reports = asyncio.run(replay_runs(opened, chosen, config, config_of=_recorded_config))
    if as_json:
        print_json(reports[0].to_dict() if len(reports) == 1 else [r.to_dict() for r in reports])
    else:
        for report in reports:
            print_report(stdout_console(), report)
    raise typer.Exit(EXIT_OK if all(r.same for r in reports) else EXIT_FAILED)


# -- controlling runs ------------------------------------------------------------------------


async def _stop_with_config(url: str, config: Path, run_id: str, reason: str) -> None:
    """Stop through the configured runtime: it can also finish a run nobody holds."""
    runtime = runtime_from_config(load_config(config), store=url)
    try:
        await runtime.stop(run_id, reason)
    finally:
        await runtime.aclose()


@runs_app.command("stop")
def runs_stop(
    run_id: RunIdArg,
    reason: Annotated[str, typer.Option("--reason", help="Recorded with the stop.")] = "stopped by user",
    store: StoreOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop a run from any process; the process driving it cancels it within a poll interval.

    A run no process drives any more (interrupted) is finished as cancelled here, with the
    config it was started from (--config overrides it) so its workspace is cleaned up.
    """
    setup_logging()
    url = resolve_store_url(store, config)
    with store_session(url, None) as opened:
        run = get_run(opened, run_id)
        store_now = opened.now()
    if run is None:
        raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
    previous = run.status
    if previous == "running" and config is None and is_interrupted(run, store_now):
        # Nothing drives it: finish it here, as cancelled, with the config it started from.
        config = _recorded_config(run)
    if config is not None:
        asyncio.run(_stop_with_config(url, config, run_id, reason))
    elif previous == "running":
        with store_session(url, None) as opened:
            asyncio.run(send_control(opened, run_id, STOP, {"reason": reason}))
    with store_session(url, None) as opened:
        now = get_run(opened, run_id)
    status = now.status if now else previous
    out = {"run_id": run_id, "requested": previous == "running", "status": status}
    if as_json:
        print_json(out)
    elif previous != "running":
        say(stdout_console(), f"run {run_id} had already finished ({previous}); nothing to stop")
    else:
        say(stdout_console(), f"stop requested for run {run_id} (status now: {status})")


@runs_app.command("supplement")
def runs_supplement(
    run_id: RunIdArg,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="More user input for the run.")],
    store: StoreOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add user input to a running run (its root agent reads it at its next turn)."""
    setup_logging()
    if not text.strip():
        raise UsageFailure("the supplement text is empty")
    url = resolve_store_url(store, config)
    with store_session(url, None) as opened:
        run = get_run(opened, run_id)
        if run is None:
            raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
        if run.status != "running":
            raise UsageFailure(f"run {run_id!r} is not running ({run.status})",
                              code="RUN_NOT_RUNNING")
        asyncio.run(send_control(opened, run_id, SUPPLEMENT,
                                 {"text": text, "consumed_turn": None}))
    if as_json:
        print_json({"run_id": run_id, "supplemented": True})
    else:
        say(stdout_console(), f"supplement recorded for run {run_id}")
