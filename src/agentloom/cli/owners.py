"""``agentloom owners delete OWNER --yes``: delete an agent or workflow and everything of it
(000 §7.4; ``agent.owners``). docs/cli.md is the reference.

Without ``--yes`` nothing changes: it says what would be deleted and exits 2
(``CONFIRMATION_REQUIRED``). The folders are looked for under the workspace root of
``--config``; without it, under the root the owner's run-end cleanups recorded, else that of
the config file its runs were started from, else the default root of the working folder
(``folders.default_workspace_root``).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.agent.derived import derived_runs
from agentloom.agent.owners import OwnerDeletion, delete_owner, owner_runs, parse_owner
from agentloom.assembly import runtime_from_config
from agentloom.cli.errors import EXIT_OK, EXIT_USAGE, UsageFailure
from agentloom.cli.output import print_json, say, setup_logging, stderr_console, stdout_console
from agentloom.cli.stores import open_existing_store, resolve_store_url
from agentloom.config import load_config
from agentloom.errors import AgentLoomError
from agentloom.kernel import Kernel
from agentloom.refs import OwnerRef
from agentloom.store.cleanup import run_cleanup_jobs
from agentloom.store.owners import owner_label
from agentloom.store.records import get_run

__all__ = ["owners_app"]

owners_app = typer.Typer(no_args_is_help=True, help="Delete agents and workflows (owners) "
                         "with everything of them.")


@owners_app.command("delete")
def owners_delete(
    owner: Annotated[str, typer.Argument(
        metavar="OWNER", help="agent:NAME or workflow:NAME (a bare name is refused).",
        show_default=False)],
    yes: Annotated[bool, typer.Option(
        "--yes", help="Really delete; without it nothing changes and what would be deleted "
        "is shown (exit 2).")] = False,
    wait: Annotated[float, typer.Option(
        "--wait", metavar="SECONDS", min=0.0, help="How long to wait for its running runs to "
        "end after stopping them.")] = 60.0,
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). Default: "
        "$AGENTLOOM_STORE, else the store of --config, else sqlite:///.agentloom/agentloom.db."
    )] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", metavar="CONFIG", help="A config file: its store and workspace "
        "root are used.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON value on stdout, nothing else.")] = False,
) -> None:
    """Delete OWNER: refuse its new runs, stop its running ones, delete its sessions, runs,
    records, checkpoints, blobs no other owner uses, and folders. Of another owner, only the
    copies of an agent's content in the workflow runs that called it are replaced by a
    deletion marker. Deleting an owner already deleted is a no-op that says so.

    Exit 0 when it is deleted, 2 without --yes (nothing changed) or on a bad OWNER, 1 when it
    could not finish (OWNER_DELETION_PENDING: run it again).
    """
    setup_logging()
    try:
        ref = parse_owner(owner)
    except ValueError as exc:
        raise UsageFailure(str(exc), code="OWNER_INVALID") from None
    url = resolve_store_url(store, config)
    open_existing_store(url).close()  # refuses a store that does not exist, naming it
    summary, root = asyncio.run(_delete(url, config, ref, wait_s=wait, dry_run=not yes))
    out = {**summary.to_dict(), "workspace_root": str(root)}
    if not yes:
        _refuse(out, as_json)
    if as_json:
        print_json(out)
    elif summary.state == "already_deleted":
        say(stdout_console(), f"{owner_label(ref)} was already deleted; nothing to do")
    else:
        say(stdout_console(), f"deleted {owner_label(ref)}: {_counts(out)}")
    raise typer.Exit(EXIT_OK)


async def _delete(url: str, config: Path | None, owner: OwnerRef, *, wait_s: float,
                  dry_run: bool) -> tuple[OwnerDeletion, Path]:
    if config is not None:  # its runtime can also finish a run nobody drives any more
        runtime = runtime_from_config(load_config(config), store=url)
        try:
            summary = await runtime.delete_owner(owner, wait_s=wait_s, dry_run=dry_run)
            return summary, runtime.kernel.environment.root
        finally:
            await runtime.aclose()
    kernel = Kernel(url)
    try:
        root = _recorded_root(kernel, owner)
        if root is not None:
            kernel.close()
            kernel = Kernel(url, workspace_root=root)
        summary = await delete_owner(kernel, owner, wait_s=wait_s, dry_run=dry_run)
        return summary, kernel.environment.root
    finally:
        kernel.close()


def _recorded_root(kernel: Kernel, owner: OwnerRef) -> Path | None:
    """The workspace root of the owner's runs (and of the workflow runs it worked in) when
    they agree on one: the root their run-end cleanups recorded, else that of the config
    file they were started from."""
    roots: set[str] = set()
    configs: set[str] = set()
    own = owner_runs(kernel, owner)
    others = [r for run_id in derived_runs(kernel, owner, own=[r.run_id for r in own])
              if (r := get_run(kernel.store, run_id, lenient=True)) is not None]
    for run in [*own, *others]:
        for job in run_cleanup_jobs(kernel.store, run.run_id):
            recorded = job.data.get("root")
            if recorded:
                roots.add(str(recorded))
        if run.config_path and Path(run.config_path).is_file():
            configs.add(run.config_path)
    if not roots:
        for path in sorted(configs):
            with contextlib.suppress(AgentLoomError, OSError):
                roots.add(str(load_config(Path(path)).workspace_root().absolute()))
    if len(roots) > 1:
        raise UsageFailure(
            f"the runs of {owner_label(owner)} used several workspace roots "
            f"({', '.join(sorted(roots))}); pass --config CONFIG to name the one to clean",
            code="WORKSPACE_ROOT_AMBIGUOUS")
    return Path(roots.pop()) if roots else None


def _counts(out: dict[str, Any]) -> str:
    rows = out["rows"]
    shown = ", ".join(f"{n} {t}" for t, n in sorted(rows.items())) or "no rows"
    extra = [f"{out['blobs_kept']} shared blob(s) kept"] if out["blobs_kept"] else []
    if out.get("derived"):  # copies of its content in other owners' runs (agent.derived)
        extra.append("its content replaced by a deletion marker in " + ", ".join(
            f"{n} {t}" for t, n in sorted(out["derived"].items())))
    if out.get("stopped"):
        extra.append(f"stopped run(s) {', '.join(out['stopped'])}")
    if out.get("running"):
        extra.append(f"running run(s) {', '.join(out['running'])} would be stopped")
    return "; ".join([shown, *extra])


def _refuse(out: dict[str, Any], as_json: bool) -> None:
    """No ``--yes``: say what would be deleted, change nothing, exit 2."""
    if out["state"] == "already_deleted":
        message = f"{out['owner']} was already deleted; nothing to do"
    else:
        message = (f"deleting {out['owner']} needs --yes; nothing was changed. It would delete "
                   f"{_counts(out)}, and its folders under {out['workspace_root']}")
    if as_json:
        print_json({**out, "confirmed": False})
    else:
        say(stdout_console(), message)
    say(stderr_console(), "error: CONFIRMATION_REQUIRED: pass --yes to delete")
    raise typer.Exit(EXIT_USAGE)
