"""The A2A 1.0 request handler: every A2A method answered from the ``Runtime`` and its store.

::

    SDK dispatcher (JSON-RPC | REST) ──► RunRequestHandler ──► Runtime.submit / stop /
                                                               approve / reject / supplement
                                          └── task_of(RunRecord)  (host.a2a.tasks, store.runs)

Why not the SDK's ``DefaultRequestHandler``: it keeps tasks in a ``TaskStore`` and runs an
``AgentExecutor`` in this process, so a task would live twice (the SDK's copy and the run) and
a restart would lose the executor's part. Here the run is the only truth: ``SendMessage``
queues a run (any worker drives it), ``GetTask`` / ``ListTasks`` read the run's row, streams
follow the row (every ``POLL_S``; they end once the request's API key is revoked),
``CancelTask`` is ``Runtime.stop``. Nothing is kept in memory, so a task survives a restart of
the server, and every replica answers alike.

A message with a ``taskId`` continues that task: one waiting for an answer
(``INPUT_REQUIRED``) takes a data part ``{"approve": true|false, "reason"?, "operation_id"?}``
(every waiting call, or the one named, answered as the caller's actor); a working one takes the
text as input for the run's next turn (``Runtime.supplement``); an ended one refuses it.

Every method acts for the request's principal only (``context.state["principal"]``, set by
``host.a2a.routes``): another owner's task is ``TaskNotFoundError``, exactly as a missing one.

Owns: the methods' semantics. Does not own the wire (the SDK), the mapping
(``host.a2a.tasks``), the listing (``host.a2a.list``, run in a worker thread) nor
authentication (``host.a2a.routes``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size
from anyio import to_thread
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from agentloom.agent.runtime import Runtime
from agentloom.errors import AgentLoomError, StoreError
from agentloom.host.a2a.list import check_status, list_tasks
from agentloom.host.a2a.tasks import (
    INTERRUPTED,
    TERMINAL,
    facts_of,
    follow_ups,
    state_of,
    task_of,
    text_of,
)
from agentloom.host.access import key_still_valid
from agentloom.refs import Principal
from agentloom.store.runs import RunRecord, get_run

__all__ = ["PRINCIPAL", "REQUEST", "WORKER", "RunRequestHandler"]

log = logging.getLogger(__name__)

PRINCIPAL = "agentloom.principal"  # ``ServerCallContext.state`` keys (``host.a2a.routes``)
WORKER = "agentloom.worker"
REQUEST = "agentloom.request"  # the starlette ``Request``: its headers, query, parsed body
POLL_S = 0.2
WAIT_S = 600.0  # the longest a blocking SendMessage waits before it answers the task as it is
CANCEL_WAIT_S = 10.0  # the longest CancelTask waits for the run to end
ANSWER_HELP = ('a task waiting for an answer takes a data part {"approve": true or false, '
               '"reason"?: "...", "operation_id"?: "..."}')


class RunRequestHandler(RequestHandler):
    """A2A over ``runtime``'s runs; ``wait_s`` bounds a blocking ``SendMessage``."""

    def __init__(self, runtime: Runtime, *, wait_s: float = WAIT_S,
                 poll_s: float = POLL_S) -> None:
        self.runtime = runtime
        self.wait_s = wait_s
        self.poll_s = poll_s

    # -- messages ---------------------------------------------------------------------------
    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest,
                              context: ServerCallContext) -> Task | Message:
        run_id = await self._accept(params, context)
        _wake(context)
        if not params.configuration.return_immediately:
            await self._settle(run_id, self.wait_s, ended_or_asking=True)
        return apply_history_length(self._task(run_id), _history(params))

    @validate_request_params
    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Event]:
        run_id = await self._accept(params, context)
        first = apply_history_length(self._task(run_id), _history(params))
        _wake(context)  # after the first event is read: a new task streams as submitted first
        yield first
        async for event in self._follow(first, context):
            yield event

    async def _accept(self, params: SendMessageRequest, context: ServerCallContext) -> str:
        """The run the message starts, or the task it continues."""
        principal = _principal(context)
        message = params.message
        if message.task_id:
            await self._continue(self._owned(message.task_id, principal), message, principal)
            run_id = message.task_id
        else:
            text = text_of(message)
            if not text.strip():
                raise InvalidParamsError(message="the message has no text for the agent")
            agent = self._agent(params)
            context_id = message.context_id or str(uuid.uuid4())
            try:
                run_id = await self.runtime.submit(text, agent=agent, principal=principal,
                                                   facts=facts_of(message,
                                                                  context_id=context_id))
            except AgentLoomError as exc:
                raise _refused(exc) from None
        return run_id

    def _agent(self, params: SendMessageRequest) -> str:
        """The agent or workflow the request names (``metadata.skill``, a skill id of the
        card: ``workflow:<name>`` for a workflow) — else ``main``, or the first agent, as
        ``POST /v1/runs``."""
        agents = self.runtime.agents
        for metadata in (params.metadata, params.message.metadata):
            if "skill" in metadata:
                skill = metadata["skill"]
                if skill not in agents and skill not in self.runtime.programs:
                    skills = [*sorted(agents), *sorted(self.runtime.programs)]
                    raise InvalidParamsError(message=f"metadata.skill names no skill of this "
                                             f"agent: {skill!r}; skills: {skills}")
                return str(skill)
        return "main" if "main" in agents else next(iter(agents))

    async def _continue(self, run: RunRecord, message: Message,
                        principal: Principal) -> None:
        """A message for an existing task: the answer it waits for, or more input."""
        run_id = run.run_id
        state = state_of(run.stored_status)
        if state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {run_id} is {TaskState.Name(state)}: it takes no more messages "
                        "(send one without taskId to start a new task)")
        if state in INTERRUPTED:
            await self._answer(run, message, principal)
            return
        text = text_of(message)
        if not text.strip():
            raise InvalidParamsError(message="the message has no text for the agent")
        try:
            await self.runtime.supplement(run_id, text)
        except AgentLoomError as exc:
            raise _refused(exc, UnsupportedOperationError) from None

    async def _answer(self, run: RunRecord, message: Message,
                      principal: Principal) -> None:
        answers = [MessageToDict(p.data) for p in message.parts if p.WhichOneof("content") == "data"]
        answer = answers[0] if len(answers) == 1 else None
        if not isinstance(answer, dict) or not isinstance(answer.get("approve"), bool):
            raise InvalidParamsError(message=ANSWER_HELP)
        waiting = run.data.get("waiting") or {}
        asked = [str(op) for op in waiting.get("operation_ids") or []]
        named = answer.get("operation_id")
        if named is not None:
            if named not in asked:
                raise InvalidParamsError(message=f"operation_id {named!r} does not wait for "
                                         f"an answer; waiting: {asked}")
            asked = [named]
        reason = answer.get("reason")
        how = self.runtime.approve if answer["approve"] else self.runtime.reject
        for operation_id in asked:
            try:
                await how(run.run_id, operation_id,
                          reason=reason if isinstance(reason, str) else None,
                          actor=principal.actor)
            except AgentLoomError as exc:
                raise _refused(exc) from None

    # -- tasks ------------------------------------------------------------------------------
    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest,
                          context: ServerCallContext) -> Task | None:
        validate_history_length(params)
        run = self._owned(params.id, _principal(context))
        return apply_history_length(task_of(run, follow_ups(self.runtime.store, run.run_id)),
                                    params)

    @validate_request_params
    async def on_list_tasks(self, params: ListTasksRequest,
                            context: ServerCallContext) -> ListTasksResponse:
        validate_history_length(params)
        if params.HasField("page_size"):
            validate_page_size(params.page_size)
        check_status(params, await _said_status(context))
        return await to_thread.run_sync(list_tasks, self.runtime.store, _principal(context),
                                        params)

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest,
                             context: ServerCallContext) -> Task | None:
        principal = _principal(context)
        run = self._owned(params.id, principal)
        if state_of(run.stored_status) in TERMINAL:
            raise TaskNotCancelableError
        await self.runtime.stop(params.id, f"cancelled over A2A by {principal.actor}")
        await self._settle(params.id, CANCEL_WAIT_S, ended_or_asking=False)
        return self._task(params.id)

    @validate_request_params
    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Event]:
        run = self._owned(params.id, _principal(context))
        task = task_of(run, follow_ups(self.runtime.store, run.run_id))
        if task.status.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {params.id} is {TaskState.Name(task.status.state)}: nothing "
                        "more will happen to it (GetTask reads it)")
        yield task
        async for event in self._follow(task, context):
            yield event

    async def _follow(self, last: Task, context: ServerCallContext) -> AsyncGenerator[Event]:
        """The task's changes after ``last``, until it ended or (after a change) asks for
        input: a status update per change, the output artifact before ``COMPLETED``. It ends
        too, at its next poll, once the request's API key is revoked."""
        if last.status.state in TERMINAL:
            return
        request = context.state.get(REQUEST)  # none: a caller in process, not over HTTP
        authorized = (key_still_valid(self.runtime.store, request.headers.get("authorization"))
                      if request is not None else lambda: True)
        while True:
            await asyncio.sleep(self.poll_s)
            if not authorized():
                return
            run = get_run(self.runtime.store, last.id, lenient=True)
            if run is None:
                return
            task = task_of(run)
            state = task.status.state
            if state == last.status.state and \
                    task.status.message.parts == last.status.message.parts:
                continue
            for artifact in task.artifacts:
                yield TaskArtifactUpdateEvent(task_id=task.id, context_id=task.context_id,
                                              artifact=artifact, last_chunk=True)
            yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id,
                                        status=task.status, metadata=task.metadata)
            if state in TERMINAL or state in INTERRUPTED:
                return
            last = task

    # -- what this server does not offer ------------------------------------------------------
    async def on_create_task_push_notification_config(
            self, params: TaskPushNotificationConfig,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
            self, params: GetTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
            self, params: ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
            self, params: DeleteTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(self, params: GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError

    # -- reading the store ------------------------------------------------------------------
    def _owned(self, task_id: str, principal: Principal) -> RunRecord:
        """The principal's run ``task_id`` (read as stored: a damaged status is an
        ``UNSPECIFIED`` task); ``TaskNotFoundError`` — the same for a missing run and another
        owner's — otherwise."""
        run = get_run(self.runtime.store, task_id, lenient=True)
        if run is None or not run.done_for(principal):
            raise TaskNotFoundError
        return run

    def _task(self, run_id: str) -> Task:
        run = get_run(self.runtime.store, run_id, lenient=True)
        if run is None:
            raise TaskNotFoundError
        return task_of(run, follow_ups(self.runtime.store, run_id))

    async def _settle(self, run_id: str, wait_s: float, *, ended_or_asking: bool) -> None:
        """Until the task ended (``ended_or_asking``: or asks for input), or ``wait_s``."""
        until = time.monotonic() + wait_s
        settled = TERMINAL | INTERRUPTED if ended_or_asking else TERMINAL
        while time.monotonic() < until:
            run = get_run(self.runtime.store, run_id, lenient=True)
            if run is None or state_of(run.stored_status) in settled:
                return
            await asyncio.sleep(self.poll_s)


def _wake(context: ServerCallContext) -> None:
    """Start the accepted run now if this process drives runs, not at the worker's next poll."""
    worker = context.state.get(WORKER)
    if worker is not None:
        worker.wake()


def _principal(context: ServerCallContext) -> Principal:
    principal = context.state.get(PRINCIPAL)
    if not isinstance(principal, Principal):  # the routes authenticate every request first
        raise TaskNotFoundError
    return principal


def _history(params: SendMessageRequest) -> Any:
    return params.configuration if params.HasField("configuration") else None


async def _said_status(context: ServerCallContext) -> Any:
    """The status filter as the request gave it: the query parameter (HTTP+JSON), or
    ``params.status`` of the JSON-RPC body (already parsed, and kept, by the SDK)."""
    request = context.state.get(REQUEST)
    if request is None:
        return None
    if request.method == "GET":
        return request.query_params.get("status")
    body = await request.json()
    said = body.get("params") if isinstance(body, dict) else None
    return said.get("status") if isinstance(said, dict) else None


def _refused(exc: AgentLoomError,
             kind: type[A2AError] = InvalidParamsError) -> A2AError:
    """The A2A error for a refusal of the runtime: its code and message — but a commit that
    failed is the server's failure (logged), and its message, which names the store, is not
    sent."""
    if exc.code == StoreError.default_code:
        log.error("an A2A request failed in the store", exc_info=exc)
        return InternalError(message="the server failed on this request; it was logged")
    return kind(message=f"{exc.code}: {exc}")
