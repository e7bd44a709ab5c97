"""The ``agentloom`` command (typer): ``run``, ``submit`` and ``workers list`` (``cli/queue.py``),
``runs list|show|events|resume|stop|supplement|approve|reject``, ``worker``, ``cleanup``,
``owners delete`` (``cli/owners.py``), ``keys create|list|revoke`` (``cli/keys.py``),
``serve`` (``cli/serve.py``), ``init``. Every command but ``serve`` (a server) takes ``--json``;
docs/cli.md is the reference.

Output discipline: with ``--json`` stdout holds exactly one JSON value and nothing else; logs,
warnings and error messages always go to stderr. Exit codes are in ``cli.errors``. A command
raises what goes wrong; the top-level group (``output.ReportingGroup``) reports it as
``error: CODE: message``, with the traceback only under the global ``--debug``. Text for people
goes through ``terminal.printable`` and a store URL through ``redact_secrets``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.agent import RunResult, run_events
from agentloom.agent.controls import STOP, SUPPLEMENT, send_control
from agentloom.agent.leases import is_interrupted
from agentloom.agent.views import run_detail, run_summaries
from agentloom.cli import render
from agentloom.cli.ask import ask
from agentloom.cli.commands import commands_app
from agentloom.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_WAITING, UsageFailure
from agentloom.cli.hooks import hooks_app
from agentloom.cli.jsonl import append_jsonl
from agentloom.cli.keys import keys_app
from agentloom.cli.live import drive, run_sync
from agentloom.cli.mcp import mcp_app
from agentloom.cli.options import BesideStoreOpt, ConfigOpt, JsonOpt, RunIdArg, StoreOpt
from agentloom.cli.output import (
    ReportingGroup,
    print_json,
    say,
    setup_logging,
    stderr_console,
    stdout_console,
    warn_unconfirmed,
)
from agentloom.cli.owners import owners_app
from agentloom.cli.queue import approve, reject, submit, workers_app
from agentloom.cli.scaffold import scaffold
from agentloom.cli.serve import serve
from agentloom.cli.skills import skills_app
from agentloom.cli.stores import open_existing_store, resolve_store_url
from agentloom.cli.worker import work
from agentloom.config import load_config
from agentloom.errors import redact_secrets
from agentloom.kernel import Kernel
from agentloom.squad.configured import runtime_from_config
from agentloom.store import Store
from agentloom.store.records import RunRecord, get_run
from agentloom.workspace.cleanup import CleanupResult

__all__ = ["app", "main"]

app = typer.Typer(name="agentloom", cls=ReportingGroup, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False,
                  help="Run AgentLoom agents from a YAML config and inspect their runs.")
runs_app = typer.Typer(no_args_is_help=True, help="Inspect and control runs in a store.")
app.add_typer(runs_app, name="runs")
app.add_typer(owners_app, name="owners")
app.add_typer(mcp_app, name="mcp")
app.add_typer(skills_app, name="skills")
app.add_typer(hooks_app, name="hooks")
app.add_typer(workers_app, name="workers")
app.add_typer(keys_app, name="keys")
app.add_typer(commands_app, name="commands")
app.command()(ask)
app.command()(submit)
app.command()(serve)
runs_app.command("approve")(approve)
runs_app.command("reject")(reject)


def _print_version(value: bool) -> None:
    if value:
        say(stdout_console(), f"agentloom {package_version('agentloom')}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option(
        "--debug", help="On a failure, also print its traceback (before the command name: "
        "agentloom --debug runs list).")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the version (agentloom X.Y.Z) and exit.")] = False,
) -> None:
    """Run AgentLoom agents from a YAML config and inspect their runs."""
    # --debug is read by ReportingGroup from the command line: a failure can come before
    # this callback runs (a bad option) and after it has returned.

# -- run / resume ----------------------------------------------------------------------------


def _read_task(task: str | None) -> str:
    if task is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageFailure("no TASK given: pass it as an argument, or pipe it on stdin "
                               "(echo 'the task' | agentloom run CONFIG)")
        task = sys.stdin.read()
    task = task.strip()
    if not task:
        raise UsageFailure("the task is empty")
    return task


def _finish(result: RunResult, agent: str | None, as_json: bool, store_url: str | None,
            *, hint: bool = True) -> None:
    warn_unconfirmed(result)
    # The run as `runs show` has it: its usage totals and its hook warnings (every one the run
    # recorded, those of an earlier process that drove it included).
    detail: dict[str, Any] = {}
    if store_url is not None:
        with _store(store_url, None, read_only=True) as opened:
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


@app.command()
def run(
    config: Annotated[Path, typer.Argument(
        metavar="CONFIG", help="The YAML config file.", show_default=False)],
    task: Annotated[str | None, typer.Argument(
        metavar="TASK", help="What to do; read from stdin when omitted and stdin is not a tty.")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", "-a", metavar="NAME", help="The agent to run (default: main, else the first).")] = None,
    session: Annotated[str | None, typer.Option(
        "--session", metavar="ID", help="Continue session ID (its history and persistent folder); "
        "refused (SESSION_BUSY) while another run of it has not ended.")] = None,
    workdir: Annotated[Path | None, typer.Option(
        "--workdir", metavar="PATH", help="Work in this existing folder (e.g. your repository): "
        "every file tool beneath it, exec at /work, never deleted. Default: workspace.bind.")
    ] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="If another run works in that folder (--workdir) or holds the session "
        "(--session), wait for it to end instead of failing.")
    ] = False,
    workflow: Annotated[str | None, typer.Option(
        "--workflow", "-w", metavar="NAME", help="Run workflow NAME of CONFIG (workflows:) "
        "instead of an agent; its output is its last node's.")] = None,
    store: BesideStoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run an agent or a workflow of CONFIG on TASK and show its calls live.

    Exit 0 when the run succeeded, 1 when it failed, was cancelled or timed out, 2 on a usage
    or config error, 3 while it waits for a person (agentloom runs approve|reject).
    """
    setup_logging()
    text = _read_task(task)
    cfg = load_config(config)
    if workflow is not None:
        if agent is not None or session is not None:
            raise UsageFailure("--workflow runs a workflow: leave out --agent and --session",
                               code="USAGE")
        name = cfg.workflow_name(workflow)
    else:
        name = cfg.agent_name(agent)
    runtime = runtime_from_config(cfg, store=store)
    result = run_sync(drive(
        runtime, lambda: runtime.start(text, agent=name, session=session, workdir=workdir,
                                       wait=wait), as_json=as_json))
    _finish(result, name, as_json, runtime.store_url)


