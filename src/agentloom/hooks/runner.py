"""The port every hook handler kind's runner implements (``HookRunner``).

Each kind's runner lives with its spec in ``hooks/handlers/<kind>.py`` (``PythonHookRunner``
in ``handlers.python``, re-exported here, its published place); the ``HookManager`` picks one
by ``handler.kind``. A runner only runs the code: the ``HookManager`` bounds it with the hook's
timeout, contains whatever it raises and abandons it when the run stops.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers.python import PythonHookRunner, resolve_ref
from agentloom.hooks.spec import HookSpec

__all__ = ["HookRunner", "PythonHookRunner", "resolve_ref"]


class HookRunner(Protocol):
    """The port a hook kind implements (``python``, ``command``, ``http``, ``mcp``, or one
    registered with ``register_hook_kind``): run the hook's code on the frozen ``HookEvent``
    and return what it returned, unparsed (raising ``InvalidDecision`` when its output is no
    decision at all). Timeouts and failures are the ``HookManager``'s business, not the
    runner's."""

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        """Run the hook's code on the frozen event and return what it returned."""
        ...
