"""The capabilities a workflow's nodes call besides their own (issue 20): the wait for a
person (``workflow.approval``) and an agent node (``workflow.agent.<agent>``), with their
handlers.

- ``workflow.approval`` runs only once a person approved: the driver's request asks
  (``Request.ask``), so the call waits in ``awaiting_approval`` first; approved, it returns
  ``approved``; rejected, the pipeline denies it (the wait node's output ``rejected``).
- ``workflow.agent.<agent>`` (event type ``delegation``, payload ``{task, agent, node,
  attempt}``) runs the agent's React loop input_only — the rendered input is its task, no
  session, and no history unless the node is granted a session's (``history: {session: NAME}``:
  its turns there, pinned when the node was called, come first) — in a folder of its own: an
  invocation partition of the agent in this run, which neither the workflow's folder nor
  another node's can reach. It is ``recoverable``: after a crash it runs again and replays what
  the agent committed. Its executor is resolved by the agent's whole role configuration and at
  most the agent's cap of them run at once (003 F06, ``squad.resolver``).

Owns: those two capabilities. Does not own: when they are called (``squad.driver``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentloom.agent.sessions import open_session
from agentloom.agent.spec import AgentTool
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import AgentLoomError, OperationError
from agentloom.pipeline.context import with_node
from agentloom.refs import NodeRef, OwnerRef
from agentloom.results import ToolResult
from agentloom.squad import artifacts
from agentloom.squad.resolver import RoleConfig, role_digest, role_executor
from agentloom.squad.spec import AgentNode
from agentloom.store.ports import Fence

if TYPE_CHECKING:
    from agentloom.squad.driver import WorkflowProgram

__all__ = ["AGENT_NODE_PREFIX", "APPROVAL_KEY", "UNCAPPED", "AgentExecutor", "agent_node_key",
           "agent_node_tool", "approval_tool"]

APPROVAL_KEY = "workflow.approval"
AGENT_NODE_PREFIX = "workflow.agent."

_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"node": {"type": "string"}},
    "required": ["node"], "additionalProperties": False}
# The delegation's payload (issue 37): ``{task, agent, node, attempt}`` (+ ``history`` when
# granted) — what a ``delegation`` hook sees; only ``task`` may be patched (hooks.fields). A
# request stored before then has ``{node, attempt, input}``: still accepted, ``input`` its task.
_AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string"}, "agent": {"type": "string"},
                   "node": {"type": "string"}, "attempt": {"type": "integer", "minimum": 1},
                   "input": {"type": "string"},
                   "history": {"type": "object", "properties": {
                       "session": {"type": "string"}, "seen": {"type": "integer", "minimum": 0}},
                       "required": ["session", "seen"], "additionalProperties": False}},
    "required": ["node", "attempt"],
    "anyOf": [{"required": ["task", "agent"]}, {"required": ["input"]}],
    "additionalProperties": False}


def agent_node_key(agent: str) -> str:
    """The capability an AgentNode of ``agent`` calls."""
    return AGENT_NODE_PREFIX + agent


class _ApprovalHandler:
    """``workflow.approval``: runs only once a person approved (the request asked)."""

    rerunnable = True
    recoverable = False

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        return ToolResult.success("approved")


UNCAPPED = 2**31 - 1
"""The cap of an agent's AgentNodes when ``workers.max_concurrent_runs`` sets none."""


@dataclass(frozen=True, slots=True)
class AgentExecutor:
    """What runs an AgentNode of one agent, built for exactly one role configuration."""

    agent: str
    digest: str

    @staticmethod
    def build(cfg: RoleConfig) -> AgentExecutor:
        return AgentExecutor(cfg.name, role_digest(cfg))


