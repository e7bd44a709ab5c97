"""HookManager: selects the ordered chain for a hook point and runs one hook at a time.

It implements the interceptor side only: deciding which hooks match, running one
with its timeout, and turning what it returned into a validated decision or a
recorded failure. It does not apply or commit anything — the pipeline commits
each accepted decision with its change set and the chain cursor before the next
hook runs.

Each hook runs in a task of its own, so nothing its code does reaches the caller::

    caller ── waits min(timeout_s, time left to the run deadline), until the run's stop
      │        ──► hook task: runner.run → parse_decision
      │ any exception the hook raises — even SystemExit, KeyboardInterrupt or its own
      │ CancelledError — is returned by the hook task, never raised: ``failed``
      │ its own timeout: the hook task is cancelled and not waited for: ``timed_out``
      │ the run deadline or the run's stop (000 §5.5: they always come first): the hook task
      │ is cancelled and not waited for, its late decision discarded: ``abandoned``,
      │ ``ended_by`` ``run_deadline`` / ``stop`` (a hook is not started once either is reached)
      ▼ the caller's own task cancelled (the runtime stopping): cancels the hook, re-raised
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from agentloom.cancel import CancelToken
from agentloom.errors import ConfigError, redact_secrets
from agentloom.hooks.decision import (
    ExecutionStatus,
    InvalidDecision,
    ParsedDecision,
    parse_decision,
)
from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers import (
    CommandHookRunner,
    HookEnvironment,
    HookStartFailed,
    McpHookHost,
    McpHookRunner,
    PythonHookRunner,
    default_runners,
)
from agentloom.hooks.runner import HookRunner
from agentloom.hooks.spec import HookSpec, Timing, config_version

DIAGNOSTIC_LIMIT = 500  # characters of a hook's exception message kept in its diagnostic

Settled = Literal["done", "timed_out", "run_deadline", "stopped"]
"""What ended the wait for a hook: it ended, its timeout, the run deadline, or the run's stop."""

EndedBy = Literal["run_deadline", "stop"]
"""Why the run gave up on an ``abandoned`` hook: the run deadline passed, or the run stopped."""


@dataclass(frozen=True, slots=True)
class HookRun:
    """The result of running one hook: a parsed decision, or why there is none;
    ``ended_by`` says what made the run give up on an ``abandoned`` hook; ``not_started``: a
    ``failed`` hook the runtime could not start (``HookStartFailed``), which the pipeline
    never passes over."""

    status: ExecutionStatus
    decision: ParsedDecision | None
    diagnostic: str | None
    ended_by: EndedBy | None = None
    not_started: bool = False


