"""A workflow's wait for a mailbox message (issue 37): ``{wait: message, for: NODE, from: NODE}``.

The driver calls ``workflow.message`` for such a wait node (one recorded call, keyed
``<run>/n/<node>/<attempt>`` like every activation). Its handler watches the inbox of
``for`` (default: the wait node itself) in the run's mailbox (``squad.collab``) until an
unread message (from ``from``, when given) is there, marks it read — by this call's operation
— and returns its body: the text, or the JSON text of a body that is not a string.

Durable: the handler is ``recoverable``. A run resumed while waiting calls it again and it
keeps waiting; one cut off after it marked its message read takes that same message again
(the one whose ``read_by`` is its operation), never a second one. The run's stop (``runs
stop``) and its deadline end the wait: the call fails ``WAIT_ENDED`` and the run ends as
stopped or past its deadline.

Owns: ``workflow.message`` and its handler. Does not own: calling it (``squad.driver``), the
mailbox (``squad.collab``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentloom.agent.spec import AgentTool
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.canonical import readable_json
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.results import ToolResult
from agentloom.squad import collab
from agentloom.squad.collab_tools import in_workflow

__all__ = ["MESSAGE_WAIT_KEY", "message_wait_tool"]

MESSAGE_WAIT_KEY = "workflow.message"
_POLL_S = (0.02, 0.5)  # first and longest pause between two looks at the inbox

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"node": {"type": "string"}, "for": {"type": "string", "minLength": 1},
                   "from": {"type": "string", "minLength": 1}},
    "required": ["node", "for"], "additionalProperties": False}


def _text(body: Any) -> str:
    return body if isinstance(body, str) else readable_json(body)


class _MessageWaitHandler:
    """``workflow.message``: the first unread message to ``for`` (from ``from``), taken once."""

    rerunnable = False
    recoverable = True  # run again after a crash: it takes its own message, or keeps waiting

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        scope = in_workflow(MESSAGE_WAIT_KEY, context)
        if isinstance(scope, ToolResult):
            return scope
        recipient = str(request.arguments["for"])
        sender = request.arguments.get("from")
        run, pause = scope.run, _POLL_S[0]
        while True:
            found = collab.inbox(scope.store, scope.run_id, recipient)
            taken = [m for m in found if m.read_by == scope.operation_id] or [
                m for m in found if m.read_at is None and (sender is None or m.sender == sender)]
            if taken:
                message = taken[0]
                await scope.commit(collab.mark_read(scope.store, scope.run_id,
                                                    [message.message_id], recipient=recipient,
                                                    by=scope.operation_id), "message wait")
                return ToolResult.success(_text(message.body))
            left = run.deadline - time.time()
            if run.cancel.is_set or context.cancel.is_set or left <= 0:
                why = "the run was stopped" if left > 0 else "the run's deadline passed"
                return ToolResult.failure(
                    f"node {request.arguments['node']!r} stopped waiting for a message to "
                    f"{recipient!r}: {why}", category="business", code="WAIT_ENDED")
            try:  # wake at once on a stop
                await asyncio.wait_for(run.cancel.wait(), timeout=min(pause, left))
            except TimeoutError:
                pass
            pause = min(pause * 2, _POLL_S[1])


def message_wait_tool(release_id: str) -> AgentTool:
    """``workflow.message`` and its handler, for a catalog of ``release_id``."""
    return (CapabilitySpec(
        resource_version_id=release_id, capability_key=MESSAGE_WAIT_KEY, kind="builtin",
        exposed_name=legal_exposed_name(MESSAGE_WAIT_KEY),
        description="A workflow's wait for a message in its run's mailbox.",
        input_schema=_SCHEMA, handler_ref="workflow:message"), _MessageWaitHandler())
