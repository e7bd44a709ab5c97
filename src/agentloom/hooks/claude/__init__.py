"""Claude Code hooks in AgentLoom: importing a ``settings.json``'s hooks, and the shim that
runs them as ``kind: command`` hooks with ``format: claude-code`` (docs/hooks.md)::

    .claude/settings.json ─► settings.import_settings ─► agents.<a>.hooks entries (YAML)
    run time: HookEvent ─► shim.claude_event ─► the script ─► shim.claude_decision ─► decision
              tool names and tool_input fields both ways: tools

Owns: the translation of names, fields, matchers, events and answers. Does not own: running
the command (``hooks.handlers.command``), the CLI (``agentloom hooks import-claude``).
"""

from agentloom.hooks.claude.settings import (
    ClaudeImportError,
    ImportedHooks,
    capability_globs,
    import_events,
    import_settings,
    project_dir,
)
from agentloom.hooks.claude.shim import FORMAT, ClaudeHookError, claude_decision, claude_event
from agentloom.hooks.claude.tools import (
    ClaudeMappingError,
    capability_of,
    claude_tool_name,
    from_claude_input,
    to_claude_input,
)

__all__ = [
    "FORMAT",
    "ClaudeHookError",
    "ClaudeImportError",
    "ClaudeMappingError",
    "ImportedHooks",
    "capability_globs",
    "capability_of",
    "claude_decision",
    "claude_event",
    "claude_tool_name",
    "from_claude_input",
    "import_events",
    "import_settings",
    "project_dir",
    "to_claude_input",
]
