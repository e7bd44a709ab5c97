"""``agentloom hooks``: ``import-claude`` and ``replay`` (docs/hooks.md, docs/replay.md; docs/cli.md
is the reference).

``hooks replay CONFIG [--run RUN_ID …] [--last N] [--since ISO] [--agent NAME]
[--include-remote] [--json] [--store URL]``: CONFIG's hooks, as they are now, run on the
recorded calls of past runs of its store, opened read only (``views.hook_replay``); exit 1 when
a decision or a value after the chain differs, 0 when none does, 2 for bad input.

``hooks import-claude SETTINGS [--agent A] [--write CONFIG] [--skip-unsupported] [--json]``:
Claude Code hooks converted to AgentLoom hooks.

Without ``--write`` the hooks are printed as YAML to paste under ``agents:``; with it they are
appended to ``agents.<A>.hooks`` of CONFIG in place — the rest of the file, comments included,
is kept when the agent is a block mapping; otherwise the file is rewritten from its data (the
comments are then lost, and a warning says so). Nothing is written unless the result loads as
a valid configuration. A refusal exits 2 and names what cannot be converted. ``--json`` prints
one object: the agent, the hooks, the skipped events, the project folder and the file written.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from agentloom.assembly import hook_functions, hook_specs
from agentloom.cli.errors import EXIT_FAILED, EXIT_OK, UsageFailure
from agentloom.cli.options import BesideStoreOpt, JsonOpt
from agentloom.cli.output import print_json, say, stderr_console, stdout_console
from agentloom.cli.stores import open_existing_store, resolve_store_url
from agentloom.cli.yaml_edit import (
    dump,
    indented,
    insert_before_end,
    node_at,
    read_config_text,
    write_config,
)
from agentloom.config import Config, load_config
from agentloom.config.hooks import configured_hooks
from agentloom.config.skills import SkillHooksConfig
from agentloom.hooks.claude import ClaudeImportError, import_settings, project_dir
from agentloom.hooks.handlers import CommandHookRunner
from agentloom.hooks.manager import HookManager
from agentloom.store import Store
from agentloom.store.records import get_run, runs
from agentloom.views.hook_replay import ReplayReport, ScratchHookEnvironment, replay_runs

__all__ = ["hooks_app"]

hooks_app = typer.Typer(no_args_is_help=True, help="Test a hook policy on past runs; bring "
                        "hooks from other tools (Claude Code).")
DEFAULT_LAST = 20


@hooks_app.command("replay")
def replay(
    config: Annotated[Path, typer.Argument(
        metavar="CONFIG", help="The config whose hooks, as they are now, are replayed.",
        show_default=False)],
    run: Annotated[list[str] | None, typer.Option(
        "--run", metavar="RUN_ID", help="Replay this run (repeatable).")] = None,
    last: Annotated[int | None, typer.Option(
        "--last", metavar="N", min=1, help=f"The newest N runs (default {DEFAULT_LAST}, "
        "when no --run is given).")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", metavar="ISO", help="Only runs created at or after this time "
        "(2026-12-01, 2026-12-01T08:00:00+00:00; no zone: UTC).")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", metavar="NAME", help="Only runs of this agent.")] = None,
    include_remote: Annotated[bool, typer.Option(
        "--include-remote", help="Also run http and mcp hooks (skipped by default: their "
        "recorded decision stands).")] = False,
    store: BesideStoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run CONFIG's hooks on the recorded calls of past runs, executing nothing and writing
    nothing, and report every decision or payload that would change (exit 1 if any)."""
    loaded = load_config(config)  # a ConfigError exits 2, naming the key
    url = resolve_store_url(store, config)
    opened = open_existing_store(url, read_only=True)
    try:
        run_ids = _selected(opened, run or [], last, since, agent)
        manager = HookManager(hook_specs(_without_skill_hooks(loaded)),
                              functions=hook_functions(loaded))
        with tempfile.TemporaryDirectory(prefix="agentloom-hooks-replay-") as spool:
            manager.attach_environment(ScratchHookEnvironment(loaded.sandbox.backend,
                                                              Path(spool)))
            report = asyncio.run(_replayed(opened, manager, run_ids, include_remote))
    finally:
        opened.close()
    if as_json:
        print_json(report.to_dict())
    else:
        _print_report(report)
    raise typer.Exit(EXIT_FAILED if report.changed else EXIT_OK)


def _without_skill_hooks(config: Config) -> Config:
    """``config``, refused when it has a ``{skill: …}`` hooks entry: those hooks are read from
    the store's bound skill versions, which the replay does not resolve (it opens nothing
    writable)."""
    for item in configured_hooks(config):
        if isinstance(item.entry, SkillHooksConfig):
            raise UsageFailure(f"{item.where}: hooks replay does not run a skill's hooks "
                               f"({{skill: {item.entry.skill}}}); replay a copy of the config "
                               "without that entry", code="REPLAY_UNSUPPORTED")
    return config


async def _replayed(store: Store, manager: HookManager, run_ids: list[str],
                    include_remote: bool) -> ReplayReport:
    try:
        return await replay_runs(store, manager, run_ids, include_remote=include_remote)
    finally:
        command = manager.runner("command")
        if isinstance(command, CommandHookRunner):
            await command.aclose()


