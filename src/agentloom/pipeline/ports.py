"""Ports the pipeline consumes: the raw capability handler and what it is handed.

A handler is the *raw* implementation of one capability. It is called once per
physical Attempt with the frozen, effective request; it never re-enters the
pipeline for its own request and never retries by itself.

A handler of a long remote call may also be *resumable* (``ResumableHandler``): it commits a
remote handle during the Attempt (``AttemptContext.checkpoint``) and, after a crash, follows
that same remote call again from the handle (``resume_once``) — in the same Attempt, never
sending the call again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

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


class ResumableHandler(CapabilityHandler, Protocol):
    """A handler that can follow its interrupted Attempt again from a committed handle.

    During ``invoke_once`` it commits a remote handle (a remote task id) with
    ``context.checkpoint(handle)`` as soon as it has one. When the runtime stopped during
    the Attempt (the operation is still ``attempt_started``):

    * a handle of this Attempt was committed ─► ``resume_once(request, context, handle)``:
      the same Attempt (no new Attempt row), which follows the remote call to its end and
      returns its result — it must never send the call again;
    * no handle was committed ─► the Attempt is ``unknown`` and is never run again (the call
      may have been sent: 000 §3.1), as for any other handler.

    Attributes:
        resumable: ``True`` for a handler that implements ``resume_once``; the pipeline
            only calls it when this is set.
    """

    resumable: bool = True

    async def resume_once(self, request: CapabilityRequest, context: AttemptContext,
                          handle: Mapping[str, Any]) -> ToolResult:
        ...


def as_resumable(handler: CapabilityHandler) -> ResumableHandler | None:
    """``handler`` when it declares ``resumable = True`` (and so ``resume_once``), else None."""
    if getattr(handler, "resumable", False) is True and hasattr(handler, "resume_once"):
        return cast(ResumableHandler, handler)
    return None


Observer = Callable[[str, dict[str, Any]], None]
"""Told of what the pipeline does (``operation.started``, ``operation.completed``,
``hook.warning``) with a JSON-able payload; it can change nothing."""
