"""Agent runs: the React loop, Planner / Executor delegation, control, sessions, events."""

from agentloom.agent.events import RunEvent, run_events
from agentloom.agent.failures import RecoveryPolicy
from agentloom.agent.loop import Invocation, LoopOutcome, ReactLoop
from agentloom.agent.options import RuntimeOptions
from agentloom.agent.output import OutputSpec
from agentloom.agent.runtime import (
    RunError,
    RunHandle,
    RunResult,
    Runtime,
    SessionBusy,
    list_runs,
)
from agentloom.agent.sessions import SessionError
from agentloom.agent.spec import AgentSpec, Limits

__all__ = [
    "AgentSpec",
    "Invocation",
    "Limits",
    "LoopOutcome",
    "OutputSpec",
    "ReactLoop",
    "RecoveryPolicy",
    "RunError",
    "RunEvent",
    "RunHandle",
    "RunResult",
    "Runtime",
    "RuntimeOptions",
    "SessionBusy",
    "SessionError",
    "list_runs",
    "run_events",
]
