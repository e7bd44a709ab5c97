"""``SendMessage`` as a ``CapabilityHandler``: a call to a remote agent is one operation of the
one pipeline, and one Attempt, however long the remote task runs.

::

    pipeline Attempt ─► A2aSendHandler.invoke_once(frozen request)
        ─► SendMessage (streaming when the card says so; else return_immediately)
             a Message ─► succeeded (no task)
             the Task  ─► context.checkpoint({task_id, context_id}) — committed before
                          anything else happens; the task is then followed:
                          stream events, else GetTask polls (each an observation
                          ``a2a.task`` on the bus, never a new Attempt) until it leaves
                          SUBMITTED / WORKING ─► ``states.result_of_task``
    crash, resume at attempt_started:
        task id committed ─► resume_once: GetTask polls of that task (never sent again)
        not committed     ─► unknown (the pipeline; SendMessage may have been received)
    stop of the run (cancel token), or its deadline, while following a task
        ─► CancelTask ─► the state the server answered (its receipt), never "undone"

Message ids are ``<operation id>-<attempt no>``: one per Attempt, so a server that deduplicates
by message id sees a retried Attempt as new and a replayed one never (nothing is replayed).

Owns: one call, its following and its stop. Does not own: the state table (``states``),
clients (``clients``), recording, hooks, retries (the pipeline).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import httpx
from a2a.client import A2AClientError, Client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from a2a.utils.errors import A2AError, InternalError, InvalidAgentResponseError, TaskNotCancelableError

from agentloom.a2a.catalog import A2aAgent
from agentloom.a2a.clients import A2aClients, Connected
from agentloom.a2a.errors import (
    A2A_CANCEL_UNANSWERED,
    A2A_CONNECT_FAILED,
    A2A_CONNECTION_LOST,
    A2A_PROTOCOL_ERROR,
    A2aError,
    call_error,
)
from agentloom.a2a.states import FOLLOWED, result_of_message, result_of_task, state_name
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.errors import ExternalOutcome, OperationError
from agentloom.pipeline.ports import ResumableHandler
from agentloom.results import ToolResult
from agentloom.secret_refs import scrub

__all__ = ["CANCEL_TIMEOUT_S", "POLL_MAX_S", "POLL_MIN_S", "A2aSendHandler"]

POLL_MIN_S = 0.05
"""The first GetTask poll's wait; each next one waits twice as long, up to ``POLL_MAX_S``."""
POLL_MAX_S = 2.0
CANCEL_TIMEOUT_S = 10.0
"""How long a stop (or the run deadline) waits for ``CancelTask``'s answer."""
DEADLINE_SLACK_S = 0.05
"""A cancellation this close to the run deadline is the deadline's (the pipeline's timeout)."""
MAX_ERROR_TEXT = 500


class A2aSendHandler(ResumableHandler):
    """Sends one message to one remote agent and follows the task it starts."""

    rerunnable = False
    recoverable = False
    resumable = True

    def __init__(self, agent: A2aAgent) -> None:
        self.agent = agent
        self.clients = A2aClients(agent)

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        try:
            connected = self.clients.get()
        except A2aError as exc:  # nothing was sent
            return ToolResult(status="failed", error=exc.error)
        call = _Call(self.agent, connected, context)
        try:
            return await call.send(request)
        except asyncio.CancelledError:
            if not _ended(context) or call.task_id is None:
                raise  # not a stop or the deadline, or nothing to cancel: the pipeline says
            return await call.stopped()

    async def resume_once(self, request: CapabilityRequest, context: AttemptContext,
                          handle: Mapping[str, Any]) -> ToolResult:
        connected = self.clients.get()  # its headers were read when the call was made
        call = _Call(self.agent, connected, context)
        call.task_id = str(handle["task_id"])
        try:
            return await call.poll()
        except asyncio.CancelledError:
            if not _ended(context):
                raise
            return await call.stopped()


def _ended(context: AttemptContext) -> bool:
    """Whether the call was cut off because its run ended: a stop, or the run deadline (the
    pipeline's timeout cancels the Attempt at it). A remote task is then cancelled; any other
    cancellation (a worker giving the run back) leaves it running for the next holder."""
    return context.cancelled or time.time() >= context.deadline - DEADLINE_SLACK_S


