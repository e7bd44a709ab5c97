"""Spec 003 F06: role executors are cached by the whole configuration, and a role's concurrency
cap holds across configuration versions.

The executors here are honest: each one keeps the set of capabilities it was *built* to allow
and refuses the rest, so an executor served from a stale cache shows the old permission."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import pytest

from agentloom.agent.spec import AgentSpec, Limits
from agentloom.squad.resolver import ExecutorResolver, RoleConfig, RoleLimiter, role_digest, role_executor
from agentloom.testing import TestModel

T = TypeVar("T")

WAIT_S = 10.0
"""A deadline on every wait of these tests; never a synchronisation delay."""


class PermissionDenied(Exception):
    pass


@dataclass(frozen=True)
class RoleExecutor:
    """What a role's calls run on: the permissions and factory it was built with, fixed."""

    role: str
    allowed: frozenset[str]
    factory: str

    async def call(self, capability: str) -> str:
        if capability not in self.allowed:
            raise PermissionDenied(f"{self.role} may not call {capability}")
        return f"{self.role} ran {capability}"


class Factory:
    """Builds ``RoleExecutor`` s and counts the builds; optionally gated or failing."""

    def __init__(self, label: str = "a", *, gate: asyncio.Event | None = None, fail_first: int = 0):
        self.label = label
        self.gate = gate
        self.fail_first = fail_first
        self.builds: list[RoleConfig] = []

    async def __call__(self, cfg: RoleConfig) -> RoleExecutor:
        self.builds.append(cfg)
        if self.gate is not None:
            await self.gate.wait()
        if len(self.builds) <= self.fail_first:
            raise RuntimeError(f"build {len(self.builds)} of {cfg.name} failed")
        return RoleExecutor(cfg.name, frozenset(k for k in cfg.tools if cfg.allows(k)), self.label)


def coder(**changes: object) -> RoleConfig:
    base = RoleConfig(name="coder", model="test", tools=("fs.read", "exec"),
                      permissions={"exec": "allow"}, limits={"max_steps": 5}, max_concurrent=3)
    return replace(base, **changes)  # type: ignore[arg-type]


async def until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until ``condition`` holds (a bounded number of loop turns)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def within(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, WAIT_S)


# -- the executor cache ---------------------------------------------------------------------------


async def test_f06_allow_to_deny_takes_effect_on_the_next_call() -> None:
    factory = Factory()
    resolver = ExecutorResolver(factory)
    allowed = coder(permissions={"exec": "allow"})
    assert await (await resolver.resolve(allowed)).call("exec") == "coder ran exec"

    denied = coder(permissions={"exec": "deny"})  # same name, same model and tools
    assert role_digest(denied) != role_digest(allowed)
    with pytest.raises(PermissionDenied):
        await (await resolver.resolve(denied)).call("exec")
    assert await (await resolver.resolve(denied)).call("fs.read") == "coder ran fs.read"
    assert len(factory.builds) == 2


async def test_f06_deny_to_allow_takes_effect_on_the_next_call() -> None:
    factory = Factory()
    resolver = ExecutorResolver(factory)
    limiter = RoleLimiter()
    async with role_executor(resolver, limiter, coder(permissions={"exec": "deny"})) as executor:
        with pytest.raises(PermissionDenied):
            await executor.call("exec")
    async with role_executor(resolver, limiter, coder(permissions={"exec": "allow"})) as executor:
        assert await executor.call("exec") == "coder ran exec"


async def test_f06_every_part_of_the_configuration_is_in_the_digest() -> None:
    base = coder()
    assert role_digest(coder()) == role_digest(base)  # stable: the same configuration, one digest
    variants = [coder(model="other"), coder(tools=("fs.read",)), coder(limits={"max_steps": 6}),
                coder(max_concurrent=2), coder(extras={"instructions": "be brief"}),
                coder(permissions={"exec": "allow", "fs.read": "deny"})]
    digests = {role_digest(v) for v in variants}
    assert role_digest(base) not in digests and len(digests) == len(variants)

    resolver = ExecutorResolver(Factory())
    first = await resolver.resolve(base)
    assert await resolver.resolve(coder()) is first
    assert all([await resolver.resolve(v) is not first for v in variants])


