"""What a caller holds of a run: its ``RunHandle`` while it is driven, its ``RunResult`` after,
and the ``RunError`` family a run's calls raise.

::

    Runtime.start / resume / take ──► LiveRun (agent.driver drives it) ──► RunHandle(live)
                                          │ events ──► subscribers          │ result()
                                          └──────── task ──────────────────►  RunResult

Owns: these values and the live state of one driven run (``LiveRun``: its lease, data,
cancel token, controls, subscribers, task, quota, draining flag). Does not own: driving it
(``agent.driver``) or controlling it (``agent.control``) — a handle's ``stop`` and
``supplement`` go through the runtime that made it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from agentloom.agent.controls import ControlState
from agentloom.agent.events import ModelDelta, RunEvent
from agentloom.agent.quota import TokenQuota
from agentloom.agent.sessions import SessionError
from agentloom.cancel import CancelToken
from agentloom.errors import AgentLoomError, OperationError
from agentloom.kernel import RunLease
from agentloom.models.ports import OutputPiece
from agentloom.results import TerminalRunStatus
from agentloom.store.records import RunRecord

__all__ = ["DELTA_BACKLOG", "LiveRun", "RunControls", "RunError", "RunHandle", "RunResult", "RunResultStatus",
           "SessionBusy", "ended_run"]

_M = TypeVar("_M", bound=BaseModel)

DELTA_BACKLOG = 256
"""The most events a subscriber of ``model.delta`` may have waiting: past it, the next pieces
are dropped for that subscriber (never for the run, never the other events), and the next
piece it gets counts them (``dropped``). A slow reader never slows the model call."""

RunResultStatus = TerminalRunStatus | Literal["waiting", "pending"]
"""How a run left this process: ended (a terminal status), ``waiting`` for a person's answer,
or ``pending`` — given back to the queue unfinished (its worker is stopping)."""


class RunError(AgentLoomError):
    """Starting, resuming, stopping or reading a run failed: an unknown run, a run that is not
    running, a changed release, a lost lease (``LEASE_LOST``). ``code`` names which."""

    default_code = "RUN_ERROR"


class SessionBusy(RunError, SessionError):
    """A run of a session that another run occupies was not started (``SESSION_BUSY``, 000
    §7.1: one active run per session); the message names the holder and how to wait for it.
    Nothing was created. A ``RunError`` and a ``SessionError`` alike."""

    default_code = "SESSION_BUSY"


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run. ``output`` is the final answer's text, or — for an agent with an output
    schema (``AgentSpec.output`` / ``output_type``) — its parsed JSON value (``parsed`` gives
    it as a pydantic model). ``revocation_confirmed`` is false when the sandbox could not
    confirm that every command of the run is gone (they may still be running); it is not part
    of ``to_dict``."""

    run_id: str
    status: RunResultStatus
    output: Any = None
    error: OperationError | None = None
    steps: int = 0
    revocation_confirmed: bool = True
    workspace: str | None = None
    """The host folder the run's files stay in after it (a bound ``workdir``, a session's
    folder, or a kept one); ``None`` when its folder was removed at its end."""
    waiting: tuple[dict[str, Any], ...] = ()
    """A ``waiting`` run's calls that wait for a person: ``operation_id``, ``capability``,
    ``question``, ``deadline`` (answer with ``Runtime.approve`` / ``reject``)."""

    def to_dict(self) -> dict[str, Any]:
        out = {"run_id": self.run_id, "status": self.status, "output": self.output,
               "error": self.error.to_dict() if self.error else None, "steps": self.steps,
               "workspace": self.workspace}
        if self.waiting:
            out["waiting"] = [dict(w) for w in self.waiting]
        return out

    def parsed(self, output_type: type[_M]) -> _M:
        """The structured output as an instance of ``output_type`` (a pydantic model; usually
        the agent's ``output_type``).

        Raises:
            RunError: the run has no output (``RUN_NO_OUTPUT``: it did not succeed).
            pydantic.ValidationError: the output does not fit ``output_type``.
        """
        if self.status != "succeeded":
            raise RunError(f"run {self.run_id} {self.status} and has no output",
                           code="RUN_NO_OUTPUT")
        return output_type.model_validate(self.output)