# -- reading runs ----------------------------------------------------------------------------


@contextlib.contextmanager
def _store(store: str | None, config: Path | None, *, read_only: bool = False
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
    with _store(store, config, read_only=True) as opened:
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
    with _store(store, config, read_only=True) as opened:
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
    with _store(store, config, read_only=True) as opened:
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
    with _store(url, None) as opened:  # writable: it migrates a store of an older version
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
    _finish(result, run.agent, as_json, url, hint=False)


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


@app.command()
def worker(
    config: Annotated[Path, typer.Argument(
        metavar="CONFIG", help="The config the runs were started or submitted with.",
        show_default=False)],
    concurrency: Annotated[int, typer.Option(
        "--concurrency", "-n", metavar="N", min=1,
        help="The most runs this worker drives at once.")] = 1,
    once: Annotated[bool, typer.Option(
        "--once", help="Take what may be taken now (queued and interrupted runs), wait for "
        "those runs, exit.")] = False,
    poll: Annotated[float | None, typer.Option(
        "--poll", metavar="SECONDS", min=0.1,
        help="The longest idle wait between looks for work (default: workers.poll_s; "
        "PostgreSQL wakes a worker at once when a run is queued).")] = None,
    store: BesideStoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Drive the queued runs (agentloom submit) and the runs whose process died, until stopped.

    Claims take the highest priority first, then the oldest, at most N at once, within each
    agent's workers.max_concurrent_runs across all workers. Runs a live process drives are never
    taken; runs of another configuration are left. Ctrl-C / SIGTERM gives each run back to the
    queue at its next step and exits (a second signal quits at once). Exit 0 when every run it
    drove to an end succeeded, 1 otherwise.
    """
    setup_logging()
    cfg = load_config(config)
    runtime = runtime_from_config(cfg, store=store)
    out = stdout_console()

    def finished(result: RunResult) -> None:
        warn_unconfirmed(result)
        if not as_json:
            say(out, f"run {result.run_id}: {result.status}",
                f" — {result.output}" if result.output else "")

    def left(run_id: str, why: str) -> None:
        say(stderr_console(), f"left run {run_id}: {_LEFT.get(why, why)}")

    if not as_json:
        say(stderr_console(), f"worker {runtime.kernel.worker_id} on "
            f"{redact_secrets(str(runtime.store_url))}: up to {concurrency} run(s) at once",
            ", until the queue is empty" if once else "")
    report = asyncio.run(work(runtime, once=once, poll_s=poll, concurrency=concurrency,
                              on_finished=finished, on_left=left))
    if as_json:
        print_json({"resumed": [r.to_dict() for r in report.finished],
                    "claimed": report.claimed,
                    "left": [{"run_id": k, "reason": v} for k, v in report.left.items()]})
    elif not report.finished:
        say(stdout_console(), "no run to drive")
    ok = all(r.status in ("succeeded", "waiting", "pending") for r in report.finished)
    raise typer.Exit(EXIT_OK if ok else EXIT_FAILED)


_LEFT = {"RELEASE_CHANGED": "it was started with another configuration (RELEASE_CHANGED)",
         "LEASE_HELD": "another process took it first (LEASE_HELD)",
         "LEASE_LOST": "another process took it over (LEASE_LOST)",
         "BACKING_OFF": "it failed lately and waits out its back-off before the next try "
                        "(BACKING_OFF; runs show RUN_ID says why)"}


@app.command()
def cleanup(
    store: StoreOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Retry every pending run-end cleanup once, now, and report what each did.

    A cleanup that failed when its run ended (a folder that could not be deleted) is pending;
    `agentloom worker` retries it with back-off, this command at once, whatever its back-off.
    Exit 0 when no cleanup is left pending, 1 otherwise.
    """
    setup_logging()
    url = resolve_store_url(store, config)
    with _store(url, None):  # refuses a store that does not exist, naming it
        pass

    async def retry() -> list[CleanupResult]:
        if config is not None:  # its workspace root for jobs that do not record theirs
            runtime = runtime_from_config(load_config(config), store=url)
            try:
                return await runtime.kernel.environment.cleanup.retry_pending(due_only=False)
            finally:
                await runtime.aclose()
        kernel = Kernel(url)
        try:
            return await kernel.environment.cleanup.retry_pending(due_only=False)
        finally:
            kernel.close()

    results = asyncio.run(retry())
    pending = [r for r in results if r.state == "pending"]
    if as_json:
        print_json({"retried": [r.to_dict() for r in results], "pending": len(pending)})
    elif not results:
        say(stdout_console(), "no pending cleanup")
    else:
        for r in results:
            say(stdout_console(), f"run {r.run_id}: cleanup {r.state} (attempt {r.attempts})",
                f": {'; '.join(r.errors)}" if r.errors else "")
    raise typer.Exit(EXIT_FAILED if pending else EXIT_OK)


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
    with _store(url, None) as opened:
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
        with _store(url, None) as opened:
            asyncio.run(send_control(opened, run_id, STOP, {"reason": reason}))
    with _store(url, None) as opened:
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
    with _store(url, None) as opened:
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


# -- init ------------------------------------------------------------------------------------


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Where to write (default: .).",
                                              show_default=False)] = Path(),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write an example project that runs offline: agentloom.yaml, turns.yaml, hooks.py."""
    files = scaffold(directory, force=force)
    config = directory / "agentloom.yaml"
    if as_json:
        print_json({"directory": str(directory), "files": [str(f) for f in files],
                     "config": str(config)})
        return
    console = stdout_console()
    for f in files:
        say(console, f"wrote {f}")
    say(console, f"\nnext: agentloom run {config} \"write a note\"")


def main() -> None:
    """The console-script entry point."""
    app(prog_name="agentloom")
