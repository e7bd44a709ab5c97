"""The run queue from the command line: ``agentloom submit`` (queue a run, return at once),
``agentloom workers list`` (the workers of a store, their heartbeats and the runs they hold)
and ``agentloom runs approve|reject RUN OPERATION`` (answer a call a hook asked a person
about). docs/cli.md and docs/workers.md are the reference.
"""

from __future__ import annotations

import asyncio
import getpass
from pathlib import Path
from typing import Annotated

import typer

from agentloom.agent.worker import held_runs, live_workers
from agentloom.approvals import answer
from agentloom.assembly import runtime_from_config
from agentloom.cli.errors import EXIT_OK, UsageFailure
from agentloom.cli.options import ConfigOpt, JsonOpt, StoreOpt
from agentloom.cli.output import print_json, say, setup_logging, stdout_console
from agentloom.cli.stores import open_existing_store, resolve_store_url
from agentloom.config import load_config
from agentloom.errors import redact_secrets
from agentloom.pipeline.coordinator import CommitCoordinator
from agentloom.store.runs import get_run
from agentloom.store.workers import all_workers

__all__ = ["approve", "reject", "submit", "workers_app"]

workers_app = typer.Typer(no_args_is_help=True, help="The worker processes of a store.")


def submit(
    config: Annotated[Path, typer.Argument(
        metavar="CONFIG", help="The YAML config file.", show_default=False)],
    task: Annotated[str, typer.Argument(metavar="TASK", help="What to do.", show_default=False)],
    agent: Annotated[str | None, typer.Option(
        "--agent", "-a", metavar="NAME", help="The agent to run (default: main, else the first).")] = None,
    workflow: Annotated[str | None, typer.Option(
        "--workflow", "-w", metavar="NAME", help="Queue a run of workflow NAME (workflows:) "
        "instead of an agent.")] = None,
    priority: Annotated[int, typer.Option(
        "--priority", metavar="N", help="Higher runs are claimed first; equal ones oldest "
        "first.")] = 0,
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). Default: "
        "$AGENTLOOM_STORE, else sqlite:///.agentloom/agentloom.db in the folder of CONFIG.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON value on stdout, nothing else.")] = False,
) -> None:
    """Queue a run of an agent or a workflow of CONFIG on TASK and return at once (pending).

    A worker (agentloom worker CONFIG) claims and drives it. Prints the run id (with --json:
    {"run_id", "status", "agent", "priority"}).
    """
    setup_logging()
    text = task.strip()
    if not text:
        raise UsageFailure("the task is empty")
    cfg = load_config(config)
    if workflow is not None and agent is not None:
        raise UsageFailure("give --agent or --workflow, not both")
    name = cfg.workflow_name(workflow) if workflow is not None else cfg.agent_name(agent)
    runtime = runtime_from_config(cfg, store=store)

    async def queue() -> str:
        try:
            return await runtime.submit(text, agent=name, priority=priority)
        finally:
            await runtime.aclose()

    run_id = asyncio.run(queue())
    if as_json:
        print_json({"run_id": run_id, "status": "pending", "agent": name, "priority": priority})
    else:
        say(stdout_console(), run_id)
    raise typer.Exit(EXIT_OK)


