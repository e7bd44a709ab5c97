"""Hook runners: the port that executes a hook's code, and the in-process Python runner.

The command (sandboxed) and HTTP runners (``hooks.runners``) implement the same
``HookRunner`` port; the ``HookManager`` picks one by ``handler.kind``. A runner only runs
the code: the ``HookManager`` bounds it with the hook's timeout, contains whatever
it raises and abandons it when the run stops.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from agentloom.errors import ConfigError
from agentloom.hooks.event import HookEvent
from agentloom.hooks.loops import HookLoops
from agentloom.hooks.spec import HookSpec
from agentloom.hooks.threads import HookThreads


class HookRunner(Protocol):
    """The port a hook kind implements (``python``, ``command``, ``http``): run the hook's code
    on the frozen ``HookEvent`` and return what it returned, unparsed (raising
    ``InvalidDecision`` when its output is no decision at all). Timeouts and failures are the
    ``HookManager``'s business, not the runner's."""

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        """Run the hook's code on the frozen event and return what it returned."""
        ...


def resolve_ref(ref: str) -> Callable[..., Any]:
    """Import ``"package.module:function"``; a bad reference is a ConfigError naming it."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"hook handler ref {ref!r} must look like 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"hook handler ref {ref!r}: cannot import {module_name!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"hook handler ref {ref!r}: {module_name!r} has no {attr!r}")
    if not callable(target):
        raise ConfigError(f"hook handler ref {ref!r} is not callable")
    return target  # type: ignore[no-any-return]


class PythonHookRunner:
    """Calls ``module:function`` (or a callable registered under that ref) in this process.

    Plain functions run on ``threads``, the runner's own bounded pool of daemon threads (never
    asyncio's default executor, which file tools share); coroutine functions — and a coroutine
    a plain function returns — are awaited on ``loops``, each in an event loop of its own on a
    thread of another such pool. So a blocking hook, even a coroutine that blocks, stalls
    neither the caller's event loop nor anything else, and its timeout holds.
    """

    def __init__(
        self,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        *,
        threads: HookThreads | None = None,
        loops: HookLoops | None = None,
    ) -> None:
        self._functions: dict[str, Callable[..., Any]] = dict(functions or {})
        self.threads = threads or HookThreads()
        self.loops = loops or HookLoops()

    def register(self, ref: str, function: Callable[..., Any]) -> None:
        self._functions[ref] = function

    def function(self, ref: str) -> Callable[..., Any]:
        fn = self._functions.get(ref)
        if fn is None:
            fn = resolve_ref(ref)
            self._functions[ref] = fn
        return fn

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        fn = self.function(spec.handler.ref)
        if inspect.iscoroutinefunction(fn):
            return await self.loops.run(fn, event)
        result = await self.threads.run(fn, event)
        if inspect.iscoroutine(result):  # not started yet: it may run in a loop of its own
            return await self.loops.run(_itself, result)
        if inspect.isawaitable(result):  # another awaitable may belong to the caller's loop
            return await result
        return result


async def _itself(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
