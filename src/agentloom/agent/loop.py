"""The React loop as resumable stages (000 §4):

    prepare_context → prepare_model → compact_context (only when the budget needs it)
        → call_model → tools / delegation / final candidate

Every stage that has an effect is a request on the bus with a *deterministic logical key*
(``<invocation>/t<n>/model``, ``<invocation>/t<n>/c<i>``). Running the loop again after a
crash therefore replays: a committed call returns its stored result, an interrupted one is
finished from its last committed phase, and the loop carries on from the first stage that
has no committed result. Nothing is executed twice and the history is never stored twice —
it is rebuilt from the committed calls.

- A model call interrupted before its raw response was saved comes back ``unknown``;
  generation has no external side effect, so it is re-issued as a new call (``#2``).
- A model call's rows are carried into the invocation's next commit (``defer_commit``): the
  intent of the tool calls it asked for, or the ``flush`` when the invocation ends. A crash
  before then leaves no trace of it, and the replay issues it again.
- A tool call in that position is ``unknown`` and is reported to the model as such.
- One response's tool calls are one batch (``request_many``); results go back in request
  order; a denied or failed member never drops the others.
- A tool call the model formed wrong — a tool it was not offered, arguments that are not a
  JSON object (``ToolCall.problem``) — is recorded ``failed`` without running (no Attempt)
  and its tool message tells the model why; the batch's other calls run. After
  ``limits.max_tool_errors`` turns in a row of only such calls the invocation ends
  ``TOOL_ERRORS_EXCEEDED`` (``agent.tool_errors``; the count is rebuilt on a replay).
- ``finish_reason`` alone does not end the task: a response without tool calls is the
  final *candidate*; the runtime delivers it only after the run's terminal state commits.
  A supplement that came while the root's candidate was generated gives it another turn.
- With an output schema (``agent.output``) every request asks for that format and the
  candidate must validate; one that does not gets exactly one corrective user turn — derived
  from the committed response, so a replay rebuilds it — and a second failure ends the
  invocation ``OUTPUT_INVALID``.
- Every request carries the agent's think and output-limit settings (``model_request``). An
  agent without tools of its own is offered none — not even ``result_read``, unless its
  history names a stored result (``offered_specs``) — so it runs on a model without tools.
- Every message has a stable id within its invocation (``sys``, ``h<k>`` for earlier session
  turns, ``task``, ``t<n>/u<k>`` supplements, ``t<n>/a`` the answer, ``t<n>/c<i>`` tool
  results, ``t<n>/fix``, ``t<n>/summary``). A model before-hook's edit of a message is recorded
  on that message's context record (``hooks.fields``); after every model call and every
  compaction the loop re-materialises the edited texts from the committed records by id
  (``ReactLoop(edits=…)``) — never by position, never by running the hook again — so every
  later request, the compacted history and a recovered run show the effective version
  (000 §5.3).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from agentloom.agent.compaction import (
    Budget,
    Estimator,
    compacted_messages,
    compaction_request,
    plan_compaction,
)
from agentloom.agent.events import EventSink, RunEvent, envelope_status, summary_of
from agentloom.agent.output import Parsed, output_formats
from agentloom.agent.quota import TokenQuota, tokens_of
from agentloom.agent.spec import DELEGATE_PREFIX, AgentSpec
from agentloom.agent.tool_errors import ToolErrorStreak
from agentloom.agent.transcript import assistant_message, tool_defs, tool_message
from agentloom.bus import EventBus
from agentloom.bus.bus import RequestItem
from agentloom.cancel import CancelToken
from agentloom.catalog import CapabilitySpec
from agentloom.errors import OperationError
from agentloom.limits import call_window
from agentloom.models.calls import RESPONSE_INVALID_CODES, parse_arguments
from agentloom.models.gateway import ModelCallFailed, ModelGateway, model_key
from agentloom.models.types import Message, ModelRequest, ModelResponse, OutputFormat, ToolDef
from agentloom.pipeline.context import InvocationContext
from agentloom.results import OperationResult, TerminalRunStatus
from agentloom.text import storable

__all__ = ["Invocation", "LoopOutcome", "ReactLoop", "Status", "SupplementSource", "initial_messages",
           "model_request", "offered_specs", "run_over"]

Status: TypeAlias = TerminalRunStatus  # how an invocation ended: a run ends with it
MAX_REISSUES = 3  # new Attempts of one turn's model call after unknown / invalid responses
RESULT_READ = "result.read"


@dataclass(slots=True)
class Invocation:
    """One AgentInvocation: a role running its loop with its own model context."""

    invocation_id: str
    agent: AgentSpec
    ctx: InvocationContext
    messages: list[Message]
    root: bool = True
    steps: int = 0
    quota: TokenQuota | None = None  # shared by the whole run tree (the root's limit)
    # each message's size, measured once (the budget check and the quota's estimates)
    sizes: Estimator = field(default_factory=Estimator, repr=False)


@dataclass(frozen=True, slots=True)
class LoopOutcome:
    """How one invocation's React loop ended: its status, the final text (or ``parsed`` JSON for
    an agent with an output schema), the error that ended it, the model turns it took and the
    messages it saw. The runtime commits it; the loop does not."""

    status: Status
    output: str | None = None
    error: OperationError | None = None
    steps: int = 0
    messages: tuple[Message, ...] = field(default=(), repr=False)
    parsed: Parsed | None = None  # the answer as JSON, when the agent has an output schema

    @property
    def answer(self) -> Any:
        """What the invocation returns: the parsed JSON of a structured answer, else the text."""
        return self.parsed.value if self.parsed is not None else self.output


SupplementSource = Callable[["Invocation", int], Awaitable[list[str]]]
MessageEdits = Callable[[InvocationContext], Mapping[str, str | None]]
"""The committed effective text of each edited message of an invocation, by message id
(empty when no model before-hook can edit its requests): ``Kernel.message_edits``."""


class ReactLoop:
    """Runs invocations; shared by the root and every Executor of a runtime."""

    def __init__(self, bus: EventBus, gateway: ModelGateway, *,
                 supplements: SupplementSource | None = None,
                 edits: MessageEdits | None = None) -> None:
        self.bus = bus
        self.gateway = gateway
        self._supplements = supplements
        self._edits = edits

    async def run(self, inv: Invocation, emit: EventSink | None = None) -> LoopOutcome:
        outcome = await self._run(inv, emit or _ignore)
        # the last model call rides on no later commit of this invocation: commit it now,
        # before the caller commits anything that depends on this outcome
        await self.bus.flush(inv.ctx)
        return outcome

    async def _run(self, inv: Invocation, emit: EventSink) -> LoopOutcome:
        agent = inv.agent
        defs = tool_defs(offered_specs(inv))
        budget = Budget.of(agent.window, agent.output_limit) if agent.window else None
        sizes = inv.sizes
        carried: list[str] = []  # supplements already taken for this turn (see below)
        fmt = agent.output.request_format(output_formats(agent.model)) if agent.output else "text"
        corrected = False  # the one corrective turn of a structured answer was given
        streak = ToolErrorStreak(agent.limits.max_tool_errors)
        for n in range(1, agent.limits.max_steps + 1):
            inv.steps = n
            stopped = self._control(inv)
            if stopped is not None:
                return stopped
            # prepare_context: supplementary user input reaches the root only
            if inv.root and self._supplements is not None:
                extra = carried or await self._supplements(inv, n)
                carried = []
                inv.messages.extend(Message(role="user", content=t, id=f"t{n}/u{k}")
                                    for k, t in enumerate(extra))
            # prepare_model → compact_context (when the budget needs it) → call_model
            request = model_request(agent, inv.messages, defs, fmt)
            if budget is not None and sizes.tokens(request.messages, defs) > budget.input_limit:
                failed = await self._compact(inv, n, budget=budget, sizes=sizes, tools=defs, emit=emit)
                if failed is not None:
                    return failed
                request = model_request(agent, inv.messages, defs, fmt)
            # before-hooks of the call see its window: a patch whose fixed material cannot fit
            # is dropped (000 §5.2.5)
            with (call_window(budget.window, budget.output_reserve) if budget is not None
                  else contextlib.nullcontext()):
                response = await self._call_model(inv, n, request, emit)
            self._materialise(inv)  # a before-hook's edits of this request's messages last
            if isinstance(response, LoopOutcome):
                return response
            if not response.tool_calls:
                streak.reset()
                inv.messages.append(assistant_message(response, id=f"t{n}/a"))
                # A supplement sent while this answer was generated is never dropped: the
                # root takes another turn with it (000 §5.3).
                if inv.root and self._supplements is not None and n < agent.limits.max_steps:
                    carried = await self._supplements(inv, n + 1)
                    if carried:
                        continue
                if agent.output is None:
                    return LoopOutcome("succeeded", response.text, steps=n,
                                       messages=tuple(inv.messages))
                checked = agent.output.check(response.text)
                if isinstance(checked, Parsed):
                    return LoopOutcome("succeeded", response.text, steps=n,
                                       messages=tuple(inv.messages), parsed=checked)
                if corrected or n == agent.limits.max_steps:
                    error = agent.output.failure(agent.name, checked, corrected=corrected)
                    return LoopOutcome("failed", None, error, steps=n,
                                       messages=tuple(inv.messages))
                corrected = True  # the next turn is the corrective one
                inv.messages.append(Message(role="user", id=f"t{n}/fix",
                                            content=agent.output.correction(checked)))
                continue
            results = await self._batch(inv, n, response, emit)
            inv.messages.append(assistant_message(response, results, id=f"t{n}/a"))
            inv.messages.extend(tool_message(c, r, id=f"t{n}/c{i}") for i, (c, r) in
                                enumerate(zip(response.tool_calls, results, strict=True)))
            exceeded = streak.turn(agent.name, n, response.tool_calls, results)
            if exceeded is not None:
                return LoopOutcome("failed", None, exceeded, steps=n,
                                   messages=tuple(inv.messages))
        return LoopOutcome("failed", None, OperationError(
            code="MAX_STEPS_EXCEEDED", category="validation",
            message=f"agent {agent.name!r} used all {agent.limits.max_steps} steps without a "
            "final answer; raise limits.max_steps or simplify the task"),
            steps=agent.limits.max_steps, messages=tuple(inv.messages))

    # -- stages --------------------------------------------------------------------------
    def _materialise(self, inv: Invocation) -> None:
        """Show every committed edit of ``inv``'s messages in its history, by message id."""
        edited = self._edited(inv, inv.messages)
        if edited is not inv.messages:
            inv.messages[:] = edited

    def _edited(self, inv: Invocation, messages: Sequence[Message]) -> Sequence[Message]:
        """``messages`` with each edited message's committed effective text (the same
        sequence when nothing of it was edited)."""
        edits = self._edits(inv.ctx) if self._edits is not None else None
        if not edits:
            return messages
        out = list(messages)
        changed = False
        for i, m in enumerate(out):
            if m.id is not None and m.id in edits and edits[m.id] != m.content:
                out[i] = replace(m, content=edits[m.id])
                changed = True
        return out if changed else messages

    def _control(self, inv: Invocation) -> LoopOutcome | None:
        return run_over(inv.ctx.cancel, inv.ctx.deadline, inv.steps)

    def _over_quota(self, inv: Invocation, n: int) -> LoopOutcome | None:
        """The end of an invocation about to make a model call when the run's quota is spent."""
        error = inv.quota.refusal(n) if inv.quota is not None else None
        if error is None:
            return None
        return LoopOutcome("failed", None, error, steps=n, messages=tuple(inv.messages))

    async def _compact(self, inv: Invocation, n: int, *, budget: Budget, sizes: Estimator,
                       tools: tuple[ToolDef, ...], emit: EventSink) -> LoopOutcome | None:
        """Summarise the older turns so the next request fits; a failure ends the invocation."""
        ctx = inv.ctx
        plan = plan_compaction(inv.messages)
        if plan is not None:
            key = f"{inv.invocation_id}/t{n}/compact"
            refused = self._over_quota(inv, n)
            if refused is not None:
                return refused
            request = compaction_request(plan, budget)
            try:
                response = await self.gateway.generate(
                    request, ctx, model=inv.agent.name,
                    purpose="compaction", logical_key=key, defer_commit=True)
            except ModelCallFailed as exc:
                return LoopOutcome("failed", None, OperationError(
                    code="COMPACTION_FAILED", category=exc.error.category,
                    external_outcome=exc.error.external_outcome,
                    message=f"compacting the context before turn {n} failed: "
                    f"{exc.error.message}"), steps=n, messages=tuple(inv.messages))
            if inv.quota is not None:
                inv.quota.charge(key, tokens_of(response, request.messages, inv.sizes))
            before = len(inv.messages)
            inv.messages[:] = compacted_messages(inv.messages, plan, response.text or "",
                                                 summary_id=f"t{n}/summary")
            self._materialise(inv)  # the kept messages' edits, from the committed records
            sizes.forget_all_but(inv.messages)
            emit(RunEvent("context.compacted", ctx.run_id, time.time(), {
                "role": ctx.role, "turn": n, "replaced": len(plan.replaced),
                "messages_before": before, "messages_after": len(inv.messages)}))
        needed = sizes.tokens(inv.messages, tools)
        if needed > budget.input_limit:
            return LoopOutcome("failed", None, OperationError(
                code="CONTEXT_WINDOW_EXCEEDED", category="validation",
                message=f"turn {n} needs about {needed} input tokens after compaction, more "
                f"than the {budget.input_limit} the window leaves ({budget.window} minus "
                f"{budget.output_reserve} reserved for output); raise model.window or shorten "
                "the task"), steps=n, messages=tuple(inv.messages))
        return None

    async def _call_model(self, inv: Invocation, n: int, request: ModelRequest,
                          emit: EventSink) -> ModelResponse | LoopOutcome:
        ctx = inv.ctx
        last: OperationError | None = None
        for k in range(1, MAX_REISSUES + 2):
            key = f"{inv.invocation_id}/t{n}/model" + (f"#{k}" if k > 1 else "")
            refused = self._over_quota(inv, n)
            if refused is not None:
                return refused
            # the same keys a stored model call has (operation_id is not known yet)
            base = {"role": ctx.role, "turn": n, "logical_key": key,
                    "capability": model_key(inv.agent.name)}
            emit(RunEvent("model.call.started", ctx.run_id, time.time(), base))
            try:
                response = await self.gateway.generate(request, ctx, model=inv.agent.name,
                                                       logical_key=key, defer_commit=True)
            except ModelCallFailed as exc:
                emit(RunEvent("model.call.completed", ctx.run_id, time.time(), {
                    **base, "operation_id": exc.envelope.operation_id,
                    "attempts": exc.envelope.attempts,
                    "status": envelope_status(exc.envelope), "error_code": exc.error.code}))
                stopped = self._control(inv)
                if stopped is not None:
                    return stopped
                last = exc.error
                if exc.outcome == "unknown" and exc.error.external_outcome == "unknown":
                    continue  # no raw response was saved: generation is re-issued
                # a before-hook's committed edits hold for the call issued again
                request = replace(request, messages=tuple(self._edited(inv, request.messages)))
                if exc.error.code in RESPONSE_INVALID_CODES:
                    # the model's output was malformed: tell it and let it answer again
                    request = replace(request, messages=(*request.messages, Message(
                        role="user", id=f"t{n}/r{k}",
                        content=f"[runtime] Your previous response was rejected: "
                        f"{exc.error.message}. Answer again.")))
                    continue
                return LoopOutcome("failed", None, exc.error, steps=n,
                                   messages=tuple(inv.messages))
            if inv.quota is not None:
                inv.quota.charge(key, tokens_of(response, request.messages, inv.sizes))
            answered = {**base, "status": "succeeded", "finish_reason": response.finish_reason,
                        "tool_calls": len(response.tool_calls)}
            if not response.tool_calls and inv.agent.output is not None:  # i36 (11)
                answered["answer_rejected"] = inv.agent.output.rejection(response.text)
            emit(RunEvent("model.call.completed", ctx.run_id, time.time(), answered))
            return response
        assert last is not None
        return LoopOutcome("failed", None, OperationError(
            code=last.code, category=last.category, external_outcome=last.external_outcome,
            message=f"the model call of turn {n} failed {MAX_REISSUES + 1} times in a row; "
            f"the last time: {last.message}"), steps=n, messages=tuple(inv.messages))

    async def _batch(self, inv: Invocation, n: int, response: ModelResponse,
                     emit: EventSink) -> list[OperationResult]:
        ctx = inv.ctx
        items = []
        for i, call in enumerate(response.tool_calls):
            spec = ctx.catalog.specs.get(call.name)
            delegation = spec is not None and spec.capability_key.startswith(DELEGATE_PREFIX)
            # A call with a ``problem`` is recorded failed with it, never run; its arguments
            # are kept when they are a JSON object (e.g. those of a tool not offered).
            parsed = parse_arguments(call.arguments)
            # JSON may spell a lone surrogate ("\ud800"): what no store holds becomes U+FFFD.
            arguments, _ = storable(parsed) if isinstance(parsed, dict) else ({}, 0)
            items.append(RequestItem(
                name=call.name, arguments=arguments,
                event_type="delegation" if delegation else "tool",
                logical_key=f"{inv.invocation_id}/t{n}/c{i}", call_id=call.id,
                refusal=call.problem))
            emit(RunEvent(f"{items[-1].event_type}.call.started", ctx.run_id, time.time(), {
                "role": ctx.role, "call_id": call.id,
                "capability": spec.capability_key if spec else call.name}))
        # A runtime failure of a member (e.g. the store) raises BatchError after the whole
        # batch settled: it is never reported to the model as a tool result.
        results = await self.bus.request_many(items, ctx,
                                              concurrency=inv.agent.limits.batch_concurrency)
        for call, item, result in zip(response.tool_calls, items, results, strict=True):
            emit(RunEvent(f"{item.event_type}.call.completed", ctx.run_id, time.time(), {
                "role": ctx.role, "call_id": call.id, "capability": result.capability,
                "operation_id": result.operation_id, "status": envelope_status(result),
                "attempts": result.attempts, "summary": summary_of(result)}))
        return results


