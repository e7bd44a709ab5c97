"""Runs that are not one agent's React loop (issue 20): the port a workflow implements.

A ``Runtime`` drives every run the same way — lease, renewal, controls, approvals, park at a
step boundary, failures, the terminal commit — and asks the run's *program* for its outcome.
An agent's run has the React loop as its program; a workflow (``agentloom.squad``) is a
``RunProgram`` the runtime was given. The program sees its run through ``ProgramRun``: the
run's id, task and data, its cancel token and event sink, invocation contexts for its roles,
and agent invocations it can start — never the runtime's private state.

Owns: the port (``RunProgram``) and what a program is handed (``ProgramRun``). Does not own:
any program (``squad.driver``), leases or commits (``agent.runtime``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentloom.agent.events import RunEvent
from agentloom.agent.loop import LoopOutcome
from agentloom.agent.spec import AgentTool, Limits
from agentloom.cancel import CancelToken
from agentloom.pipeline.context import InvocationContext
from agentloom.pipeline.retry import RetryPolicy
from agentloom.refs import OwnerRef

if TYPE_CHECKING:
    from agentloom.agent.runtime import Runtime
    from agentloom.kernel import Kernel

__all__ = ["ProgramRun", "RunProgram"]


class RunProgram(Protocol):
    """What a run of ``name`` (e.g. ``workflow:release``) does, besides the React loop.

    ``name`` is what the run records as its agent (and what the queue claims it by);
    ``owner`` the owner kind and id of its capability use; ``limits`` / ``retry`` its run
    deadline, approval settings and retry policy; ``digest`` enters the release id (a changed
    program is a new release); ``tools`` are published in the catalog of the role ``name``;
    ``bind`` is called once by the runtime before it publishes its catalog."""

    name: str
    owner: OwnerRef
    limits: Limits
    retry: RetryPolicy
    digest: str

    def tools(self) -> Sequence[AgentTool]: ...

    def bind(self, runtime: Runtime) -> None: ...

    def describe(self) -> dict[str, Any]:
        """What a run of it records as ``workflow`` (what ``runs show`` draws)."""
        ...

    async def drive(self, run: ProgramRun) -> LoopOutcome: ...


@dataclass(slots=True)
class ProgramRun:
    """One run a program drives, as the runtime hands it over."""

    run_id: str
    lease_epoch: int
    task: str
    data: dict[str, Any]
    cancel: CancelToken
    emit: Callable[[RunEvent], None]
    kernel: Kernel
    context: Callable[..., InvocationContext]
    """``context(role, invocation_id, *, owner=None, workspace_scope_id=None)``: an invocation
    context of this run for ``role`` (an agent, or the program's own name)."""
    invoke: Callable[[str, str, InvocationContext, Sequence[Any]], Awaitable[LoopOutcome]]
    """``invoke(agent, task, ctx, history)``: run ``agent``'s React loop on ``task`` in ``ctx``,
    after ``history`` (earlier turns as messages; usually none), and return how it ended;
    its calls are keyed by ``ctx.invocation_id``."""
    step_boundary: Callable[[], None]
    """Called between steps: raises the runtime's release signal when this process must
    give the run back to the queue (a stopping worker)."""
    listening: Callable[[], bool] = lambda: True
    """Whether anyone follows the run's live events now (else ``emit`` may be skipped)."""

    @property
    def deadline(self) -> float:
        return float(self.data["deadline"])

