"""HookManager: selects the ordered chain for a hook point and runs one hook at a time.

It implements the interceptor side only: deciding which hooks match, running one
with its timeout, and turning what it returned into a validated decision or a
recorded failure. It does not apply or commit anything — the pipeline commits
each accepted decision with its change set and the chain cursor before the next
hook runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from agentloom.errors import ConfigError, redact_secrets
from agentloom.hooks.decision import (
    ExecutionStatus,
    InvalidDecision,
    ParsedDecision,
    parse_decision,
)
from agentloom.hooks.runner import HookRunner, PythonHookRunner
from agentloom.hooks.spec import HookSpec, Timing, config_version


@dataclass(frozen=True, slots=True)
class HookRun:
    """The result of running one hook: a parsed decision, or why there is none."""

    status: ExecutionStatus
    decision: ParsedDecision | None
    diagnostic: str | None


def freeze(value: Any) -> Any:
    """A deep read-only view: mappings become ``MappingProxyType``, lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


class HookManager:
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
        self._runners: dict[str, HookRunner] = {"python": PythonHookRunner(functions)}
        self._runners.update(runners or {})
        for hook in self.hooks:
            if hook.handler.kind not in self._runners:
                raise ConfigError(
                    f"hook {hook.hook_id!r}: handler kind {hook.handler.kind!r} is not available; "
                    f"known kinds: {sorted(self._runners)}"
                )
            if hook.timeout_s <= 0:
                raise ConfigError(f"hook {hook.hook_id!r}: timeout_s must be positive")
        self._cache: dict[tuple[Any, ...], tuple[HookSpec, ...]] = {}

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
    ) -> tuple[HookSpec, ...]:
        key = (timing, event, capability, role, purpose, status)
        cached = self._cache.get(key)
        if cached is None:
            cached = tuple(
                h
                for h in self.hooks
                if h.timing == timing
                and h.event in (event, "*")
                and h.match.matches(
                    role=role, capability=capability, purpose=purpose, status=status
                )
            )
            self._cache[key] = cached
        return cached

    async def run(self, spec: HookSpec, event: Mapping[str, Any]) -> HookRun:
        """Run one hook. Its exception, timeout or invalid return is a *hook failure*
        (fail-open for this hook only), reported in the returned status."""
        runner = self._runners[spec.handler.kind]
        try:
            async with asyncio.timeout(spec.timeout_s):
                raw = await runner.run(spec, freeze(event))
        except TimeoutError:
            return HookRun("timed_out", None, f"hook {spec.hook_id!r} timed out after {spec.timeout_s}s")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            message = redact_secrets(f"{type(exc).__name__}: {exc}")
            return HookRun("failed", None, f"hook {spec.hook_id!r} raised {message}")
        try:
            parsed = parse_decision(raw)
        except InvalidDecision as exc:
            return HookRun("invalid", None, f"hook {spec.hook_id!r}: {exc}")
        return HookRun("succeeded", parsed, None)