@dataclass(slots=True)
class LiveRun:
    """One run this process is driving."""

    lease: RunLease
    data: dict[str, Any]
    cancel: CancelToken
    controls: ControlState
    subscribers: list[asyncio.Queue[RunEvent | None]] = field(default_factory=list)
    task: asyncio.Task[RunResult] | None = None
    quota: TokenQuota | None = None  # the run tree's (the root agent's limit)
    draining: bool = False  # give the run back to the queue at its next step boundary
    # the subscribers that asked for ``model.delta`` -> the pieces each missed since its last
    deltas: dict[asyncio.Queue[RunEvent | None], int] = field(default_factory=dict)

    def emit(self, event: RunEvent) -> None:
        for queue in self.subscribers:
            queue.put_nowait(event)

    def observe_delta(self, piece: OutputPiece) -> None:
        """Give a piece of a model's output to the subscribers that asked for deltas, as a
        ``model.delta`` event; a subscriber with ``DELTA_BACKLOG`` events waiting misses it.
        Never blocks (the model call's stream calls it)."""
        if not self.deltas:
            return
        at = time.time()
        for queue, missed in self.deltas.items():
            if queue.qsize() >= DELTA_BACKLOG:
                self.deltas[queue] = missed + 1
                continue
            queue.put_nowait(RunEvent("model.delta", self.lease.run_id, at, ModelDelta(
                role=piece.role, capability=piece.capability, purpose=piece.purpose,
                operation_id=piece.operation_id, attempt=piece.attempt, kind=piece.kind,
                text=piece.text, dropped=missed)))
            self.deltas[queue] = 0


class RunControls(Protocol):
    """What a handle asks of the runtime that made it."""

    async def stop(self, run_id: str, reason: str = ...) -> None: ...

    async def supplement(self, run_id: str, text: str) -> None: ...


class RunHandle:
    """A run being driven by this process."""

    def __init__(self, runtime: RunControls, live: LiveRun) -> None:
        self._runtime = runtime
        self._live = live
        self.run_id = live.lease.run_id

    async def result(self) -> RunResult:
        assert self._live.task is not None
        return await asyncio.shield(self._live.task)

    async def stop(self, reason: str = "stopped by user") -> None:
        await self._runtime.stop(self.run_id, reason)

    async def supplement(self, text: str) -> None:
        await self._runtime.supplement(self.run_id, text)

    def events(self, *, deltas: bool = False) -> AsyncIterator[RunEvent]:
        """Live events from this call on until the run ends (nothing for a run that already
        ended). The subscription starts when ``events()`` is called, not at the first
        iteration: ``events = handle.events()`` right after ``start`` misses nothing, even when
        the iteration runs in another task.

        ``deltas``: also the ``model.delta`` events — the model's text and reasoning in pieces
        as they arrive (never stored; a reader that falls ``DELTA_BACKLOG`` events behind
        misses pieces, counted in the next one's ``dropped``)."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._live.subscribers.append(queue)
        if deltas:
            self._live.deltas[queue] = 0
        return self._follow(queue)

    async def _follow(self, queue: asyncio.Queue[RunEvent | None]) -> AsyncIterator[RunEvent]:
        task = self._live.task
        assert task is not None
        try:
            while True:
                if queue.empty() and task.done():
                    return
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    continue
                event = getter.result()
                if event is None:
                    return
                yield event
        finally:
            self._live.subscribers.remove(queue)
            self._live.deltas.pop(queue, None)


def ended_run(run: RunRecord, status: TerminalRunStatus) -> LiveRun:
    """A handle's state for a run that ended ``status``: its result, from the record."""
    live = LiveRun(RunLease(run.run_id, run.lease_epoch), dict(run.data), CancelToken(),
                   ControlState(run.run_id))
    done: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
    done.set_result(RunResult(run.run_id, status, run.output, run.error,
                              run.steps if run.steps is not None else 0,
                              workspace=run.workspace))
    live.task = asyncio.ensure_future(_wait(done))
    return live


async def _wait(done: asyncio.Future[RunResult]) -> RunResult:
    return await done
