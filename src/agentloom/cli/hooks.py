"""``agentloom hooks import-claude SETTINGS [--agent A] [--write CONFIG] [--skip-unsupported] [--json]``:
Claude Code hooks converted to AgentLoom hooks (docs/hooks.md; docs/cli.md is the reference).

Without ``--write`` the hooks are printed as YAML to paste under ``agents:``; with it they are
appended to ``agents.<A>.hooks`` of CONFIG in place — the rest of the file, comments included,
is kept when the agent is a block mapping; otherwise the file is rewritten from its data (the
comments are then lost, and a warning says so). Nothing is written unless the result loads as
a valid configuration. A refusal exits 2 and names what cannot be converted. ``--json`` prints
one object: the agent, the hooks, the skipped events, the project folder and the file written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from agentloom.cli.errors import EXIT_OK, UsageFailure
from agentloom.cli.options import JsonOpt
from agentloom.cli.output import print_json, say, stderr_console, stdout_console
from agentloom.cli.yaml_edit import (
    dump,
    indented,
    insert_before_end,
    node_at,
    read_config_text,
    write_config,
)
from agentloom.hooks.claude import ClaudeImportError, import_settings, project_dir

__all__ = ["hooks_app"]

hooks_app = typer.Typer(no_args_is_help=True, help="Bring hooks from other tools (Claude Code).")


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