class HookManager:
    """Selects the ordered chain of hooks for a hook point and runs one hook at a time with its
    timeout, in a task of its own.

    Owns: matching, running, and turning what a hook returned into a ``ParsedDecision`` or a
    recorded failure (fail-open for that hook only). Does not own: applying or committing a
    decision — the pipeline commits each one with its change set and the chain cursor; the
    handler kinds (``hooks.handlers.registry``).

    Its runners are one of every registered kind that makes its own
    (``registry.default_runners``; ``functions`` registered with the ``python`` one), then
    ``runners`` — a kind's runner of your own (``Runtime(hook_runners=…)``), added or replacing
    the default.

    Raises (on construction):
        ConfigError: a repeated hook id, a hook whose kind has no runner, a timeout not
            positive.
    """

    def __init__(
        self,
        hooks: Sequence[HookSpec] = (),
        *,
        runners: Mapping[str, HookRunner] | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        ids = [h.hook_id for h in hooks]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ConfigError(f"hook ids must be unique; repeated: {duplicates}")
        self.hooks = tuple(hooks)
        self.version = config_version(self.hooks)
        self._by_id = {h.hook_id: h for h in self.hooks}
        self._defaults = default_runners()
        python = self._defaults.get("python")
        if isinstance(python, PythonHookRunner):
            for ref, function in (functions or {}).items():
                python.register(ref, function)
        self._runners: dict[str, HookRunner] = {**self._defaults, **(runners or {})}
        for hook in self.hooks:
            if hook.handler.kind not in self._runners:
                raise ConfigError(
                    f"hook {hook.hook_id!r}: handler kind {hook.handler.kind!r} is not "
                    f"available; known kinds: {sorted(self._runners)}"
                )
            if hook.timeout_s <= 0:
                raise ConfigError(f"hook {hook.hook_id!r}: timeout_s must be positive")
        self._cache: dict[tuple[Any, ...], tuple[HookSpec, ...]] = {}
        self._pending: set[asyncio.Task[Any]] = set()  # given-up hook tasks not yet ended

    def get(self, hook_id: str) -> HookSpec | None:
        return self._by_id.get(hook_id)

    def chain(
        self,
        timing: Timing,
        event: str,
        *,
        capability: str,
        role: str | None,
        purpose: str | None = None,
        status: str | None = None,
        node: str | None = None,
    ) -> tuple[HookSpec, ...]:
        """The hooks of one hook point, in order; ``node`` is the name of the workflow node the
        call serves (``None``: no node — a hook matching a node never runs on it)."""
        key = (timing, event, capability, role, purpose, status, node)
        cached = self._cache.get(key)
        if cached is None:
            cached = tuple(
                h
                for h in self.hooks
                if h.timing == timing
                and h.event in (event, "*")
                and h.match.matches(
                    role=role, capability=capability, purpose=purpose, status=status,
                    node=node,
                )
            )
            self._cache[key] = cached
        return cached

    def attach_environment(self, environment: HookEnvironment) -> None:
        """Run ``command`` hooks under ``environment``'s sandbox backend, with its spool and
        the runs' workspaces (the kernel's ``RunEnvironment``)."""
        runner = self._defaults.get("command")
        if isinstance(runner, CommandHookRunner):
            runner.attach(environment)

    def attach_mcp(self, host: McpHookHost) -> None:
        """Run ``mcp`` hooks on ``host``'s MCP sessions (the ``Kernel``'s: a hook's call uses
        the run's session with its server, as the run's own MCP tool calls do)."""
        runner = self._defaults.get("mcp")
        if isinstance(runner, McpHookRunner):
            runner.attach(host)

    def runner(self, kind: str) -> HookRunner:
        """The runner of handler kind ``kind`` (``python`` is always there).

        Raises:
            KeyError: no runner of that kind.
        """
        return self._runners[kind]

    async def run(
        self, spec: HookSpec, event: Mapping[str, Any], *, cancel: CancelToken | None = None,
        deadline: float | None = None,
    ) -> HookRun:
        """Run one hook on ``event`` (the pipeline's event mapping, or a ``HookEvent``), given
        to it as a ``HookEvent`` with read-only nested values. Whatever its code does — raises
        anything, returns no valid decision, runs past its timeout — is a *hook failure*
        (fail-open for this hook only), reported in the returned status.

        The stop and the run deadline come first (000 §5.5): the hook is waited for at most
        min(its ``timeout_s``, the time left to ``deadline``, a ``time.time()`` epoch), and no
        longer once ``cancel`` (the run's stop) is set. When either is reached before or while
        the hook runs, the hook is ``abandoned`` — not started, or cancelled and no longer
        waited for, its late decision discarded — with ``ended_by`` saying which.

        Only the cancellation of the calling task itself propagates (the runtime's own).
        """
        if cancel is not None and cancel.is_set:
            return HookRun("abandoned", None, f"the run was stopped ({cancel.reason}) before "
                           f"hook {spec.hook_id!r} ran; it was not run", "stop")
        wait = spec.timeout_s
        why_late: Settled = "timed_out"
        if deadline is not None:
            left = deadline - time.time()
            if left <= 0:
                return HookRun("abandoned", None, f"the run deadline had passed before hook "
                               f"{spec.hook_id!r} ran; it was not run", "run_deadline")
            if left < wait:
                wait, why_late = left, "run_deadline"
        runner = self._runners[spec.handler.kind]
        frozen = HookEvent.from_mapping(event)
        loop = asyncio.get_running_loop()
        task = loop.create_task(_contained(lambda: runner.run(spec, frozen)))
        # One future settled by whichever comes first: the hook ends, its timeout or the run
        # deadline (whichever is sooner), the stop.
        settled: asyncio.Future[Settled] = loop.create_future()
        task.add_done_callback(lambda _: _settle(settled, "done"))
        timer = loop.call_later(wait, _settle, settled, why_late)
        remove = None if cancel is None else cancel.add_callback(
            lambda: _settle(settled, "stopped"))
        try:
            why = await settled
        except asyncio.CancelledError:
            self._give_up(task)  # the caller was cancelled: the runtime stopping, not the hook
            raise
        finally:
            timer.cancel()
            if remove is not None:
                remove()
        match why:
            case "stopped":
                self._give_up(task)
                return HookRun("abandoned", None, f"the run was stopped ({_reason(cancel)}) "
                               f"while hook {spec.hook_id!r} ran; it was cancelled, not waited "
                               "for, and any late decision is discarded", "stop")
            case "run_deadline":
                self._give_up(task)
                return HookRun("abandoned", None, f"the run deadline passed after {wait:.3g}s "
                               f"while hook {spec.hook_id!r} ran (its own timeout is "
                               f"{spec.timeout_s}s); it was cancelled, not waited for, and any "
                               "late decision is discarded", "run_deadline")
            case "timed_out":
                self._give_up(task)
                return HookRun("timed_out", None,
                               f"hook {spec.hook_id!r} timed out after {spec.timeout_s}s")
            case "done":
                return _ended(spec, task)
            case _:
                assert_never(why)

    def _give_up(self, task: asyncio.Task[Any]) -> None:
        """Cancel a hook task without waiting for it; keep it referenced until it ends."""
        task.cancel()
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


def _ended(spec: HookSpec, task: asyncio.Task[ParsedDecision | _Raised | _Invalid]) -> HookRun:
    """The run of a hook whose task ended: its parsed decision, or why there is none."""
    outcome: ParsedDecision | _Raised | _Invalid
    if task.cancelled():  # only ever cancelled by us, above; kept for completeness
        outcome = _Raised(asyncio.CancelledError())
    elif (error := task.exception()) is not None:  # what _contained let through
        outcome = _Raised(error)
    else:
        outcome = task.result()
    match outcome:
        case _Raised(error=HookStartFailed() as raised):
            return HookRun("failed", None, _describe(raised, bare=True), not_started=True)
        case _Raised(error=raised):
            return HookRun("failed", None, f"hook {spec.hook_id!r} raised {_describe(raised)}")
        case _Invalid(message=message):
            return HookRun("invalid", None, f"hook {spec.hook_id!r}: {message}")
        case ParsedDecision():
            return HookRun("succeeded", outcome, None)
        case _:
            assert_never(outcome)


@dataclass(frozen=True, slots=True)
class _Raised:
    error: BaseException


@dataclass(frozen=True, slots=True)
class _Invalid:
    message: str


async def _contained(call: Callable[[], Awaitable[Any]]) -> ParsedDecision | _Raised | _Invalid:
    """Run a hook and parse its decision, returning — never raising — whatever its code raised."""
    try:
        raw = await call()
    except GeneratorExit:  # this coroutine is being closed: it must not go on
        raise
    except InvalidDecision as exc:  # a runner read output that is no decision (not JSON)
        return _Invalid(str(exc))
    except BaseException as exc:  # the hook's own code; the caller's cancellation never lands here
        return _Raised(exc)
    try:
        return parse_decision(raw)
    except InvalidDecision as exc:
        return _Invalid(str(exc))
    except Exception as exc:  # a returned object that misbehaves when read
        return _Invalid(f"its decision could not be read: {_describe(exc)}")


def _reason(cancel: CancelToken | None) -> str | None:
    return cancel.reason if cancel is not None else None


def _settle(future: asyncio.Future[Settled], why: Settled) -> None:
    if not future.done():
        future.set_result(why)


def _describe(error: BaseException, *, bare: bool = False) -> str:
    text = redact_secrets(str(error) if bare else f"{type(error).__name__}: {error}")
    if len(text) > DIAGNOSTIC_LIMIT:
        text = text[: DIAGNOSTIC_LIMIT - 1] + "…"
    return text