def _ignore(event: RunEvent) -> None:
    return None


def run_over(cancel: CancelToken, deadline: float, steps: int) -> LoopOutcome | None:
    """How a run ends when it was stopped (``cancelled``) or its deadline passed
    (``timed_out``), after ``steps``; None while it may go on. The React loop and a
    workflow (``squad.driver``) check it between their steps."""
    if cancel.is_set:
        return LoopOutcome("cancelled", None, OperationError(
            code="RUN_STOPPED", category="cancelled",
            message=f"the run was stopped ({cancel.reason})"), steps=steps)
    if time.time() >= deadline:
        return LoopOutcome("timed_out", None, OperationError(
            code="RUN_DEADLINE_EXCEEDED", category="timeout",
            message="the run deadline passed"), steps=steps)
    return None


def model_request(agent: AgentSpec, messages: Sequence[Message], tools: tuple[ToolDef, ...],
                  fmt: OutputFormat) -> ModelRequest:
    """One turn's request: the messages and tools, the output format, and the agent's own
    think / output-limit settings (``model.think``, ``model.max_output_tokens``)."""
    return ModelRequest(messages=tuple(messages), tools=tools, output_format=fmt,
                        think=agent.think, max_output_tokens=agent.max_output_tokens)


def offered_specs(inv: Invocation) -> list[CapabilitySpec]:
    """The role's catalog as offered to its model. ``result.read`` is offered only when the
    agent has tools of its own or its history names a stored result to read (a tool message
    with a ``result_ref``): a tool-less agent offers no tools at all, so it runs on a model
    without tool support (000 §4.6). It stays in the published catalog either way."""
    specs = list(inv.ctx.catalog.specs.values())
    if inv.agent.has_tools() or any(m.role == "tool" and "result_ref" in (m.content or "")
                                    for m in inv.messages):
        return specs
    return [s for s in specs if s.capability_key != RESULT_READ]


def initial_messages(agent: AgentSpec, task: str, history: Sequence[Message] = ()) -> list[Message]:
    """The first messages of an invocation: instructions (and what a structured answer must
    be), earlier session turns, the task."""
    messages: list[Message] = []
    system = agent.instructions
    if agent.output is not None:  # what the final answer must be, as the model can be asked
        said = agent.output.instructions(output_formats(agent.model))
        system = f"{system}\n\n{said}" if system else said
    if system:
        messages.append(Message(role="system", content=system, id="sys"))
    messages.extend(replace(m, id=f"h{k}") for k, m in enumerate(history))
    messages.append(Message(role="user", content=task, id="task"))
    return messages
