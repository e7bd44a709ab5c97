"""Hook runners beyond ``python`` (000 §5.4): each implements the ``HookRunner`` port, and the
``HookManager`` picks one by ``handler.kind``::

    python  ─► hooks.runner.PythonHookRunner   the function, in this process
    command ─► CommandHookRunner                a program in the sandbox, the event on stdin
    http    ─► HttpHookRunner                   a POST of the event, the answer's body
    mcp     ─► McpHookRunner                    tools/call of an MCP tool, the event its arguments

A runner only runs the hook and returns what it decided, unparsed (a mapping, as a Python hook
returns); raising is a hook failure, raising ``InvalidDecision`` an invalid decision. The
manager bounds it with the hook's timeout (cancelling it), parses and validates the decision,
and the pipeline commits it: every kind has the same statuses, fail-open, ``on_failure`` and
recovery.
"""

from agentloom.hooks.runners._common import HookRunFailed, HookStartFailed
from agentloom.hooks.runners.command import CommandHookRunner, HookEnvironment
from agentloom.hooks.runners.http import HttpHookRunner
from agentloom.hooks.runners.mcp import McpHookHost, McpHookRunner

__all__ = ["CommandHookRunner", "HookEnvironment", "HookRunFailed", "HookStartFailed",
           "HttpHookRunner", "McpHookHost", "McpHookRunner"]
