"""Hooks: ordered before / after interceptors that allow, deny or patch a call (000 §5).

The package owns the frozen event a hook receives (``HookEvent``), the decision values,
patch normalisation and conflict rules, the shapes a patched event must keep (``shapes``),
the hook specs and matchers, the runner port, the handler kinds (``handlers``: one module per
kind, one registry, ``register_hook_kind`` for a kind of your own), and the threads synchronous
hooks run on (``threads``). It does not commit anything: the pipeline builds each event and commits each
accepted decision with its change set and chain cursor.

This module owns hooks given as Python callables: ``@hook(...)`` marks a function with its
``HookSpec`` fields, and ``hook_specs`` turns a list of specs and callables into the specs a
release is compiled from plus the ``ref → function`` map the Python runner calls::

    @agentloom.hook(timing="before", match="fs.write")   # a HookMatch, or a capability glob
    def guard(event): ...

    Runtime([...], hooks=[guard, some_plain_function, HookSpec(...)])

A plain, undecorated callable is a ``before`` hook on every tool call. A callable's ref is
``module:qualname`` (``#2``, ``#3``, … for a second distinct callable of the same name), so
the same hooks always compile to the same specs and the same release digest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar, get_args, overload

from agentloom.config.handler_kinds import HookHandlerConfig
from agentloom.errors import ConfigError
from agentloom.hooks.decision import HookDecision, HookOutcome
from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers import (
    CommandHookHandler,
    HookKind,
    HttpHookHandler,
    McpHookHandler,
    PythonHookHandler,
    register_hook_kind,
    unregister_hook_kind,
)
from agentloom.hooks.runner import HookRunner
from agentloom.hooks.spec import HandlerRef, HookHandler, HookMatch, HookSpec, OnFailure, Timing

__all__ = [
    "CommandHookHandler",
    "HandlerRef",
    "HookDecision",
    "HookEvent",
    "HookHandler",
    "HookHandlerConfig",
    "HookKind",
    "HookLike",
    "HookMatch",
    "HookOutcome",
    "HookRunner",
    "HookRunners",
    "HookSpec",
    "HttpHookHandler",
    "McpHookHandler",
    "PythonHookHandler",
    "hook",
    "hook_specs",
    "register_hook_kind",
    "unregister_hook_kind",
]

F = TypeVar("F", bound=Callable[..., Any])

HookRunners: TypeAlias = Mapping[str, HookRunner]
"""What ``Runtime(hook_runners=…)`` and ``HookManager(runners=…)`` take: a runner by handler kind,
added to (or replacing) the runners the registered kinds make (docs/hooks.md)."""

HookLike: TypeAlias = HookSpec | Callable[..., Any]
"""What ``Runtime(hooks=...)`` and ``Kernel(hooks=...)`` accept: a compiled ``HookSpec``, a
function decorated with ``@hook``, or a plain callable (a ``before`` hook on every tool call)."""

_ATTRIBUTE = "__agentloom_hook__"


@dataclass(frozen=True, slots=True)
class _Marks:
    """The ``HookSpec`` fields ``@hook`` was given; what it was not given keeps the spec's
    default."""

    timing: Timing
    hook_id: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)


@overload
def hook(function: F, /) -> F: ...


@overload
def hook(
    *,
    timing: Timing = "before",
    event: str | None = None,
    match: HookMatch | str | None = None,
    on_failure: OnFailure | None = None,
    timeout_s: float | None = None,
    hook_id: str | None = None,
) -> Callable[[F], F]: ...


def hook(
    function: F | None = None,
    /,
    *,
    timing: Timing = "before",
    event: str | None = None,
    match: HookMatch | str | None = None,
    on_failure: OnFailure | None = None,
    timeout_s: float | None = None,
    hook_id: str | None = None,
) -> F | Callable[[F], F]:
    """Mark a callable as a hook; the fields are ``HookSpec``'s (unset ones keep its defaults:
    ``event="tool"``, any match, ``timeout_s=10``, ``on_failure="allow"``).

    ``match`` is a ``HookMatch`` or, as a shorthand, a capability glob (``"fs.*"``);
    ``hook_id`` defaults to the function's name. The function is returned unchanged (it may
    be ``async``): it receives the read-only event and returns a decision, as any Python hook.

    Raises:
        ConfigError: a timing, ``on_failure`` or ``timeout_s`` that no hook can have.
    """
    if timing not in get_args(Timing):
        raise ConfigError(f"@hook: timing must be one of {list(get_args(Timing))}, got {timing!r}")
    if on_failure is not None and on_failure not in get_args(OnFailure):
        raise ConfigError(f"@hook: on_failure must be one of {list(get_args(OnFailure))}, "
                          f"got {on_failure!r}")
    if timeout_s is not None and not timeout_s > 0:
        raise ConfigError(f"@hook: timeout_s must be positive, got {timeout_s!r}")
    given: dict[str, Any] = {"event": event, "on_failure": on_failure, "timeout_s": timeout_s,
                             "match": HookMatch(capability=match) if isinstance(match, str)
                             else match}
    marks = _Marks(timing, hook_id, {k: v for k, v in given.items() if v is not None})

    def decorate(fn: F) -> F:
        if not callable(fn):
            raise ConfigError(f"@hook takes a callable, got {type(fn).__name__}")
        try:
            setattr(fn, _ATTRIBUTE, marks)
        except AttributeError as exc:
            raise ConfigError(f"@hook cannot mark {fn!r}; decorate the function it wraps "
                              "(a bound method: the function in its class)") from exc
        return fn

    if function is not None:
        return decorate(function)
    return decorate


def hook_specs(
    hooks: Sequence[HookLike], functions: Mapping[str, Callable[..., Any]] | None = None
) -> tuple[tuple[HookSpec, ...], dict[str, Callable[..., Any]]]:
    """The ``HookSpec``s of ``hooks``, in order, and ``functions`` plus every callable in
    ``hooks`` under its ref. Specs pass through unchanged.

    Raises:
        ConfigError: an entry that is neither a spec nor callable, or two hooks with one id.
    """
    registered: dict[str, Callable[..., Any]] = dict(functions or {})
    specs: list[HookSpec] = []
    for position, entry in enumerate(hooks):
        if isinstance(entry, HookSpec):
            specs.append(entry)
            continue
        if not callable(entry):
            raise ConfigError(f"hooks[{position}] is a {type(entry).__name__}: give a HookSpec, "
                              "a function decorated with @agentloom.hook, or a callable")
        ref = _free_ref(_base_ref(entry), entry, registered)
        registered[ref] = entry
        specs.append(_spec_of(entry, ref))
    ids = [s.hook_id for s in specs]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ConfigError(f"hook ids must be unique; repeated: {repeated} (name each hook "
                          "function apart, or give it @agentloom.hook(hook_id=...))")
    return tuple(specs), registered


def _spec_of(function: Callable[..., Any], ref: str) -> HookSpec:
    marks = getattr(function, _ATTRIBUTE, None)
    if not isinstance(marks, _Marks):
        marks = _Marks("before", None)
    hook_id = marks.hook_id or _name(function)
    return HookSpec(hook_id=hook_id, timing=marks.timing, handler=PythonHookHandler(ref=ref),
                    **marks.fields)


def _base_ref(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or type(function).__module__
    qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}:{qualname}"


def _free_ref(base: str, function: Callable[..., Any],
              registered: Mapping[str, Callable[..., Any]]) -> str:
    """``base`` unless another callable holds it; then ``base#2``, ``base#3``, … (``==``, not
    ``is``: ``obj.method`` is a new bound method each time it is read)."""
    ref, n = base, 1
    while ref in registered and registered[ref] != function:
        n += 1
        ref = f"{base}#{n}"
    return ref


def _name(function: Callable[..., Any]) -> str:
    name = getattr(function, "__name__", None)
    return name if isinstance(name, str) else type(function).__name__
