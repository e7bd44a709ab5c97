"""The A2A 1.0 request handler: every A2A method answered from the ``Runtime`` and its store.

::

    SDK dispatcher (JSON-RPC | REST) ──► RunRequestHandler ──► Runtime.submit / stop /
                                                               approve / reject / supplement
                                          └── task_of(store row)  (host.a2a_tasks)

Why not the SDK's ``DefaultRequestHandler``: it keeps tasks in a ``TaskStore`` and runs an
``AgentExecutor`` in this process, so a task would live twice (the SDK's copy and the run) and
a restart would lose the executor's part. Here the run is the only truth: ``SendMessage``
queues a run (any worker drives it), ``GetTask`` / ``ListTasks`` read the run's row, streams
follow the row (every ``POLL_S``), ``CancelTask`` is ``Runtime.stop``. Nothing is kept in
memory, so a task survives a restart of the server, and every replica answers alike.

A message with a ``taskId`` continues that task: one waiting for an answer
(``INPUT_REQUIRED``) takes a data part ``{"approve": true|false, "reason"?, "operation_id"?}``
(every waiting call, or the one named, answered as the caller's actor); a working one takes the
text as input for the run's next turn (``Runtime.supplement``); an ended one refuses it.

Every method acts for the request's principal only (``context.state["principal"]``, set by
``host.a2a_routes``): another owner's task is ``TaskNotFoundError``, exactly as a missing one.

Owns: the methods' semantics. Does not own the wire (the SDK), the mapping
(``host.a2a_tasks``) nor authentication (``host.a2a_routes``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
import uuid
from collections.abc import AsyncGenerator, Mapping
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
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from agentloom.agent.runtime import Runtime
from agentloom.errors import AgentLoomError
from agentloom.host.a2a_tasks import INTERRUPTED, TERMINAL, facts_of, state_of, task_of, text_of
from agentloom.host.access import owns
from agentloom.refs import Principal

__all__ = ["PRINCIPAL", "WORKER", "RunRequestHandler"]

PRINCIPAL = "agentloom.principal"  # ``ServerCallContext.state`` keys (``host.a2a_routes``)
WORKER = "agentloom.worker"
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
        async for event in self._follow(first):
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
                raise InvalidParamsError(message=f"{exc.code}: {exc}") from None
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

    async def _continue(self, row: Mapping[str, Any], message: Message,
                        principal: Principal) -> None:
        """A message for an existing task: the answer it waits for, or more input."""
        run_id = str(row["run_id"])
        state = state_of(str(row["status"]))
        if state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {run_id} is {TaskState.Name(state)}: it takes no more messages "
                        "(send one without taskId to start a new task)")
        if state in INTERRUPTED:
            await self._answer(row, message, principal)
            return
        text = text_of(message)
        if not text.strip():
            raise InvalidParamsError(message="the message has no text for the agent")
        try:
            await self.runtime.supplement(run_id, text)
        except AgentLoomError as exc:
            raise UnsupportedOperationError(message=f"{exc.code}: {exc}") from None

    async def _answer(self, row: Mapping[str, Any], message: Message,
                      principal: Principal) -> None:
        answers = [MessageToDict(p.data) for p in message.parts if p.WhichOneof("content") == "data"]
        answer = answers[0] if len(answers) == 1 else None
        if not isinstance(answer, dict) or not isinstance(answer.get("approve"), bool):
            raise InvalidParamsError(message=ANSWER_HELP)
        waiting = (row.get("data") or {}).get("waiting") or {}
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
                await how(str(row["run_id"]), operation_id,
                          reason=reason if isinstance(reason, str) else None,
                          actor=principal.actor)
            except AgentLoomError as exc:
                raise InvalidParamsError(message=f"{exc.code}: {exc}") from None

    # -- tasks ------------------------------------------------------------------------------
    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest,
                          context: ServerCallContext) -> Task | None:
        validate_history_length(params)
        row = self._owned(params.id, _principal(context))
        return apply_history_length(task_of(row), params)

    @validate_request_params
    async def on_list_tasks(self, params: ListTasksRequest,
                            context: ServerCallContext) -> ListTasksResponse:
        validate_history_length(params)
        if params.HasField("page_size"):
            validate_page_size(params.page_size)
        principal = _principal(context)
        rows = self.runtime.store.query("runs", {"actor": principal.actor,
                                                 "project": principal.project})
        tasks = [task_of(r) for r in rows]
        if params.context_id:
            tasks = [t for t in tasks if t.context_id == params.context_id]
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        if params.HasField("status_timestamp_after"):
            after_ns = params.status_timestamp_after.ToNanoseconds()
            tasks = [t for t in tasks if t.status.timestamp.ToNanoseconds() >= after_ns]
        tasks.sort(key=_position, reverse=True)  # the latest change first
        if params.page_token:
            cursor = _cursor(params.page_token)
            tasks_after = [t for t in tasks if _position(t) < cursor]
        else:
            tasks_after = tasks
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        page = tasks_after[:size]
        response = ListTasksResponse(total_size=len(tasks), page_size=size)
        if len(tasks_after) > size:
            response.next_page_token = _token(_position(page[-1]))
        for task in page:
            if not params.include_artifacts:
                task.ClearField("artifacts")
            response.tasks.append(apply_history_length(task, params))
        return response

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest,
                             context: ServerCallContext) -> Task | None:
        principal = _principal(context)
        row = self._owned(params.id, principal)
        if state_of(str(row["status"])) in TERMINAL:
            raise TaskNotCancelableError
        await self.runtime.stop(params.id, f"cancelled over A2A by {principal.actor}")
        await self._settle(params.id, CANCEL_WAIT_S, ended_or_asking=False)
        return self._task(params.id)

    @validate_request_params
    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Event]:
        task = task_of(self._owned(params.id, _principal(context)))
        if task.status.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {params.id} is {TaskState.Name(task.status.state)}: nothing "
                        "more will happen to it (GetTask reads it)")
        yield task
        async for event in self._follow(task):
            yield event

    async def _follow(self, last: Task) -> AsyncGenerator[Event]:
        """The task's changes after ``last``, until it ended or (after a change) asks for
        input: a status update per change, the output artifact before ``COMPLETED``."""
        if last.status.state in TERMINAL:
            return
        while True:
            await asyncio.sleep(self.poll_s)
            row = self.runtime.store.get("runs", {"run_id": last.id})
            if row is None:
                return
            task = task_of(row)
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
    def _owned(self, task_id: str, principal: Principal) -> dict[str, Any]:
        """The principal's run ``task_id``; ``TaskNotFoundError`` — the same for a missing
        run and another owner's — otherwise."""
        row = self.runtime.store.get("runs", {"run_id": task_id})
        if row is None or not owns(row, principal):
            raise TaskNotFoundError
        return row

    def _task(self, run_id: str) -> Task:
        row = self.runtime.store.get("runs", {"run_id": run_id})
        if row is None:
            raise TaskNotFoundError
        return task_of(row)

    async def _settle(self, run_id: str, wait_s: float, *, ended_or_asking: bool) -> None:
        """Until the task ended (``ended_or_asking``: or asks for input), or ``wait_s``."""
        until = time.monotonic() + wait_s
        settled = TERMINAL | INTERRUPTED if ended_or_asking else TERMINAL
        while time.monotonic() < until:
            row = self.runtime.store.get("runs", {"run_id": run_id})
            if row is None or state_of(str(row["status"])) in settled:
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


def _position(task: Task) -> tuple[int, str]:
    return task.status.timestamp.ToNanoseconds(), task.id


def _token(position: tuple[int, str]) -> str:
    raw = json.dumps(list(position)).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(token: str) -> tuple[int, str]:
    """The position a page token names; ``InvalidParamsError`` for one this server did not
    give."""
    try:
        stamp, task_id = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if isinstance(stamp, bool) or not isinstance(stamp, int) or not isinstance(task_id, str):
            raise ValueError(token)
    except (ValueError, TypeError, binascii.Error):
        raise InvalidParamsError(message="pageToken is not a token this server gave (use "
                                 "nextPageToken of the previous page as it is)") from None
    return stamp, task_id
