"""Role executors cached by the whole configuration, and a per-role concurrency cap (003 F06).

The audited library cached a role's executor by the role's *name*: a permission changed from
allow to deny kept being served by the executor built with allow, and its concurrency limiter,
keyed by the old configuration, let in-flight calls of the old version plus calls of the new one
run past the cap. Here the two identities are apart::

    RoleConfig ──role_digest──▶ ExecutorResolver   cache key (factory generation, name, digest)
        │
        └──────── name ───────▶ RoleLimiter        one count per role name, every version

- ``ExecutorResolver.resolve`` builds (through the factory) one executor per configuration
  digest and factory generation. Any change — model, tools, permissions, limits, cap, extras —
  is a new digest, so the next call gets an executor built with it; ``swap_factory`` starts a
  new generation, so nothing built by the old factory is handed out again. Concurrent first
  resolves of one key share one build; a failed build is not kept.
- ``RoleLimiter.slot`` counts holders per role *name*, whatever version they hold, against the
  role's current cap: lowering the cap while old holders run makes new callers wait until the
  in-flight count is below the new cap. Waiters are admitted first come, first served.

Owns: ``RoleConfig`` and its digest, the executor cache, the per-role slots. Does not own: what
an executor is or does (the factory's business), closing executors it drops (``invalidate``
hands them back), withdrawing a permission from a call already running — a host that must
revoke at once checks before each tool call. Pure asyncio: no store, no I/O.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, get_args, overload

from agentloom.canonical import sorted_json
from agentloom.catalog import freeze_json
from agentloom.errors import CatalogError

if TYPE_CHECKING:
    from agentloom.agent.spec import AgentSpec

__all__ = ["ExecutorFactory", "ExecutorResolver", "Permission", "RoleConfig", "RoleLimiter",
           "role_digest", "role_executor"]

Permission: TypeAlias = Literal["allow", "deny"]

E = TypeVar("E")
SKILLS_EXTRA = "skills"  # the key of an agent's bound Skills in its spec's ``extras``

ExecutorFactory: TypeAlias = Callable[["RoleConfig"], "E | Awaitable[E]"]
"""Builds one role's executor from its configuration, synchronously or as an awaitable."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleConfig:
    """Everything an executor of one role is built from; ``role_digest`` covers all of it.

    ``model`` is the model's identity (``RoleConfig.of_agent`` takes the release id's);
    ``tools`` the capability keys the role offers; ``permissions`` ``allow`` / ``deny`` per
    capability key (a tool without an entry is allowed, a key not in ``tools`` never is);
    ``limits`` and ``extras`` any further JSON settings; ``max_concurrent`` the role's cap on
    calls in flight (``RoleLimiter``). Mappings are stored as deep read-only copies.

    Raises:
        ValueError: ``max_concurrent`` below 1, a permission other than allow / deny, or a
            value in ``limits`` / ``extras`` / ``permissions`` that is not plain JSON.
    """

    name: str
    model: str
    tools: tuple[str, ...] = ()
    permissions: Mapping[str, Permission] = field(default_factory=dict)
    limits: Mapping[str, Any] = field(default_factory=dict)
    max_concurrent: int = 1
    extras: Mapping[str, Any] = field(default_factory=dict)
    digest: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = f"role {self.name!r}"
        if isinstance(self.max_concurrent, bool) or not isinstance(self.max_concurrent, int) \
                or self.max_concurrent < 1:
            raise ValueError(f"{where}: max_concurrent must be an integer of at least 1, "
                             f"not {self.max_concurrent!r}")
        bad = {k: v for k, v in self.permissions.items() if v not in get_args(Permission)}
        if bad:
            raise ValueError(f"{where}: permissions must be 'allow' or 'deny', got {bad!r}")
        object.__setattr__(self, "tools", tuple(self.tools))
        for name in ("permissions", "limits", "extras"):
            try:
                frozen = freeze_json(getattr(self, name), where=f"{where} {name}")
            except CatalogError as exc:
                raise ValueError(exc.error.message) from None
            object.__setattr__(self, name, frozen)
        described = {"name": self.name, "model": self.model, "tools": list(self.tools),
                     "permissions": self.permissions, "limits": self.limits,
                     "max_concurrent": self.max_concurrent, "extras": self.extras}
        object.__setattr__(self, "digest", hashlib.sha256(sorted_json(described).encode()).hexdigest())

    def allows(self, capability: str) -> bool:
        """Whether this configuration lets the role call ``capability``."""
        return capability in self.tools and self.permissions.get(capability, "allow") == "allow"

    @classmethod
    def of_agent(cls, spec: AgentSpec, *, max_concurrent: int = 1,
                 permissions: Mapping[str, Permission] | None = None,
                 extras: Mapping[str, Any] | None = None) -> RoleConfig:
        """The role configuration of an agent: the model identity, tool keys (delegations
        included) and retry / limits settings the release id is made of, plus what else shapes
        its executor (instructions, executors, output, think and output-limit settings, bound
        skills) under ``extras``; ``extras`` given are added to those."""
        from agentloom.agent.release import model_identity  # the release id's, not a second one

        described: dict[str, Any] = {"instructions": spec.instructions,
                                     "description": spec.description,
                                     "executors": list(spec.executors)}
        if spec.output is not None:
            described["output"] = spec.output.to_dict()
        if spec.think is not None:
            described["think"] = {"enabled": spec.think.enabled, "effort": spec.think.effort}
        if spec.max_output_tokens is not None:
            described["max_output_tokens"] = spec.max_output_tokens
        bound = spec.extras.get(SKILLS_EXTRA)
        if bound:
            described["skills"] = dict(bound)
        return cls(name=spec.name, model=model_identity(spec.model), tools=tuple(spec.tool_keys()),
                   permissions=dict(permissions or {}), limits=spec.policy_settings(),
                   max_concurrent=max_concurrent, extras={**described, **(extras or {})})


