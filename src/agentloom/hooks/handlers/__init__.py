"""Hook handler kinds (000 §5.4): one module per kind, each its spec and its runner, listed in
one registry (``registry``)::

    python  ─► PythonHookHandler / PythonHookRunner    the function, in this process
    command ─► CommandHookHandler / CommandHookRunner  a program in the sandbox, the event on stdin
    http    ─► HttpHookHandler / HttpHookRunner        a POST of the event, the answer's body
    mcp     ─► McpHookHandler / McpHookRunner          tools/call of an MCP tool, the event its
                                                       arguments

A runner only runs the hook and returns what it decided, unparsed (a mapping, as a Python hook
returns); raising is a hook failure, raising ``InvalidDecision`` an invalid decision. The
manager bounds it with the hook's timeout (cancelling it), parses and validates the decision,
and the pipeline commits it: every kind has the same statuses, fail-open, ``on_failure`` and
recovery. A kind of your own is one module and one ``register_hook_kind`` call
(docs/hooks.md, "Adding a handler kind").
"""

from agentloom.hooks.handlers._common import HookRunFailed, HookStartFailed
from agentloom.hooks.handlers.command import CommandHookHandler, CommandHookRunner, HookEnvironment
from agentloom.hooks.handlers.http import HttpHookHandler, HttpHookRunner
from agentloom.hooks.handlers.kind import HookKind
from agentloom.hooks.handlers.mcp import McpHookHandler, McpHookHost, McpHookRunner
from agentloom.hooks.handlers.python import PythonHookHandler, PythonHookRunner
from agentloom.hooks.handlers.registry import (
    BUILTIN_KINDS,
    build_handler,
    default_runners,
    handler_spec,
    hook_kinds,
    register_hook_kind,
    unregister_hook_kind,
)

__all__ = ["BUILTIN_KINDS", "CommandHookHandler", "CommandHookRunner", "HookEnvironment",
           "HookKind", "HookRunFailed", "HookStartFailed", "HttpHookHandler", "HttpHookRunner",
           "McpHookHandler", "McpHookHost", "McpHookRunner", "PythonHookHandler",
           "PythonHookRunner", "build_handler", "default_runners", "handler_spec", "hook_kinds",
           "register_hook_kind", "unregister_hook_kind"]
