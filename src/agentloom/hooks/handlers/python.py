"""The ``python`` kind (the default): a ``module:function`` called in this process.

::

    handler: {ref: "my_hooks:guard"}  ─► PythonHookHandler(ref=…)
        ─► PythonHookRunner: the function, registered (``hook_functions``) or imported by ref;
           a plain function on the runner's own threads, a coroutine on a loop of its own

Owns: the kind's spec, its runner and importing a ref. Does not own: the config model
(``config.handler_kinds.HandlerConfig``: config is core), the timeout (the ``HookManager``'s).
"""

from __future__ import annotations

import inspect
import pkgutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentloom.config.handler_kinds import HandlerConfig
from agentloom.errors import ConfigError
from agentloom.hooks.event import HookEvent
from agentloom.hooks.handlers._common import handler_of
from agentloom.hooks.handlers.kind import HookKind
from agentloom.hooks.loops import HookLoops
from agentloom.hooks.spec import HookHandler, HookSpec
from agentloom.hooks.threads import HookThreads


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonHookHandler(HookHandler):
    """``ref`` ``"module:function"``, called in this process."""

    kind: Literal["python"] = "python"
    ref: str

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "ref": self.ref}


def resolve_ref(ref: str) -> Callable[..., Any]:
    """Import ``"package.module:function"``.

    Raises:
        ConfigError: a bad reference, naming it.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"hook handler ref {ref!r} must look like 'package.module:function'")
    try:
        target: Any = pkgutil.resolve_name(ref)
    except ImportError as exc:
        raise ConfigError(f"hook handler ref {ref!r}: cannot import {module_name!r}: {exc}") from exc
    except (AttributeError, ValueError):
        raise ConfigError(f"hook handler ref {ref!r}: {module_name!r} has no {attr!r}") from None
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
        fn = self.function(handler_of(spec, PythonHookHandler).ref)
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


def _from_config(config: HandlerConfig, base_dir: Path) -> PythonHookHandler:
    return PythonHookHandler(ref=config.ref)


KIND = HookKind(name="python", config=HandlerConfig, spec=PythonHookHandler,
                from_config=_from_config, runner=PythonHookRunner)
