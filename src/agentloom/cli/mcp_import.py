"""``agentloom mcp import-claude MCPJSON [--write CONFIG]``: a Claude Code ``.mcp.json`` brought
into a config's ``mcp_servers`` (``mcp.claude_import`` converts; this writes or prints).
Registered on ``agentloom mcp`` by ``cli.mcp``; docs/mcp.md is the reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentloom.cli.errors import EXIT_OK, UsageFailure
from agentloom.cli.options import JsonOpt
from agentloom.cli.output import print_json, say, stdout_console

__all__ = ["mcp_import_claude"]


def mcp_import_claude(
    source: Annotated[Path, typer.Argument(
        metavar="MCPJSON", show_default=False,
        help="A Claude Code .mcp.json (or Claude Desktop config) with an mcpServers object.")],
    write: Annotated[Path | None, typer.Option(
        "--write", metavar="CONFIG", help="Add the servers to this config file's mcp_servers "
        "in place (else the YAML is printed).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Convert the mcpServers of a Claude Code .mcp.json into mcp_servers entries: stdio
    servers (command, args, env) and Streamable HTTP ones (type http, url, headers), ${VAR} and
    ${VAR:-default} kept as they are. Anything without an exact equivalent (the legacy sse
    transport, other keys, ${VAR} in command, args or url) is refused naming it, exit 2."""
    from agentloom.cli.output import stderr_console
    from agentloom.mcp.claude_import import McpImportError, import_mcp_json

    try:
        imported = import_mcp_json(source)
    except McpImportError as exc:
        raise UsageFailure(exc.error.message, code=exc.code) from None
    if not as_json:
        for warning in imported.warnings:
            say(stderr_console(), f"warning: {warning}")
    if write is not None:
        _write_servers(write, imported.servers)
    if as_json:
        print_json({"mcp_servers": imported.servers, "warnings": list(imported.warnings),
                    "written": None if write is None else str(write)})
    elif write is None:
        from agentloom.cli.yaml_edit import dump

        say(stdout_console(), f"# MCP servers imported from {source}\n"
            + dump({"mcp_servers": imported.servers}).rstrip())
    else:
        say(stdout_console(), f"added {len(imported.servers)} MCP server(s) to mcp_servers in "
            f"{write}: {', '.join(imported.servers)}")
    raise typer.Exit(EXIT_OK)


def _write_servers(config: Path, servers: dict[str, dict[str, Any]]) -> None:
    """Add ``servers`` to the top-level ``mcp_servers`` of ``config``, in place."""
    import copy

    import yaml

    from agentloom.cli import yaml_edit as edit

    text, data = edit.read_config_text(config)
    if not isinstance(data, dict):
        raise UsageFailure(f"{config}: not a configuration (a mapping of keys)",
                           code="CONFIG_INVALID")
    present = data.get("mcp_servers") or {}
    if not isinstance(present, dict):
        raise UsageFailure(f"{config}: mcp_servers is not a mapping of servers",
                           code="CONFIG_INVALID")
    clash = [name for name in servers if name in present]
    if clash:
        raise UsageFailure(f"{config}: mcp_servers already has {', '.join(map(repr, clash))}; "
                           "rename or remove the entry in one of the files first",
                           code="CLAUDE_IMPORT")
    expected = copy.deepcopy(data)
    expected["mcp_servers"] = {**present, **servers}
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    node = edit.node_at(root, "mcp_servers")
    new: str | None = None
    if node is None and isinstance(root, yaml.MappingNode) and not root.flow_style:
        new = f"{text.rstrip(chr(10))}\n" + "mcp_servers:\n" + edit.indented(edit.dump(servers), 2)
    elif isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        new = edit.insert_before_end(
            text, node.end_mark, edit.indented(edit.dump(servers), node.value[0][0].start_mark.column))
    edit.write_config(config, expected, new, what="the imported MCP servers")