async def test_f06_a_changed_agent_spec_yields_a_new_executor() -> None:
    spec = AgentSpec(name="coder", model=TestModel(), tools=("fs.read",))
    resolver = ExecutorResolver(Factory())
    before = RoleConfig.of_agent(spec, max_concurrent=2)
    assert before.model.endswith("TestModel:test") and before.tools == ("fs.read",)
    assert RoleConfig.of_agent(spec, max_concurrent=2) == before
    old = await resolver.resolve(before)

    with_exec = RoleConfig.of_agent(replace(spec, tools=("fs.read", "exec")), max_concurrent=2)
    assert role_digest(with_exec) != role_digest(before)
    new = await resolver.resolve(with_exec)
    assert new is not old
    assert await new.call("exec") == "coder ran exec"
    with pytest.raises(PermissionDenied):
        await old.call("exec")

    tighter = RoleConfig.of_agent(replace(spec, limits=Limits(max_steps=7)), max_concurrent=2)
    assert tighter.limits == {"limits": {"max_steps": 7}}
    assert await resolver.resolve(tighter) is not old
    denied = RoleConfig.of_agent(spec, max_concurrent=2, permissions={"fs.read": "deny"})
    with pytest.raises(PermissionDenied):
        await (await resolver.resolve(denied)).call("fs.read")


async def test_f06_factory_swap_takes_effect_on_the_next_resolve() -> None:
    old_factory, new_factory = Factory("old"), Factory("new")
    resolver = ExecutorResolver(old_factory)
    cfg = coder()
    old = await resolver.resolve(cfg)
    assert old.factory == "old"

    assert resolver.swap_factory(new_factory) == [old]
    new = await resolver.resolve(cfg)  # the same configuration: the new factory builds it
    assert new.factory == "new" and new is not old
    assert await resolver.resolve(cfg) is new
    assert (len(old_factory.builds), len(new_factory.builds)) == (1, 1)


async def test_f06_a_build_of_the_old_factory_in_flight_is_not_cached_after_a_swap() -> None:
    gate = asyncio.Event()
    old_factory, new_factory = Factory("old", gate=gate), Factory("new")
    resolver = ExecutorResolver(old_factory)
    pending = asyncio.create_task(resolver.resolve(coder()))
    await until(lambda: len(old_factory.builds) == 1)
    resolver.swap_factory(new_factory)
    gate.set()
    assert (await within(pending)).factory == "old"
    assert (await resolver.resolve(coder())).factory == "new"


async def test_f06_concurrent_first_resolve_builds_one_executor() -> None:
    gate = asyncio.Event()
    factory = Factory(gate=gate)
    resolver = ExecutorResolver(factory)
    callers = [asyncio.create_task(resolver.resolve(coder())) for _ in range(8)]
    await until(lambda: len(factory.builds) >= 1)
    await until(lambda: all(not t.done() for t in callers))
    gate.set()
    executors = await within(asyncio.gather(*callers))
    assert len(factory.builds) == 1
    assert len({id(e) for e in executors}) == 1


async def test_f06_a_cancelled_caller_does_not_cancel_the_shared_build() -> None:
    gate = asyncio.Event()
    factory = Factory(gate=gate)
    resolver = ExecutorResolver(factory)
    first, second = (asyncio.create_task(resolver.resolve(coder())) for _ in range(2))
    await until(lambda: len(factory.builds) == 1)
    first.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await within(first)
    executor = await within(second)
    assert await resolver.resolve(coder()) is executor and len(factory.builds) == 1


async def test_f06_a_failed_build_is_not_cached() -> None:
    gate = asyncio.Event()
    factory = Factory(gate=gate, fail_first=1)
    resolver = ExecutorResolver(factory)
    callers = [asyncio.create_task(resolver.resolve(coder())) for _ in range(3)]
    await until(lambda: len(factory.builds) == 1)
    gate.set()
    results = await within(asyncio.gather(*callers, return_exceptions=True))
    assert [str(r) for r in results] == ["build 1 of coder failed"] * 3
    assert resolver.cached() == 0

    executor = await resolver.resolve(coder())  # the next resolve builds again
    assert await executor.call("exec") == "coder ran exec"
    assert len(factory.builds) == 2 and await resolver.resolve(coder()) is executor


async def test_f06_invalidate_drops_every_version_of_the_role() -> None:
    resolver = ExecutorResolver(Factory())
    kept = await resolver.resolve(coder(name="reviewer"))
    a, b = await resolver.resolve(coder()), await resolver.resolve(coder(max_concurrent=1))
    assert sorted(map(id, resolver.invalidate("coder"))) == sorted(map(id, (a, b)))
    assert await resolver.resolve(coder()) is not a
    assert await resolver.resolve(coder(name="reviewer")) is kept


def test_f06_a_role_config_refuses_what_it_cannot_digest() -> None:
    with pytest.raises(ValueError, match="max_concurrent"):
        coder(max_concurrent=0)
    with pytest.raises(ValueError, match="'allow' or 'deny'"):
        coder(permissions={"exec": "maybe"})
    with pytest.raises(ValueError, match="not a JSON value"):
        coder(limits={"deadline": object()})
    limits = {"nested": {"n": 1}}
    cfg = coder(limits=limits)
    limits["nested"]["n"] = 2  # the caller's dict, not the configuration
    assert cfg.limits == {"nested": {"n": 1}}
    assert role_digest(cfg) == role_digest(coder(limits={"nested": {"n": 1}}))


