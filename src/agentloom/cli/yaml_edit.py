"""Adding imported entries to a config file in place (``hooks import-claude --write``,
``mcp import-claude --write``): the new entries are inserted as text, so the rest of the file —
comments, layout — is kept; where that cannot be done exactly (a flow-style mapping, a text
that would not read back as the expected data) the file is rewritten from its data and a
warning says its comments were not kept. Nothing is written unless the result loads as a valid
configuration, and the file is replaced in one step (a temporary file renamed over it).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from agentloom.cli.errors import UsageFailure
from agentloom.cli.output import say, stderr_console
from agentloom.config.loader import parse_config
from agentloom.errors import ConfigError
from agentloom.yamlfile import load_yaml

__all__ = ["dump", "indented", "insert_before_end", "node_at", "read_config_text",
           "write_config"]


def dump(value: Any) -> str:
    """``value`` as block-style YAML, keys in their order."""
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)


def read_config_text(config: Path) -> tuple[str, Any]:
    """The text of the config file ``config`` and its data.

    Raises:
        UsageFailure: ``CONFIG_UNREADABLE`` when it cannot be read as YAML.
    """
    try:
        text = config.read_text(encoding="utf-8")
        return text, load_yaml(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UsageFailure(f"{config}: cannot read it as YAML ({exc})",
                           code="CONFIG_UNREADABLE") from None


def node_at(node: yaml.Node | None, *keys: str) -> yaml.Node | None:
    """The value node at ``keys`` below the mapping ``node``, or ``None``."""
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value
                     if isinstance(k, yaml.ScalarNode) and k.value == key), None)
    return node


def indented(text: str, indent: int) -> str:
    """Every non-blank line of ``text`` indented by ``indent`` spaces."""
    return "".join(" " * indent + line if line.strip() else line
                   for line in text.splitlines(keepends=True))


def insert_before_end(text: str, end: yaml.Mark, block: str) -> str:
    """``text`` with ``block`` (whole lines) inserted where a block node ending at ``end``
    ends: before the line ``end`` is on, or after it when that line has content (the file's
    last line)."""
    start = text.rfind("\n", 0, end.index) + 1
    at: int = end.index
    if text[start:at].strip():
        return f"{text[:at]}\n{block}{text[at:]}"
    return f"{text[:start]}{block}{text[start:]}"


def write_config(config: Path, expected: Any, new: str | None, *, what: str) -> None:
    """Replace ``config`` with ``new`` (its text with the entries inserted), or with
    ``expected`` dumped when ``new`` is ``None`` or does not read back as ``expected`` — after
    checking that ``expected`` loads.

    Raises:
        UsageFailure: the result is not a valid configuration (the message names ``what``
            and the problem); nothing was written.
    """
    if new is None or load_yaml(new) != expected:
        new = dump(expected)
        say(stderr_console(), f"warning: {config} was rewritten from its data: its comments "
            "and layout were not kept")
    try:
        parse_config(expected, base_dir=config.resolve().parent, source=str(config))
    except ConfigError as exc:
        raise UsageFailure(f"{what} do not load: {exc.error.message}", code=exc.code) from None
    fd, tmp = tempfile.mkstemp(prefix=".import-", dir=config.resolve().parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(new)
    os.chmod(tmp, config.stat().st_mode & 0o777)
    os.replace(tmp, config)
