"""Ports the pipeline consumes: the raw capability handler and what it is handed.

A handler is the *raw* implementation of one capability. It is called once per
physical Attempt with the frozen, effective request; it never re-enters the
pipeline for its own request and never retries by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agentloom.attempts import AttemptContext as AttemptContext  # re-exported: what a handler is handed
from agentloom.attempts import CapabilityRequest as CapabilityRequest
from agentloom.results import ToolResult


class CapabilityHandler(Protocol):
    """The raw implementation of one capability: one call = one physical Attempt.

    Its traits tell the pipeline what it may do with a call whose Attempt was interrupted;
    every handler declares both (a class that subclasses this Protocol inherits the
    defaults, ``False``: an interrupted Attempt's outcome is ``unknown`` and it is never run
    again).

    Attributes:
        rerunnable: an Attempt has no external side effect (a model generation): without a
            before-hook its intent is committed with its result, and after a crash a lost
            Attempt is simply made again.
        recoverable: the handler is itself made of durable calls (a delegation): after a
            crash it is run again and replays what it committed, in the same Attempt.
    """

    rerunnable: bool = False
    recoverable: bool = False

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        ...


Observer = Callable[[str, dict[str, Any]], None]
"""Told of what the pipeline does (``operation.started``, ``operation.completed``,
``hook.warning``) with a JSON-able payload; it can change nothing."""