# -- the role's cap ---------------------------------------------------------------------------------


class Holder:
    """A task holding one slot of ``cfg``'s role until released; records the peak in flight."""

    peak = 0

    def __init__(self, limiter: RoleLimiter, cfg: RoleConfig, log: list[str], tag: str) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.task = asyncio.create_task(self._hold(limiter, cfg, log, tag))

    async def _hold(self, limiter: RoleLimiter, cfg: RoleConfig, log: list[str], tag: str) -> None:
        async with limiter.slot(cfg):
            Holder.peak = max(Holder.peak, limiter.in_flight(cfg.name))
            log.append(tag)
            self.entered.set()
            await self.release.wait()

    async def finish(self) -> None:
        self.release.set()
        await within(self.task)


async def test_f06_old_in_flight_version_never_lets_the_new_one_exceed_the_cap() -> None:
    limiter, log = RoleLimiter(), list[str]()
    old = coder(max_concurrent=3)
    holders = [Holder(limiter, old, log, f"old{i}") for i in range(2)]
    await within(asyncio.gather(*(h.entered.wait() for h in holders)))

    new = coder(max_concurrent=1, permissions={"exec": "deny"})  # a new version, cap lowered
    newcomer = Holder(limiter, new, log, "new")
    await until(lambda: limiter.waiting("coder") == 1)
    assert limiter.cap("coder") == 1 and limiter.in_flight("coder") == 2

    await holders[0].finish()
    assert limiter.in_flight("coder") == 1 and limiter.waiting("coder") == 1  # 1 is not < 1
    assert not newcomer.entered.is_set()

    await holders[1].finish()
    await within(newcomer.entered.wait())
    assert limiter.in_flight("coder") == 1 and log == ["old0", "old1", "new"]
    await newcomer.finish()
    assert limiter.in_flight("coder") == 0


async def test_f06_an_old_version_coming_back_does_not_raise_the_cap() -> None:
    limiter, log = RoleLimiter(), list[str]()
    Holder.peak = 0
    first = Holder(limiter, coder(max_concurrent=3), log, "old")
    await within(first.entered.wait())
    second = Holder(limiter, coder(max_concurrent=1), log, "new")  # cap now 1, waits
    late = Holder(limiter, coder(max_concurrent=3), log, "old-again")  # an old run's next call
    await until(lambda: limiter.waiting("coder") == 2)
    assert limiter.cap("coder") == 1
    await first.finish()
    await within(second.entered.wait())
    assert not late.entered.is_set()
    await second.finish()
    await late.finish()
    assert Holder.peak == 1 and log == ["old", "new", "old-again"]

    limiter.update(coder(max_concurrent=3))  # declared current again: its cap applies
    assert limiter.cap("coder") == 3


async def test_f06_a_raised_cap_admits_waiters_at_once_in_order() -> None:
    limiter, log = RoleLimiter(), list[str]()
    one = coder(max_concurrent=1)
    holder = Holder(limiter, one, log, "h")
    await within(holder.entered.wait())
    waiters = [Holder(limiter, one, log, f"w{i}") for i in range(3)]
    await until(lambda: limiter.waiting("coder") == 3)

    limiter.update(coder(max_concurrent=3))
    await within(asyncio.gather(waiters[0].entered.wait(), waiters[1].entered.wait()))
    assert limiter.in_flight("coder") == 3 and limiter.waiting("coder") == 1
    await holder.finish()
    await within(waiters[2].entered.wait())
    assert log == ["h", "w0", "w1", "w2"]
    for w in waiters:
        await w.finish()


async def test_f06_waiters_are_admitted_first_come_first_served_and_cancellation_is_safe() -> None:
    limiter, log = RoleLimiter(), list[str]()
    cfg = coder(max_concurrent=1)
    async with limiter.slot(cfg):
        a, b, c, d = (Holder(limiter, cfg, log, tag) for tag in "abcd")
        await until(lambda: limiter.waiting("coder") == 4)
        b.task.cancel()  # cancelled while waiting: takes nothing, gives nothing up
        with pytest.raises(asyncio.CancelledError):
            await within(b.task)
        assert limiter.waiting("coder") == 3
    a.task.cancel()  # leaving the block granted a's slot; a is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await within(a.task)
    await within(c.entered.wait())  # a's slot went to the next in line
    assert limiter.in_flight("coder") == 1 and not d.entered.is_set()
    await c.finish()
    await d.finish()
    assert log == ["c", "d"] and limiter.in_flight("coder") == 0 and limiter.waiting("coder") == 0
