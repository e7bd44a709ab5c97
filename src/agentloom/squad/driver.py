"""Running a workflow (issue 20): every node is a call on the one recorded path.

A workflow run is a run like an agent's (lease, controls, approvals, recovery: ``Runtime``);
its program is ``WorkflowProgram``. It advances the graph wave by wave (``squad.graph``) and
runs each activation as one request on the bus with the logical key
``<run>/n/<node>/<attempt>``:

- a ``CapabilityNode`` calls its capability under the workflow's owner in the workflow's own
  WorkflowSession folder, with its ``args`` rendered;
- an ``AgentNode`` calls ``workflow.agent.<agent>`` (a delegation, ``squad.nodes``): the
  agent's React loop runs input_only in a folder of its own; recoverable like a delegation;
- a ``WaitNode`` calls ``workflow.approval`` with its question asked of a person
  (``Request.ask``): the run waits (``agentloom runs approve|reject``); approved → output
  ``approved``, rejected → ``rejected``; a wait for a message (``wait: message``) calls
  ``workflow.message`` (``squad.waits``), whose output is the message's body.

After each activation its record (``workflow_nodes``: status, output, error, the call's
operation id and call id) is committed through the commit coordinator, fenced by the lease,
with the blackboard patches a succeeded result carries (``squad.results``) — the graph state
is persisted per node transition. A commit that fails ends the run as a persistence failure;
no ``node.completed`` event is emitted for it (003 F11).

Recovery (003 F05): the driver re-walks the waves from the committed records. An activation
with a record takes it; one without issues its request again under the same key — the
pipeline returns a delivered result, finishes one past ``raw_saved``, replays an agent, or
reports ``unknown`` for a call that started and saved nothing. ``unknown`` is never a
success and is never re-run by itself: the node's record says ``waiting`` with the calls
whose effect is unknown, and a person is asked (``<key>/confirm``): approve runs it again
(``<key>/rerun``), reject fails the node. Files on disk never decide anything.

Events (003 F14): ``node.started`` / ``node.completed`` carry the node, its attempt, its call
id (``<node>#<attempt>``, also the call's ``call_id``), its operation id and its real status.

Owns: turning activations into calls and records. Does not own: the graph (``squad.graph``),
leases and run ends (``agent.runtime``), templates (``squad.templates``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentloom.agent.events import RunEvent
from agentloom.agent.loop import LoopOutcome, run_over
from agentloom.agent.programs import ProgramRun
from agentloom.agent.sessions import open_session
from agentloom.agent.spec import AgentSpec, AgentTool, Limits, tool_key
from agentloom.approvals import ApprovalPending
from agentloom.canonical import sorted_json
from agentloom.catalog import legal_exposed_name
from agentloom.errors import AgentLoomError, ConfigError, OperationError, StoreError
from agentloom.pipeline.context import InvocationContext, with_node
from agentloom.pipeline.retry import RetryPolicy
from agentloom.refs import NodeRef, OwnerRef
from agentloom.results import OperationResult
from agentloom.squad import artifacts, collab
from agentloom.squad.graph import Activation, GraphState
from agentloom.squad.live import driven
from agentloom.squad.nodes import (
    APPROVAL_KEY,
    UNCAPPED,
    AgentExecutor,
    agent_node_key,
    agent_node_tool,
    approval_tool,
)
from agentloom.squad.resolver import (
    ExecutorResolver,
    RoleConfig,
    RoleLimiter,
)
from agentloom.squad.results import NodeOutcome, materialise
from agentloom.squad.spec import AgentNode, CapabilityNode, WaitNode, WorkflowSpec
from agentloom.squad.templates import render, render_args
from agentloom.squad.validate import start_nodes
from agentloom.squad.waits import MESSAGE_WAIT_KEY, message_wait_tool
from agentloom.squad.workflow_tools import is_workflow_tool, resolve
from agentloom.store.workflow_nodes import WorkflowNodeRecord, node_op, node_records

if TYPE_CHECKING:
    from agentloom.agent.runtime import Runtime

__all__ = ["WorkflowProgram", "node_rows"]


def node_rows(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Every committed node record of a workflow run, oldest first, as rows
    (``store.workflow_nodes.node_records`` gives them typed)."""
    return [record.to_row() for record in node_records(store, run_id)]


