"""``RuntimeOptions``: everything a ``Runtime`` is built with besides its agents, as one value.

::

    options = RuntimeOptions(store="sqlite:///.agentloom/agentloom.db", keep_workspaces=True)
    rt = Runtime(agents, options=options)                # the full form
    rt = Runtime(agents, store="memory://")              # keywords: shorthand for the same
    rt = Runtime(agents, options=options, workdir=".")   # a keyword overrides that field

Every field says its default and what it does; the runtime's collaborators (``agent.starts``,
``agent.claims``, ``agent.driver``, ``agent.endings``, ``agent.control``) read the settings they
need from the one object. ``recovery`` and ``workers`` are never ``None`` here: a keyword given
as ``None`` means their default.

Owns: the settings and their defaults. Does not own: what a run does with them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final

from agentloom.agent.failures import RecoveryPolicy
from agentloom.agent.leases import WorkerSettings
from agentloom.agent.programs import RunProgram
from agentloom.agent.routes import ModelRoutes
from agentloom.hooks import HookLike, HookRunners
from agentloom.sandbox import EnvironmentPolicy
from agentloom.sandbox.ports import SandboxBackend
from agentloom.store import Store

__all__ = ["UNSET", "RuntimeOptions", "Unset", "with_keywords"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeOptions:
    """How a ``Runtime`` runs its agents: store, hooks, sandbox, workspaces, queue, telemetry."""

    store: Store | str = "sqlite:///.agentloom/agentloom.db"
    """A ``Store`` or a store URL (docs/store.md)."""
    hooks: Sequence[HookLike] = ()
    """Run in the order given: ``HookSpec``s (their ``handler.ref`` functions imported, or
    found in ``hook_functions``), functions decorated with ``@agentloom.hook``, or plain
    callables (a ``before`` hook on every tool call)."""
    hook_functions: Mapping[str, Callable[..., Any]] | None = None
    """A ``HookSpec``'s ``handler.ref`` -> the callable it names (so it need not be
    importable)."""
    workspace_root: Path | str | None = None
    """Where run workspaces are made (default: the kernel's, ``.agentloom/workspaces``)."""
    sandbox_backend: SandboxBackend = "auto"
    """The sandbox ``exec`` runs in (``auto``: bubblewrap, else Landlock, else ``exec`` fails
    with ``SANDBOX_UNAVAILABLE``; ``none``: unconfined); recorded on every run."""
    sandbox_policy: EnvironmentPolicy | None = None
    """What commands may see and use (default ``EnvironmentPolicy()``: empty environment, no
    network, no shell)."""
    space_id: str = "default"
    """The space every owner of this runtime's runs belongs to."""
    recovery: RecoveryPolicy = field(default_factory=RecoveryPolicy)
    """How often a run the runtime keeps failing on is tried again (``agent.failures``;
    default: ended ``failed`` after 3 identical failures)."""
    config_source: Mapping[str, Any] | None = None
    """``Config.source()`` (path, digest, snapshot), recorded on every run it starts, so the
    run can be resumed from its file by id."""
    workdir: Path | str | None = None
    """The folder every run works in by default (see ``Runtime.start``)."""
    keep_workspaces: bool = False
    """A run's own folder is kept after it ends (its path is ``RunResult.workspace``)."""
    workers: WorkerSettings = field(default_factory=WorkerSettings)
    """The lease TTL, takeover grace and per-agent caps of the run queue (``agent.worker``)."""
    tracer_provider: Any = None
    """An OpenTelemetry SDK provider: every run is traced with it."""
    telemetry: bool | None = None
    """Without a ``tracer_provider``: turns tracing on (``telemetry.enabled``; ``None``: on when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; ``agentloom.telemetry``)."""
    model_routes: ModelRoutes | None = None
    """Where the runs of a principal's project send their model calls (``agent.routes``; 003
    F13) — a run records its route when it is queued or started."""
    programs: Sequence[RunProgram] = ()
    """Runs that are not one agent's loop — workflows (``agentloom.squad``, issue 20), started
    with ``start(task, agent=program.name)`` (``agent.programs``)."""
    hook_runners: HookRunners | None = None
    """A runner by hook handler kind, added to (or replacing) the registered kinds' runners
    (docs/hooks.md, "Adding a handler kind")."""


class Unset(enum.Enum):
    """The default of ``Runtime``'s keywords: not given, so ``options`` (or its default) holds."""

    UNSET = "UNSET"


UNSET: Final = Unset.UNSET

_NONE_MEANS_DEFAULT: Mapping[str, Callable[[], Any]] = {
    "recovery": RecoveryPolicy, "workers": WorkerSettings}


def with_keywords(options: RuntimeOptions | None, keywords: Mapping[str, Any]) -> RuntimeOptions:
    """``options`` (default ``RuntimeOptions()``) with every field ``keywords`` gives (a value
    that is not ``UNSET``) replaced; ``recovery`` / ``workers`` given as ``None`` are their
    defaults, and an empty ``config_source`` is none."""
    names = {f.name for f in fields(RuntimeOptions)}
    given = {k: v for k, v in keywords.items() if k in names and v is not UNSET}
    for name, default in _NONE_MEANS_DEFAULT.items():
        if name in given and given[name] is None:
            given[name] = default()
    merged = replace(options or RuntimeOptions(), **given)
    source = merged.config_source
    return replace(merged, config_source=dict(source) if source else None)