def role_digest(cfg: RoleConfig) -> str:
    """The SHA-256 of the whole configuration's canonical JSON (``sorted_json``)."""
    return cfg.digest


_Key: TypeAlias = tuple[int, str, str]  # (factory generation, role name, role digest)


class ExecutorResolver(Generic[E]):
    """One executor per (factory generation, role configuration digest), built on first use."""

    @overload
    def __init__(self, factory: Callable[[RoleConfig], Awaitable[E]]) -> None: ...
    @overload
    def __init__(self, factory: Callable[[RoleConfig], E]) -> None: ...

    def __init__(self, factory: ExecutorFactory[E]) -> None:
        """``factory`` builds an executor from a ``RoleConfig`` (an async factory's awaited
        result is the executor)."""
        self._factory: ExecutorFactory[E] = factory
        self._generation = 0
        self._built: dict[_Key, E] = {}
        self._building: dict[_Key, asyncio.Task[E]] = {}

    @property
    def generation(self) -> int:
        """How many times the factory was swapped."""
        return self._generation

    async def resolve(self, cfg: RoleConfig) -> E:
        """The executor built for exactly ``cfg`` by the current factory.

        Callers that ask for a key being built wait for that one build (a caller cancelled
        while waiting does not cancel it). If the build fails every one of them gets its error
        and nothing is kept: the next ``resolve`` builds again."""
        key = (self._generation, cfg.name, role_digest(cfg))
        if key in self._built:
            return self._built[key]
        task = self._building.get(key)
        if task is None:
            task = asyncio.ensure_future(self._build(self._factory, cfg))
            self._building[key] = task
            task.add_done_callback(lambda t: self._settle(key, t))
        return await asyncio.shield(task)

    @staticmethod
    async def _build(factory: ExecutorFactory[E], cfg: RoleConfig) -> E:
        made = factory(cfg)
        if inspect.isawaitable(made):
            return await made
        return made

    def _settle(self, key: _Key, task: asyncio.Task[E]) -> None:
        if self._building.get(key) is not task:  # dropped by swap_factory / invalidate meanwhile
            if not task.cancelled():
                task.exception()  # retrieved: its waiters have it
            return
        del self._building[key]
        if not task.cancelled() and task.exception() is None:
            self._built[key] = task.result()

    def swap_factory(self, factory: ExecutorFactory[E]) -> list[E]:
        """Build with ``factory`` from now on; returns the executors of the old factory, which
        are never handed out again (a build still running finishes for its waiters only)."""
        self._factory = factory
        self._generation += 1
        dropped = list(self._built.values())
        self._built.clear()
        self._building.clear()
        return dropped

    def invalidate(self, name: str) -> list[E]:
        """Forget every executor of role ``name`` (every version); returns them."""
        dropped = [e for k, e in self._built.items() if k[1] == name]
        self._built = {k: e for k, e in self._built.items() if k[1] != name}
        self._building = {k: t for k, t in self._building.items() if k[1] != name}
        return dropped

    def cached(self) -> int:
        """How many executors are kept."""
        return len(self._built)