class WorkflowProgram:
    """A workflow as a program a ``Runtime`` drives (``agent.programs.RunProgram``).

    ``tools``: what its CapabilityNodes call, in any form an agent's ``tools`` takes (default:
    the node capabilities as built-in names, e.g. ``exec``, ``fs.write``); ``keys``: the
    capability key a node's ``capability`` stands for when they differ (a ``module:attr``
    entry and its tool's name)."""

    def __init__(self, spec: WorkflowSpec, *, tools: Sequence[AgentTool] = (),
                 keys: Mapping[str, str] | None = None,
                 limits: Limits | None = None, retry: RetryPolicy | None = None) -> None:
        self.spec = spec
        self.name = f"workflow:{spec.name}"
        self.owner = OwnerRef(kind="workflow", id=spec.name)
        self.limits = limits or Limits()
        self.retry = retry or RetryPolicy()
        # a changed definition or limit is a new release (a resumed run keeps its own)
        self.digest = hashlib.sha256(sorted_json(
            {"spec": spec.digest, "limits": dataclasses.asdict(self.limits)}).encode()
        ).hexdigest()[:16]
        self.space_id = "default"
        self._node_tools = list(tools) if tools else list(spec.capabilities())
        self._keys = dict(keys or {})
        self.starts = start_nodes(spec)  # the first wave of every run (computed once)
        self._own: list[AgentTool] = []
        self._runs: dict[str, ProgramRun] = {}
        self._agents: dict[str, AgentSpec] = {}
        self._caps: dict[str, int] = {}
        self.resolver: ExecutorResolver[AgentExecutor] = ExecutorResolver(AgentExecutor.build)
        self.limiter = RoleLimiter()

    def key_of(self, capability: str) -> str:
        """The capability key a node's ``capability`` entry stands for."""
        return self._keys.get(capability, capability)

    def role_config(self, agent: str) -> RoleConfig:
        """The role configuration an AgentNode of ``agent`` runs with: its whole spec (model,
        tools, limits, retry, …) and its cap (``workers.max_concurrent_runs.<agent>``,
        unlimited when not set)."""
        return RoleConfig.of_agent(self._agents[agent],
                                   max_concurrent=self._caps.get(agent, UNCAPPED))

    # -- RunProgram --------------------------------------------------------------------
    def bind(self, runtime: Runtime) -> None:
        missing = [a for a in self.spec.agents() if a not in runtime.agents]
        if missing:
            raise ConfigError(f"workflow {self.spec.name!r} invokes {missing}, which the "
                              f"runtime does not define; agents: {sorted(runtime.agents)}")
        offered = {tool_key(t) for t in self._node_tools}
        unserved = [c for c in self.spec.capabilities() if self.key_of(c) not in offered]
        if unserved:
            raise ConfigError(f"workflow {self.spec.name!r} calls {unserved}, which none of its "
                              f"tools provides; its tools: {sorted(offered)}",
                              code="WORKFLOW_CAPABILITY_MISSING")
        self.space_id = runtime.space_id
        for name, agent in list(runtime.agents.items()):  # ``collab.post`` … by name (issue
            # 37): their (spec, handler), before the runtime publishes its catalog
            if any(is_workflow_tool(t) for t in agent.tools):
                runtime.agents[name] = dataclasses.replace(agent, tools=tuple(resolve(agent.tools)))
        self._agents = dict(runtime.agents)
        artifacts.check_grants(self.spec, self._agents)  # what YAML checks at load (#37)
        self._caps = dict(runtime.workers.max_concurrent_runs)
        self._own = [approval_tool(runtime.release_id),
                     *(agent_node_tool(runtime.release_id, agent, self)
                       for agent in self.spec.agents())]
        if any(isinstance(n, WaitNode) and n.wait == "message" for n in self.spec.nodes.values()):
            self._own.append(message_wait_tool(runtime.release_id))

    def describe(self) -> dict[str, Any]:
        """The definition as a run records it: nodes as a list, so their order is kept."""
        spec = self.spec.to_dict()
        return {**spec, "nodes": [{"node": name, **node} for name, node in spec["nodes"].items()]}

    def tools(self) -> Sequence[AgentTool]:
        return [*self._node_tools, *self._own]

    def run_of(self, run_id: str) -> ProgramRun:
        try:
            return self._runs[run_id]
        except KeyError:
            raise StoreError(f"workflow run {run_id} is not driven by this process") from None

    async def drive(self, run: ProgramRun) -> LoopOutcome:
        self._runs[run.run_id] = run
        try:
            with driven(run):
                return await _Drive(self, run).run()
        finally:
            self._runs.pop(run.run_id, None)