@workers_app.command("list")
def workers_list(
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). Default: "
        "$AGENTLOOM_STORE, else the store of --config, else sqlite:///.agentloom/agentloom.db."
    )] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", metavar="CONFIG", help="A config file; its store is used.")] = None,
    all_: Annotated[bool, typer.Option(
        "--all", help="Also the workers that stopped, and stale ones last seen over an hour "
        "ago that hold no run.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON value on stdout, nothing else.")] = False,
) -> None:
    """The workers of a store: live, draining, or stale (its last heartbeat is older than its
    lease: it died or hangs), when each was last seen, and the runs each holds now (the
    store's leases, not what the worker last said)."""
    setup_logging()
    url = resolve_store_url(store, config)
    opened = open_existing_store(url, read_only=True)
    try:
        now = opened.now()  # heartbeats are in the store's time
        shown = live_workers([w.to_row() for w in all_workers(opened)], now,
                             holders=held_runs(opened))
    finally:
        opened.close()
    if not all_:
        shown = [w for w in shown if w["alive"] or (w["state"] == "stale" and (
            w["held"] or w["last_seen_s"] <= STALE_SHOWN_S))]
    if as_json:
        print_json(shown)
        raise typer.Exit(EXIT_OK)
    out = stdout_console()
    if not shown:
        say(out, f"no live worker on {redact_secrets(url)}")
    for w in shown:
        held = ", ".join(w["held"]) or "no run"
        skew = w["clock_skew_s"]
        clock = "" if skew is None else (
            f"  its clock is {abs(skew):.0f}s {'ahead of' if skew > 0 else 'behind'} the store's")
        stale = (f" (no heartbeat for longer than its {w['lease_s']:g} s lease: it died or "
                 "hangs; its runs are taken over)" if w["state"] == "stale" else "")
        say(out, f"{w['worker_id']}  {w['state']}{stale}  last seen {w['last_seen_s']:.0f} s ago  "
            f"up to {w['concurrency']} at once  holds {held}{clock}")
    raise typer.Exit(EXIT_OK)


STALE_SHOWN_S = 3600.0
"""Without ``--all``, a stale worker that holds no run is shown this long after it was last seen."""


RunArg = Annotated[str, typer.Argument(metavar="RUN_ID", help="The waiting run.",
                                       show_default=False)]
OperationArg = Annotated[str, typer.Argument(
    metavar="OPERATION", help="The waiting call's operation id (runs show RUN_ID names it).",
    show_default=False)]
ReasonOpt = Annotated[str | None, typer.Option(
    "--reason", metavar="TEXT", help="Why; recorded with the answer (a rejection's reason is "
    "what the model is told).")]
AsOpt = Annotated[str | None, typer.Option(
    "--as", metavar="NAME", help="Who answers, as recorded and shown by runs show (default: "
    "cli:<your OS user name>).")]


def approve(run_id: RunArg, operation: OperationArg, reason: ReasonOpt = None,
            store: StoreOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False,
            as_: AsOpt = None) -> None:
    """Approve a call a hook asked a person about: it runs when its run goes on.

    Once every waiting call of the run is answered, the run is queued again and a worker
    resumes it. A second answer is refused (APPROVAL_ALREADY_ANSWERED).
    """
    _answer(run_id, operation, True, reason, store, config, as_json, as_)


def reject(run_id: RunArg, operation: OperationArg, reason: ReasonOpt = None,
           store: StoreOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False,
           as_: AsOpt = None) -> None:
    """Reject a call a hook asked a person about: it is denied and the model is told why.

    Once every waiting call of the run is answered, the run is queued again and a worker
    resumes it. A second answer is refused (APPROVAL_ALREADY_ANSWERED).
    """
    _answer(run_id, operation, False, reason, store, config, as_json, as_)


def _answer(run_id: str, operation: str, approve_it: bool, reason: str | None,
            store: str | None, config: Path | None, as_json: bool, as_: str | None) -> None:
    setup_logging()
    if as_ is not None and not as_.strip():
        raise UsageFailure("--as is empty; give the name to record as the answerer, or leave "
                           "--as out to record cli:<your OS user name>")
    actor = as_.strip() if as_ is not None else f"cli:{getpass.getuser()}"
    opened = open_existing_store(resolve_store_url(store, config))
    coordinator = CommitCoordinator(opened)
    try:
        record = asyncio.run(answer(opened, coordinator.commit, run_id=run_id,
                                    operation_id=operation, approve=approve_it, reason=reason,
                                    actor=actor))
        run = get_run(opened, run_id, lenient=True)  # the answer may have queued it
    finally:
        coordinator.close()
        opened.close()
    run_status = None if run is None else run.stored_status
    out = {"run_id": run_id, "operation_id": operation, "status": record.status,
           "answer": record.answer, "reason": record.reason, "actor": record.actor,
           "answered_at": record.answered_at, "run_status": run_status}
    if as_json:
        print_json(out)
    else:
        say(stdout_console(), f"{record.status} {record.capability_key} (op {operation}) of run "
            f"{run_id} as {record.actor}; the run is {run_status}")
    raise typer.Exit(EXIT_OK)
