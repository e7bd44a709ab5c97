"""The parts of ``agentloom runs replay`` (the command itself is in ``cli/runs.py``): the
throwaway runtime a run is re-driven on, and how a replay's report is printed.

The throwaway runtime is the config's, with two things changed so that nothing of the
re-drive lands anywhere the user keeps things: its store is ``memory://`` (no row is written
to any database) and its workspace root a temporary folder, removed afterwards (no bound
``workspace.bind`` folder, nothing kept). The origin's store is opened read only.

Owns: ``replay_runs`` (check every run, then re-drive each) and the text output. Does not own:
serving the record or comparing (``agent.replay``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from agentloom.agent.replay import ReplayReport, replay_refusal, replay_run
from agentloom.assembly import runtime_from_config
from agentloom.cli.errors import UsageFailure
from agentloom.cli.output import say
from agentloom.config import Config, load_config
from agentloom.store import Store
from agentloom.store.records import RunRecord, get_run, runs

__all__ = ["newest_replayable", "print_report", "replay_runs"]


def newest_replayable(store: Store, count: int, *, besides: Sequence[str] = ()) -> list[str]:
    """The newest ``count`` runs ``runs replay`` can re-drive (finished agent runs without a
    session; workflow and session runs are passed over), other than ``besides``."""
    found: list[str] = []
    for run in runs(store, newest_first=True, lenient=True):
        if len(found) == count:
            break
        if run.run_id not in besides and replay_refusal(run, run.run_id) is None:
            found.append(run.run_id)
    return found


def _checked(store: Store, run_ids: Sequence[str]) -> list[RunRecord]:
    runs = []
    for run_id in run_ids:
        run = get_run(store, run_id)
        refused = replay_refusal(run, run_id)
        if refused is not None:
            raise UsageFailure(refused[1], code=refused[0])
        assert run is not None
        runs.append(run)
    return runs


def _throwaway(config: Config, root: str) -> Config:
    """``config`` with its workspace moved to ``root`` (nothing bound, nothing kept)."""
    workspace = config.workspace.model_copy(update={"root": root, "bind": None, "keep": False})
    return config.model_copy(update={"workspace": workspace})


async def replay_runs(store: Store, run_ids: Sequence[str], config: Path | None, *,
                      config_of: Callable[[RunRecord], Path]) -> list[ReplayReport]:
    """Check every run first (an unknown, unfinished or unsupported one is a usage error,
    before anything is re-driven), then re-drive each on a throwaway runtime of its config:
    ``config`` when given, else the file the run was started from (``config_of(run)``)."""
    runs = _checked(store, run_ids)
    reports = []
    for run in runs:
        path = config if config is not None else config_of(run)
        loaded = load_config(path)
        workflows = frozenset(loaded.workflow_name(n) for n in loaded.workflows)
        refused = replay_refusal(run, run.run_id, workflows=workflows)
        if refused is not None:
            raise UsageFailure(refused[1], code=refused[0])
        if run.agent not in loaded.agents:
            raise UsageFailure(f"run {run.run_id} is a run of agent {run.agent!r}, which "
                               f"{path} does not define", code="AGENT_NOT_FOUND")
        with tempfile.TemporaryDirectory(prefix="agentloom-replay-") as root:
            runtime = runtime_from_config(_throwaway(loaded, root), store="memory://")
            try:
                reports.append(await replay_run(store, run, runtime))
            finally:
                await runtime.aclose()
    return reports


def print_report(console: Console, report: ReplayReport) -> None:
    """A replay's report for people: the verdict, then the first divergence with both sides."""
    head = f"run {report.run_id} (agent {report.agent}): {report.calls} recorded call(s)"
    found = report.divergence
    if found is None:
        say(console, f"{head} replay the same; nothing was executed")
        return
    where = f"operation {found.operation_id}" if found.operation_id else "a call not recorded"
    say(console, f"{head}: DIVERGES at {where} ({found.logical_key}, {found.capability})")
    say(console, f"  {found.kind}: {found.message}")
    if found.diff:
        for line in found.diff:
            say(console, f"    {line}")
        return
    say(console, f"  recorded: {_json(found.recorded)}")
    say(console, f"  replayed: {_json(found.replayed)}")


def _json(value: object) -> str:
    return "(nothing)" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
