"""The ``agentloom`` command (typer): ``run``, ``submit`` and ``workers list`` (``cli/queue.py``),
``runs list|show|events|resume|stop|supplement|approve|reject`` (``cli/runs.py``), ``worker``, ``cleanup``,
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
import sys
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Annotated

import typer

from agentloom.agent import RunResult
from agentloom.assembly import runtime_from_config
from agentloom.cli.ask import ask
from agentloom.cli.commands import commands_app
from agentloom.cli.errors import EXIT_FAILED, EXIT_OK, UsageFailure
from agentloom.cli.hooks import hooks_app
from agentloom.cli.keys import keys_app
from agentloom.cli.live import drive, run_sync
from agentloom.cli.mcp import mcp_app
from agentloom.cli.options import BesideStoreOpt, ConfigOpt, JsonOpt, StoreOpt
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
from agentloom.cli.queue import submit, workers_app
from agentloom.cli.runs import finish_run, runs_app, store_session
from agentloom.cli.scaffold import scaffold
from agentloom.cli.serve import serve
from agentloom.cli.skills import import_changed_skills, skills_app
from agentloom.cli.stores import resolve_store_url
from agentloom.cli.worker import work
from agentloom.config import load_config
from agentloom.errors import redact_secrets
from agentloom.kernel import Kernel
from agentloom.workspace.cleanup import CleanupResult

__all__ = ["app", "main"]

app = typer.Typer(name="agentloom", cls=ReportingGroup, no_args_is_help=True, add_completion=False,
                  pretty_exceptions_enable=False,
                  help="Run AgentLoom agents from a YAML config and inspect their runs.")
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
    stream: Annotated[bool, typer.Option(
        "--stream", help="Show the model's text and reasoning as they arrive (on stderr with "
        "--json); the calls are listed line by line. The run's record is the same.")] = False,
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
    import_changed_skills(cfg, store)  # the skills: path sources that changed, one line each
    runtime = runtime_from_config(cfg, store=store)
    result = run_sync(drive(
        runtime, lambda: runtime.start(text, agent=name, session=session, workdir=workdir,
                                       wait=wait), as_json=as_json, stream=stream))
    finish_run(result, name, as_json, runtime.store_url)


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
    with store_session(url, None):  # refuses a store that does not exist, naming it
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
