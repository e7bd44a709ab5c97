"""``agentloom hooks import-claude SETTINGS [--agent A] [--write CONFIG] [--skip-unsupported]``:
Claude Code hooks converted to AgentLoom hooks (docs/hooks.md; docs/cli.md is the reference).

Without ``--write`` the hooks are printed as YAML to paste under ``agents:``; with it they are
appended to ``agents.<A>.hooks`` of CONFIG in place — the rest of the file, comments included,
is kept when the agent is a block mapping; otherwise the file is rewritten from its data (the
comments are then lost, and a warning says so). Nothing is written unless the result loads as
a valid configuration. A refusal exits 2 and names what cannot be converted.
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from agentloom.cli.errors import EXIT_OK, UsageFailure
from agentloom.cli.output import say, stderr_console, stdout_console
from agentloom.config.loader import parse_config
from agentloom.errors import ConfigError
from agentloom.hooks.claude import ClaudeImportError, import_settings, project_dir
from agentloom.yamlfile import load_yaml

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
    if write is None:
        say(stdout_console(), f"# hooks imported from {settings}; the config file must sit in "
            f"{project_dir(settings)} (the commands run there)\n"
            + yaml.safe_dump({"agents": {agent: {"hooks": hooks}}}, sort_keys=False,
                             allow_unicode=True, width=100).rstrip())
        raise typer.Exit(EXIT_OK)
    _write(write, agent, hooks, project_dir(settings))
    say(stdout_console(), f"added {len(hooks)} hook(s) to agents.{agent} in {write}")


def _write(config: Path, agent: str, hooks: list[dict[str, Any]], project: Path) -> None:
    if config.resolve().parent != project:
        raise UsageFailure(
            f"{config}: its folder is not the Claude Code project folder {project}; imported "
            "commands run in the config file's folder ($CLAUDE_PROJECT_DIR points to it), so "
            "the config must sit there", code="CLAUDE_IMPORT")
    try:
        text = config.read_text(encoding="utf-8")
        data = load_yaml(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UsageFailure(f"{config}: cannot read it as YAML ({exc})",
                           code="CONFIG_UNREADABLE") from None
    agents = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(agents, dict) or not isinstance(agents.get(agent), dict):
        known = sorted(agents) if isinstance(agents, dict) else []
        raise UsageFailure(f"{config}: no agent {agent!r} (agents: {known}); pick one with "
                           "--agent", code="CLAUDE_IMPORT")
    expected = copy.deepcopy(data)
    target = expected["agents"][agent]
    target["hooks"] = [*(target.get("hooks") or []), *hooks]
    new = _inserted(text, agent, hooks)
    if new is None or load_yaml(new) != expected:
        new = yaml.safe_dump(expected, sort_keys=False, allow_unicode=True, width=100)
        say(stderr_console(), f"warning: {config} was rewritten from its data: its comments "
            "and layout were not kept")
    try:
        parse_config(expected, base_dir=config.resolve().parent, source=str(config))
    except ConfigError as exc:
        raise UsageFailure(f"the imported hooks do not load: {exc.error.message}",
                           code=exc.code) from None
    fd, tmp = tempfile.mkstemp(prefix=".import-", dir=config.resolve().parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(new)
    os.chmod(tmp, config.stat().st_mode & 0o777)
    os.replace(tmp, config)


def _inserted(text: str, agent: str, hooks: list[dict[str, Any]]) -> str | None:
    """``text`` with ``hooks`` added to ``agents.<agent>.hooks`` as text, when that agent is
    a block mapping and its ``hooks`` (if any) a block list; ``None`` otherwise."""
    node = _value(yaml.compose(text, Loader=yaml.SafeLoader), "agents")
    node = _value(node, agent)
    if not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value:
        return None
    items = yaml.safe_dump(hooks, sort_keys=False, allow_unicode=True, width=100)
    existing = _value(node, "hooks")
    if existing is None:
        indent = node.value[0][0].start_mark.column
        block, end = " " * indent + "hooks:\n" + _indented(items, indent + 2), node.end_mark
    elif isinstance(existing, yaml.SequenceNode) and not existing.flow_style and existing.value:
        block, end = _indented(items, existing.start_mark.column), existing.end_mark
    else:
        return None
    start = text.rfind("\n", 0, end.index) + 1
    at: int = end.index
    if text[start:at].strip():  # the block ends on a line with content (end of file)
        return f"{text[:at]}\n{block}{text[at:]}"
    return f"{text[:start]}{block}{text[start:]}"


def _value(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            found: yaml.Node = v
            return found
    return None


def _indented(text: str, indent: int) -> str:
    return "".join(" " * indent + line if line.strip() else line
                   for line in text.splitlines(keepends=True))