class _Call:
    """The working state of one call: the task as last seen, and how it is followed."""

    __slots__ = ("agent", "client", "connected", "context", "task", "task_id")

    def __init__(self, agent: A2aAgent, connected: Connected, context: AttemptContext) -> None:
        self.agent = agent
        self.connected = connected
        self.client: Client = connected.client
        self.context = context
        self.task: Task | None = None
        self.task_id: str | None = None

    async def send(self, request: CapabilityRequest) -> ToolResult:
        args = request.arguments
        message = Message(role=Role.ROLE_USER, parts=[Part(text=str(args["message"]))],
                          message_id=f"{request.operation_id}-{self.context.attempt_no}",
                          context_id=str(args.get("context_id") or ""),
                          task_id=str(args.get("task_id") or ""))
        streaming = self.agent.card.capabilities.streaming
        send = SendMessageRequest(message=message, configuration=SendMessageConfiguration(
            return_immediately=not streaming))
        try:
            async for event in self.client.send_message(send):
                if event.HasField("message"):
                    return result_of_message(event.message, agent=self.agent.name)
                await self._seen(event)
        except (A2AError, httpx.HTTPError) as exc:
            if self.task_id is None:
                return self._unsent_or_lost(exc)
            # the stream broke with the task known: the task goes on; poll it
        if self.task is None:
            return ToolResult.unknown(call_error(A2A_PROTOCOL_ERROR, (
                f"remote agent {self.agent.name!r} answered SendMessage with neither a task "
                "nor a message; it may have taken effect"), outcome="unknown"))
        if self.task.status.state in FOLLOWED:
            return await self.poll()
        return result_of_task(self.task, agent=self.agent.name)

    async def poll(self) -> ToolResult:
        """GetTask until the task leaves SUBMITTED / WORKING (each poll observed)."""
        assert self.task_id is not None
        wait = POLL_MIN_S if self.task is not None else 0.0
        while True:
            if wait:
                await asyncio.sleep(wait)
            try:
                task = await self.client.get_task(GetTaskRequest(id=self.task_id))
            except (A2AError, httpx.HTTPError) as exc:
                return ToolResult.unknown(self._error(
                    A2A_CONNECTION_LOST, f"GetTask of task {self.task_id} failed", exc,
                    outcome="unknown"))
            self.task = task
            self._observe("poll")
            if task.status.state not in FOLLOWED:
                return result_of_task(task, agent=self.agent.name)
            wait = min(POLL_MAX_S, max(POLL_MIN_S, wait * 2))

    async def stopped(self) -> ToolResult:
        """The run was stopped, or its deadline passed, while the task ran: CancelTask, and
        report its receipt."""
        assert self.task_id is not None
        current = asyncio.current_task()
        assert current is not None
        if self.context.cancelled:  # the stop is answered here: the Attempt ends with the
            current.uncancel()  # receipt (the deadline's timeout takes back its own)
            why = f"the run was stopped ({self.context.cancel.reason})"
        else:
            why = "the run deadline passed"
        try:
            async with asyncio.timeout(CANCEL_TIMEOUT_S):
                try:
                    task = await self.client.cancel_task(CancelTaskRequest(id=self.task_id))
                except TaskNotCancelableError:  # it settled first: say how
                    task = await self.client.get_task(GetTaskRequest(id=self.task_id))
        except (A2AError, httpx.HTTPError, TimeoutError) as exc:
            return ToolResult.unknown(self._error(
                A2A_CANCEL_UNANSWERED, f"{why}; CancelTask for task "
                f"{self.task_id} got no answer, so its outcome is unknown", exc,
                outcome="unknown"))
        self.task = task
        self._observe("cancel")
        receipt = (f"{why}: CancelTask was sent and remote agent {self.agent.name!r} answered "
                   f"{state_name(task.status.state)}")
        if task.status.state in FOLLOWED:  # accepted, not carried out yet
            return ToolResult.unknown(self._error(
                A2A_CANCEL_UNANSWERED, f"{receipt}: it has not stopped yet, so the task's outcome "
                "is unknown", None, outcome="unknown"))
        return result_of_task(task, agent=self.agent.name, receipt=receipt)

    # -- steps -------------------------------------------------------------------------------
    async def _seen(self, event: StreamResponse) -> None:
        """One stream event: the task (its id committed on first sight), a status or an
        artifact update folded into it."""
        if event.HasField("task"):
            self.task = event.task
        elif self.task is None:  # an update first (a task asked for input, being answered)
            update = event.status_update if event.HasField("status_update") \
                else event.artifact_update
            if not update.task_id:
                return
            self.task = Task(id=update.task_id, context_id=update.context_id)
        if event.HasField("status_update"):
            self.task.status.CopyFrom(event.status_update.status)
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            same = [a for a in self.task.artifacts if a.artifact_id == update.artifact.artifact_id]
            if same and update.append:
                same[0].parts.extend(update.artifact.parts)
            elif same:
                same[0].CopyFrom(update.artifact)
            else:
                self.task.artifacts.append(update.artifact)
        if self.task_id is None:
            self.task_id = self.task.id
            await self.context.checkpoint({"task_id": self.task.id,
                                           "context_id": self.task.context_id})
        self._observe("stream")

    def _observe(self, via: str) -> None:
        assert self.task is not None
        self.context.observe("a2a.task", {"agent": self.agent.name, "task_id": self.task.id,
                                          "state": state_name(self.task.status.state),
                                          "via": via})

    def _unsent_or_lost(self, exc: BaseException) -> ToolResult:
        """SendMessage failed before a task was seen: not sent (no connection, or the server
        refused the request), or unknown (it may have been received)."""
        if isinstance(exc, httpx.ConnectError) or isinstance(exc.__cause__, httpx.ConnectError):
            return ToolResult(status="failed", error=self._error(
                A2A_CONNECT_FAILED, "could not connect to send the message (nothing was sent)",
                exc, outcome="not_started"))
        if isinstance(exc, A2AError) and not isinstance(
                exc, A2AClientError | InternalError | InvalidAgentResponseError):
            return ToolResult(status="failed", error=self._error(
                A2A_PROTOCOL_ERROR, "the server refused SendMessage", exc, outcome="not_started"))
        return ToolResult.unknown(self._error(
            A2A_CONNECTION_LOST, "SendMessage failed after it was sent; it may have taken effect",
            exc, outcome="unknown"))

    def _error(self, code: str, what: str, exc: BaseException | None, *,
               outcome: ExternalOutcome) -> OperationError:
        text = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_TEXT] if exc is not None else ""
        message = scrub(f"remote agent {self.agent.name!r}: {what}" + (f" ({text})" if text else ""),
                        self.connected.secrets)
        details: dict[str, object] = {"task_id": self.task_id} if self.task_id else {}
        return call_error(code, message, outcome=outcome, details=details)