def _asks_a_person(node: object) -> bool:
    """A wait for a person's approval: a denial of its call is its answer ``rejected`` (a
    denied wait for a message fails, as any denied call does)."""
    return isinstance(node, WaitNode) and node.wait == "approval"


class _Drive:
    """One drive of one workflow run (a first start or a resume)."""

    def __init__(self, program: WorkflowProgram, run: ProgramRun) -> None:
        self.program = program
        self.spec = program.spec
        self.run_ = run
        # the workflow's own calls have no model context: no context records are kept for
        # them (a node's output reaches the next node through its record, not a transcript)
        self.ctx = dataclasses.replace(run.context(program.name, run.run_id), context_scope=None)
        self.store = run.kernel.store
        self.rows = {(r.node, r.attempt): r for r in node_records(self.store, run.run_id)}
        self.state = GraphState(self.spec, starts=program.starts)

    async def run(self) -> LoopOutcome:
        wave = self.state.first_wave()
        steps = 0
        while wave:
            stopped = self._stopped(steps)
            if stopped is not None:
                return stopped
            self.run_.step_boundary()
            steps += 1
            settled = await self._settle(wave)
            waits = [s for s in settled if isinstance(s, ApprovalPending)]
            errors = [s for s in settled if isinstance(s, BaseException)
                      and not isinstance(s, ApprovalPending)]
            if errors:
                raise errors[0]
            if waits:  # every other member settled and was recorded: the run waits
                raise ApprovalPending([c for w in waits for c in w.calls])
            stopped = self._stopped(steps)  # a stop or the deadline ends every node
            if stopped is not None:
                return stopped
            done = [(a, o) for a, o in zip(wave, settled, strict=True)
                    if isinstance(o, NodeOutcome)]
            wave = self.state.apply(done)
        return self._ending(steps)

    async def _settle(self, wave: list[Activation]) -> list[NodeOutcome | BaseException]:
        """Run a wave's activations side by side; each one's outcome or what it raised."""
        if len(wave) == 1:  # a line of nodes: no task to make
            try:
                return [await self._activation(wave[0])]
            except Exception as exc:
                return [exc]
        return await asyncio.gather(*(self._activation(a) for a in wave),
                                    return_exceptions=True)

    def _ending(self, steps: int) -> LoopOutcome:
        state = self.state
        if state.failures:
            node, error = state.failures[0]
            return LoopOutcome("failed", None, OperationError(
                code=error.code, category=error.category,
                external_outcome=error.external_outcome,
                message=f"workflow {self.spec.name!r}: node {node!r} failed and no error edge "
                f"takes it: {error.message}"), steps=steps)
        return LoopOutcome("succeeded", state.last.output if state.last else "", steps=steps)

    def _stopped(self, steps: int) -> LoopOutcome | None:
        return run_over(self.run_.cancel, self.run_.deadline, steps)

    # -- one activation ---------------------------------------------------------------------
    async def _activation(self, act: Activation) -> NodeOutcome:
        record = self.rows.get((act.node, act.attempt))
        if record is not None and record.status in ("succeeded", "failed"):
            return NodeOutcome.from_row(record.to_row())
        key = f"{self.run_.run_id}/n/{act.node}/{act.attempt}"
        call_id = f"{act.node}#{act.attempt}"
        base = {"node": act.node, "attempt": act.attempt, "call_id": call_id}
        self._emit("node.started", base)
        envelope = await self._call(act, key, call_id)
        outcome = materialise(act.node, envelope,
                              wait=_asks_a_person(self.spec.nodes[act.node]))
        if outcome.status == "waiting" and self._stopped(0) is None:  # a person decides
            outcome = await self._unknown(act, key, call_id, outcome, base)
        outcome = await self._record(act, outcome, call_id)
        self._emit("node.completed", {**base, "operation_id": outcome.operation_id,
                                      "status": outcome.status,
                                      "error_code": outcome.error.code if outcome.error
                                      else None})
        return outcome

    async def _unknown(self, act: Activation, key: str, call_id: str, outcome: NodeOutcome,
                       base: dict[str, Any]) -> NodeOutcome:
        """A call whose effect is unknown: record the node waiting, ask a person whether to
        run it again; approve → one new call (``<key>/rerun``), reject → the node fails."""
        if (act.node, act.attempt) not in self.rows:
            await self._record(act, outcome, call_id)
        listed = "; ".join(f"{u['capability']} {u.get('arguments')} (operation "
                           f"{u['operation_id']})" for u in outcome.unknown)
        question = (f"Workflow node {act.node!r} (attempt {act.attempt}) was cut off and the "
                    f"effect of its call is unknown — it may or may not have happened: {listed}. "
                    "Approve to run it again, reject to fail the node.")
        self._emit("node.waiting", {**base, "reason": question})
        answer = await self.run_.kernel.bus.request(
            legal_exposed_name(APPROVAL_KEY), {"node": act.node}, self._node_ctx(act),
            logical_key=f"{key}/confirm", call_id=f"{call_id}/confirm", ask=question)
        if answer.outcome == "succeeded":
            again = await self._call(act, f"{key}/rerun", f"{call_id}/rerun")
            rerun = materialise(act.node, again)
            if rerun.status != "waiting":
                return rerun
            return NodeOutcome("failed", error=rerun.error, unknown=rerun.unknown,
                               operation_id=rerun.operation_id, attempts=rerun.attempts)
        return NodeOutcome("failed", error=OperationError(
            code="NODE_OUTCOME_UNKNOWN", category="unknown", external_outcome="unknown",
            message=f"node {act.node!r}: its call's effect is unknown and a person chose not to "
            f"run it again ({answer.reason or 'rejected'})"), unknown=outcome.unknown,
            operation_id=outcome.operation_id, attempts=outcome.attempts)

    def _node_ctx(self, act: Activation) -> InvocationContext:
        """The context of the calls activation ``act`` makes: the node in it (issue 37)."""
        return with_node(self.ctx, NodeRef(workflow_run_id=self.run_.run_id, name=act.node,
                                           attempt=act.attempt))

    async def _call(self, act: Activation, key: str, call_id: str) -> OperationResult:
        node = self.spec.nodes[act.node]
        outputs = self.state.outputs  # read now, before the first await: the wave's view
        task = self.run_.task
        bus = self.run_.kernel.bus
        ctx = self._node_ctx(act)
        listing = artifacts.Listing(self.store, self.run_.run_id)  # read only when named
        if isinstance(node, CapabilityNode):
            spec = self.ctx.catalog.by_key(self.program.key_of(node.capability))
            args = render_args(node.args, task=task, outputs=outputs, artifacts=listing)
            if node.outputs or node.inputs:  # a folder of its own, its inputs granted (#37)
                ctx = await artifacts.capability_context(self.run_, ctx, node, act.attempt)
            # a re-runnable capability (no side effect) is committed once, with the node's
            # record (``_record``): its rows are carried to that commit
            return await bus.request(spec.exposed_name, args, ctx, logical_key=key,
                                     call_id=call_id, defer_commit=True)
        if isinstance(node, AgentNode):
            text = render(node.input, task=task, outputs=outputs, artifacts=listing)
            if act.feedback:
                text = f"{text}\n\n{act.feedback}"
            # the delegation's payload, as a ``delegation`` hook sees it (issue 37)
            call_args: dict[str, Any] = {"task": text, "agent": node.agent, "node": act.node,
                                         "attempt": act.attempt}
            session = node.history_session
            if session is not None:  # the grant, pinned to the turns there are now (a session
                # the agent may not read fails the node, in its handler)
                owner = OwnerRef(kind="agent", id=node.agent, space_id=self.program.space_id)
                try:
                    seen = open_session(self.store, session, owner).seen
                except AgentLoomError:
                    seen = 0
                call_args["history"] = {"session": session, "seen": seen}
            return await bus.request(
                legal_exposed_name(agent_node_key(node.agent)), call_args, ctx,
                event_type="delegation", logical_key=key, call_id=call_id)
        assert isinstance(node, WaitNode)
        if node.wait == "message":  # a wait for a mailbox message (issue 37, squad.waits)
            wanted = {"node": act.node, "for": node.recipient,
                      **({"from": node.from_node} if node.from_node else {})}
            return await bus.request(legal_exposed_name(MESSAGE_WAIT_KEY), wanted, ctx,
                                     logical_key=key, call_id=call_id)
        question = render(node.question, task=task, outputs=outputs) or \
            f"Continue workflow {self.spec.name!r} past node {act.node!r}?"
        return await bus.request(legal_exposed_name(APPROVAL_KEY), {"node": act.node},
                                 ctx, logical_key=key, call_id=call_id, ask=question)

    async def _record(self, act: Activation, outcome: NodeOutcome, call_id: str) -> NodeOutcome:
        """Commit the node's record (and a success's blackboard patches and artifacts) in one
        commit; the outcome recorded (a success whose artifacts are over the limits fails)."""
        outcome, recorded = await artifacts.on_record(self.run_, self.spec, act.node,
                                                      act.attempt, outcome)
        now = time.time()
        first = self.rows.get((act.node, act.attempt))
        record = WorkflowNodeRecord(
            run_id=self.run_.run_id, node=act.node, attempt=act.attempt, status=outcome.status,
            operation_id=outcome.operation_id,
            created_at=first.created_at if first else now, updated_at=now,
            data={**outcome.to_data(), "call_id": call_id,
                  **({"feedback": act.feedback} if act.feedback else {})})
        # its first record is new (this holder read every record of the run when it began)
        ops: list[Any] = [node_op(record, new=first is None)]
        if outcome.succeeded and outcome.patches:
            ops.extend(collab.blackboard_ops(self.store, self.run_.run_id, outcome.patches))
        ops.extend(recorded)
        # A record of what has happened (its call's envelope is committed, or rides in this
        # same commit): visible at once, on the disk with the next synced commit — the next
        # node's intent — and re-derived from the envelope if a power loss takes it.
        await self.run_.kernel.pipeline.commits.write(self.ctx, ops, sync=False)
        self.rows[(act.node, act.attempt)] = record
        return outcome

    def _emit(self, kind: str, payload: Mapping[str, Any]) -> None:
        if not self.run_.listening():  # live events only: nothing to make when nobody follows
            return
        self.run_.emit(RunEvent(kind, self.run_.run_id, time.time(),
                                {"workflow": self.spec.name, **payload}))