def _selected(store: Store, run_ids: list[str], last: int | None, since: str | None,
              agent: str | None) -> list[str]:
    """The runs to replay, oldest first: the ``--run`` ones, else the newest ``--last``
    matching ``--since`` and ``--agent``."""
    for run_id in run_ids:
        if get_run(store, run_id, lenient=True) is None:
            raise UsageFailure(f"no run {run_id!r} in this store", code="RUN_NOT_FOUND")
    if run_ids:
        return list(dict.fromkeys(run_ids))
    after = None
    if since is not None:
        try:
            when = datetime.fromisoformat(since)
        except ValueError:
            raise UsageFailure(f"--since {since!r} is not an ISO time (2026-12-01 or "
                               "2026-12-01T08:00:00+00:00)", code="BAD_OPTION") from None
        after = (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()
    chosen = [r for r in runs(store, newest_first=True, lenient=True)
              if (after is None or r.created_at >= after) and (agent is None or r.agent == agent)]
    return [r.run_id for r in reversed(chosen[: last or DEFAULT_LAST])]


def _print_report(report: ReplayReport) -> None:
    out = stdout_console()
    for call in report.calls:
        if call.change == "unchanged":
            continue
        timing = call.changed_at or "before"
        side = call.timings[timing]
        recorded, new = side["recorded"], side["new"]
        was = recorded.decision if recorded is not None else "-"
        now = new.decision if new is not None else "-"
        why = "; ".join(f"{h['hook_id']}: {h.get('reason')}" for h in (new.hooks if new else ())
                        if h.get("decision") != "allow" and h.get("reason"))
        say(out, f"{call.change}: run {call.run_id} op {call.operation_id} {call.capability} "
            f"({timing}-hooks) {was} -> {now}"
            + (f" ({why})" if why else ""))
        for d in call.diff:
            say(out, f"    {d['path']}: {d['recorded']!r} -> {d['new']!r}")
        for note in call.notes:
            say(out, f"    note: {note}")
    totals = report.totals
    say(out, f"{len(report.runs)} run(s), " + ", ".join(f"{k.replace('_', ' ')}: {v}"
                                                         for k, v in totals.items()))


@hooks_app.command("import-claude")
def import_claude(
    settings: Annotated[Path, typer.Argument(
        metavar="SETTINGS", help="A Claude Code settings file (.claude/settings.json).",
        show_default=False)],
    agent: Annotated[str, typer.Option("--agent", metavar="A",
                                       help="The agent the hooks are added to.")] = "main",
    write: Annotated[Path | None, typer.Option(
        "--write", metavar="CONFIG", help="Add the hooks to this config file's agent in place "
        "(else the YAML is printed).")] = None,
    skip_unsupported: Annotated[bool, typer.Option(
        "--skip-unsupported", help="Skip (and list) events with no AgentLoom equivalent "
        "instead of refusing the file.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Convert a Claude Code settings file's PreToolUse / PostToolUse command hooks."""
    try:
        imported = import_settings(settings, skip_unsupported=skip_unsupported)
    except ClaudeImportError as exc:
        raise UsageFailure(exc.error.message, code=exc.code) from None
    if imported.skipped:
        say(stderr_console(), "warning: skipped hook events with no AgentLoom equivalent: ",
            ", ".join(imported.skipped))
    hooks = [dict(h) for h in imported.hooks]
    if not hooks:
        raise UsageFailure(f"{settings}: no PreToolUse or PostToolUse hooks to import",
                           code="CLAUDE_IMPORT")
    if write is not None:
        _write(write, agent, hooks, project_dir(settings))
    if as_json:
        print_json({"agent": agent, "hooks": hooks, "skipped": list(imported.skipped),
                    "project_dir": str(project_dir(settings)),
                    "written": None if write is None else str(write)})
    elif write is None:
        say(stdout_console(), f"# hooks imported from {settings}; the config file must sit in "
            f"{project_dir(settings)} (the commands run there)\n"
            + dump({"agents": {agent: {"hooks": hooks}}}).rstrip())
    else:
        say(stdout_console(), f"added {len(hooks)} hook(s) to agents.{agent} in {write}")
    raise typer.Exit(EXIT_OK)


def _write(config: Path, agent: str, hooks: list[dict[str, Any]], project: Path) -> None:
    if config.resolve().parent != project:
        raise UsageFailure(
            f"{config}: its folder is not the Claude Code project folder {project}; imported "
            "commands run in the config file's folder ($CLAUDE_PROJECT_DIR points to it), so "
            "the config must sit there", code="CLAUDE_IMPORT")
    text, data = read_config_text(config)
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, dict) or not isinstance(agents.get(agent), dict):
        known = sorted(agents) if isinstance(agents, dict) else []
        raise UsageFailure(f"{config}: no agent {agent!r} (agents: {known}); pick one with "
                           "--agent", code="CLAUDE_IMPORT")
    expected = copy.deepcopy(data)
    target = expected["agents"][agent]
    target["hooks"] = [*(target.get("hooks") or []), *hooks]
    write_config(config, expected, _inserted(text, agent, hooks), what="the imported hooks")


def _inserted(text: str, agent: str, hooks: list[dict[str, Any]]) -> str | None:
    """``text`` with ``hooks`` added to ``agents.<agent>.hooks`` as text, when that agent is
    a block mapping and its ``hooks`` (if any) a block list; ``None`` otherwise."""
    node = node_at(yaml.compose(text, Loader=yaml.SafeLoader), "agents", agent)
    if not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value:
        return None
    items = dump(hooks)
    existing = node_at(node, "hooks")
    if existing is None:
        indent = node.value[0][0].start_mark.column
        block, end = " " * indent + "hooks:\n" + indented(items, indent + 2), node.end_mark
    elif isinstance(existing, yaml.SequenceNode) and not existing.flow_style and existing.value:
        block, end = indented(items, existing.start_mark.column), existing.end_mark
    else:
        return None
    return insert_before_end(text, end, block)