@dataclass(slots=True)
class _Role:
    cap: int
    digests: set[str]
    in_flight: int = 0
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)


class RoleLimiter:
    """At most the current cap of a role's calls in flight, counted by role *name*.

    The current cap is the ``max_concurrent`` of the newest version of the role: a version is
    newer when ``slot`` first sees its digest, or when it is declared with ``update`` (which
    also brings back an older version). Holders of every version count against it."""

    def __init__(self) -> None:
        self._roles: dict[str, _Role] = {}

    def update(self, cfg: RoleConfig) -> None:
        """Make ``cfg`` the current version of its role; a higher cap admits waiters now."""
        role = self._roles.get(cfg.name)
        if role is None:
            self._roles[cfg.name] = _Role(cfg.max_concurrent, {cfg.digest})
            return
        role.digests.add(cfg.digest)
        role.cap = cfg.max_concurrent
        self._admit(role)

    def _role(self, cfg: RoleConfig) -> _Role:
        role = self._roles.get(cfg.name)
        if role is None or cfg.digest not in role.digests:
            self.update(cfg)
            role = self._roles[cfg.name]
        return role

    @asynccontextmanager
    async def slot(self, cfg: RoleConfig) -> AsyncIterator[None]:
        """Hold one of the role's slots for the block; waits (first come, first served) while
        the role's in-flight count is at its current cap. Cancellation while waiting gives
        nothing up and takes nothing; a slot granted to a cancelled waiter goes to the next."""
        role = self._role(cfg)
        await self._acquire(role)
        try:
            yield
        finally:
            role.in_flight -= 1
            self._admit(role)

    async def _acquire(self, role: _Role) -> None:
        if not role.waiters and role.in_flight < role.cap:
            role.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        role.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: pass it on
                role.in_flight -= 1
                self._admit(role)
            else:
                with suppress(ValueError):
                    role.waiters.remove(waiter)
            raise

    @staticmethod
    def _admit(role: _Role) -> None:
        """Grant slots to the waiters at the head of the queue while the role is under its cap
        (the count is taken for them here, so nobody can slip in between)."""
        while role.waiters and role.in_flight < role.cap:
            waiter = role.waiters.popleft()
            if not waiter.done():
                role.in_flight += 1
                waiter.set_result(None)

    def in_flight(self, name: str) -> int:
        """Slots of role ``name`` held now, every version together."""
        role = self._roles.get(name)
        return role.in_flight if role else 0

    def waiting(self, name: str) -> int:
        """Callers waiting for a slot of role ``name``."""
        role = self._roles.get(name)
        return len(role.waiters) if role else 0

    def cap(self, name: str) -> int | None:
        """The current cap of role ``name`` (None: never seen)."""
        role = self._roles.get(name)
        return role.cap if role else None


@asynccontextmanager
async def role_executor(resolver: ExecutorResolver[E], limiter: RoleLimiter,
                        cfg: RoleConfig) -> AsyncIterator[E]:
    """A slot of ``cfg``'s role, then the executor built for exactly ``cfg``, for one call."""
    async with limiter.slot(cfg):
        yield await resolver.resolve(cfg)
