"""The file-wide sections: ``workspace:``, ``sandbox:``, ``recovery:``, ``telemetry:``,
``projects:`` and ``workers:`` — one model each, with its defaults and what overrides them.

Owns: those sections' models and the checks each makes alone. Does not own: the agents and
their models (``agents``, ``connections``), the other sections (``mcp``, ``a2a``, ``skills``,
``intents``, ``commands``, ``workflows``), nor building a sandbox policy or a worker from them
(``agentloom.assembly``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from agentloom.config._base import _ENV, _env_name, _Strict, _url

__all__ = [
    "ProjectConfig",
    "ProjectConnectionConfig",
    "RecoveryConfig",
    "SandboxBackendName",
    "SandboxConfig",
    "TelemetryConfig",
    "WorkersConfig",
    "WorkspaceConfig",
]


class WorkspaceConfig(_Strict):
    """``workspace:`` — the shared root of run folders, an optional folder every run binds
    (``--workdir`` overrides it), and whether a run's own folder is kept after it ends."""

    root: str | None = Field(default=None, min_length=1)
    """The folder run folders live in (relative to the config file's folder). Default: one per
    project outside it, ``<state home>/agentloom/workspaces/<folder>-<digest>``
    (``folders.default_workspace_root``), so nothing given the project folder reaches a run's."""
    bind: str | None = Field(default=None, min_length=1)
    """An existing folder every run works in (relative to the config file's folder);
    ``agentloom run --workdir`` overrides it."""
    keep: StrictBool = False
    """Keep each run's own folder after it ends (its path is printed)."""


SandboxBackendName = Literal["auto", "bubblewrap", "landlock", "none"]
"""``sandbox.backend``; the same names as ``agentloom.sandbox.ports.SandboxBackend``."""


class SandboxConfig(_Strict):
    """How ``exec`` runs commands (docs/config.md#sandbox); the runtime builds the sandbox's
    ``EnvironmentPolicy`` from it (``assembly.environment_policy``).

    ``backend``: ``auto`` (default) is bubblewrap, else Landlock, else ``exec`` is refused
    (``SANDBOX_UNAVAILABLE``); ``none`` runs commands unconfined and must be written.
    ``runtime_from_config(sandbox_backend=…)`` overrides it. ``env`` is the complete
    environment a command sees besides ``PATH`` (default: empty, nothing from the host);
    ``egress`` (default false) lets commands reach the network; ``allow_shell`` (default
    false) lets the model send ``shell_script``; ``timeout_s`` (default 10) is a command's
    timeout when the call sets none. ``max_processes`` (512), ``max_file_bytes`` (1 GiB) and
    ``max_cpu_s`` (3600) are the rlimits set on every command (not with ``backend: none``);
    ``max_work_bytes`` (4 GiB) caps a run's own work folder while a command runs (a folder of
    the user's, ``--workdir``, is not capped).
    """

    removed_keys: ClassVar[Mapping[str, str]] = {
        "allow_unsandboxed": "was removed; write `sandbox: {backend: none}` to run commands "
        "unconfined (not recommended), or leave it out to use bubblewrap / Landlock",
    }

    backend: SandboxBackendName = "auto"
    env: dict[str, str] = Field(default_factory=dict)
    egress: StrictBool = False
    allow_shell: StrictBool = False
    timeout_s: StrictFloat = Field(default=10.0, gt=0)
    max_processes: StrictInt = Field(default=512, ge=1)
    max_file_bytes: StrictInt = Field(default=1 << 30, ge=1)
    max_cpu_s: StrictInt = Field(default=3600, ge=1)
    max_work_bytes: StrictInt = Field(default=4 << 30, ge=4096)

    @field_validator("env")
    @classmethod
    def _variables(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not _ENV.match(name):
                raise ValueError(f"{name!r} is not an environment variable name (letters, digits "
                                 "and '_', not starting with a digit); rename it")
            if "\0" in value:
                raise ValueError(f"the value of {name} holds a NUL character; remove it")
        return env


class RecoveryConfig(_Strict):
    """How often a run the runtime keeps failing on is tried again (``agent.failures``)."""

    max_failures: StrictInt = Field(default=3, ge=1)
    """Identical failures in a row after which the run ends ``failed``."""
    backoff_s: StrictFloat = Field(default=5.0, ge=0)
    """A worker's wait before the next try, doubled after each failure..."""
    max_backoff_s: StrictFloat = Field(default=600.0, ge=0)
    """... up to this."""

    @model_validator(mode="after")
    def _ordered(self) -> RecoveryConfig:
        if self.max_backoff_s < self.backoff_s:
            raise ValueError("max_backoff_s must be at least backoff_s")
        return self


class TelemetryConfig(_Strict):
    """``telemetry:`` — OpenTelemetry traces of runs (docs/telemetry.md; the ``agentloom[otel]``
    extra). Not part of the release."""

    enabled: StrictBool | None = None
    """``true``: trace every run; ``false``: never; unset: trace when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set."""


class ProjectConnectionConfig(_Strict):
    """``projects.<p>.connections.<c>`` — what a project's runs change of connection ``c``
    (003 F13): another endpoint, another key variable, another model id. What it leaves out is
    the connection's own; the preset and protocol stay the connection's."""

    base_url: Annotated[str, AfterValidator(_url)] | None = None
    api_key_env: Annotated[str, AfterValidator(_env_name)] | None = None
    model: str | None = Field(default=None, min_length=1)
    """The model id every agent on this connection uses in the project's runs."""


class ProjectConfig(_Strict):
    """``projects.<p>:`` — settings of one project (the host's API keys name it). Not part of
    the release: a run takes its project's model route when it is queued or started, as one
    snapshot, and keeps it to its end (docs/config.md#projects)."""

    connections: dict[str, ProjectConnectionConfig] = Field(default_factory=dict)


class WorkersConfig(_Strict):
    """``workers:`` — how the runs of this configuration are shared among worker processes
    (``agentloom worker``, docs/workers.md). Not part of the release: changing it never
    keeps a run from being resumed."""

    lease_ttl_s: StrictFloat = Field(default=60.0, gt=0)
    """A holder's lease on a run; it renews it every third of this while it drives the run."""
    takeover_grace_s: StrictFloat = Field(default=30.0, ge=0)
    """After a lease expired, how long a worker waits for the old holder's revocation receipt
    (its sandbox processes are gone) before it reports the run ``suspended`` instead."""
    poll_s: StrictFloat = Field(default=5.0, gt=0)
    """An idle worker looks for work at least this often (PostgreSQL wakes it at once)."""
    max_concurrent_runs: dict[str, StrictInt] = Field(default_factory=dict)
    """Per agent: at most this many of its runs are ``running`` at once, across all workers."""

    @model_validator(mode="after")
    def _caps_positive(self) -> WorkersConfig:
        for agent, cap in self.max_concurrent_runs.items():
            if cap < 1:
                raise ValueError(f"max_concurrent_runs.{agent} must be at least 1, got {cap}")
        return self