class _AgentNodeHandler:
    """``workflow.agent.<agent>``: the agent's loop, input_only, in a folder of its own."""

    rerunnable = False
    recoverable = True  # made of durable calls: run again after a crash, it replays them

    def __init__(self, program: WorkflowProgram, agent: str) -> None:
        self.program = program
        self.agent = agent

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        run = self.program.run_of(context.run_id)
        node, attempt = str(request.arguments["node"]), int(request.arguments["attempt"])
        owner = OwnerRef(kind="agent", id=self.agent, space_id=self.program.space_id)
        partition = f"n-{node}-{attempt}"
        scope = await run.kernel.environment.scopes.register(
            owner=owner, run_id=run.run_id, fence=Fence(run.run_id, run.lease_epoch),
            persistent=False, partition_kind="invocation", partition_id=partition,
            invocation_id=partition)
        spec_node = self.program.spec.nodes.get(node)
        if isinstance(spec_node, AgentNode) and spec_node.inputs:  # its granted artifacts,
            await artifacts.grant(run, scope, spec_node)  # read only beside its folder (#37)
        ref = NodeRef(workflow_run_id=run.run_id, name=node, attempt=attempt)
        ctx = with_node(run.context(self.agent, ref.task_id, owner=owner,
                                    workspace_scope_id=scope.workspace_scope_id), ref)
        history: tuple[Any, ...] = ()
        grant = request.arguments.get("history")
        if grant is not None:  # the granted session's turns before its slot ``seen``, read
            # only: the node keeps its own folder (000 §7.1), the session's is never mounted
            try:
                history = open_session(run.kernel.store, str(grant["session"]), owner,
                                       seen=int(grant["seen"])).history
            except AgentLoomError as exc:
                return ToolResult.failure(OperationError(
                    code=exc.code, category="permission", external_outcome="not_started",
                    message=f"node {node!r}: its history grant cannot be read: {exc}"))
        # the agent's executor, cached by its whole configuration; at most its cap of them
        # run at once in this process (003 F06)
        cfg = self.program.role_config(self.agent)
        async with role_executor(self.program.resolver, self.program.limiter, cfg) as executor:
            outcome = await run.invoke(executor.agent, _task(request.arguments), ctx, history)
        if outcome.status == "succeeded":
            answer = outcome.answer
            return ToolResult.success(answer if isinstance(answer, str) else str(answer or ""))
        error = outcome.error or OperationError(
            code="AGENT_NODE_FAILED", category="unknown", message=f"{self.agent} failed")
        if outcome.status == "cancelled":
            return ToolResult.unknown(error)
        return ToolResult.failure(OperationError(
            code=error.code, category=error.category, external_outcome="known",
            message=f"agent {self.agent!r} {outcome.status}: {error.message}"))



def _task(arguments: Mapping[str, Any]) -> str:
    """The agent node's task: ``task``, or ``input`` in a request stored before issue 37."""
    return str(arguments["task"] if "task" in arguments else arguments["input"])


def approval_tool(release_id: str) -> AgentTool:
    """``workflow.approval`` and its handler, for a catalog of ``release_id``."""
    return (CapabilitySpec(
        resource_version_id=release_id, capability_key=APPROVAL_KEY, kind="builtin",
        exposed_name=legal_exposed_name(APPROVAL_KEY),
        description="A workflow's wait for a person's approval.",
        input_schema=_APPROVAL_SCHEMA, handler_ref="workflow:approval"), _ApprovalHandler())


def agent_node_tool(release_id: str, agent: str, program: WorkflowProgram) -> AgentTool:
    """``workflow.agent.<agent>`` and its handler (a delegation: its ``handler_ref`` starts
    with ``delegate:``), for the workflow ``program``."""
    key = agent_node_key(agent)
    return (CapabilitySpec(
        resource_version_id=release_id, capability_key=key, kind="builtin",
        exposed_name=legal_exposed_name(key),
        description=f"Run the {agent} agent on one workflow node's input.",
        input_schema=_AGENT_SCHEMA, handler_ref=f"delegate:workflow:{agent}"),
        _AgentNodeHandler(program, agent))
