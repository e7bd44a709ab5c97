"""Configuration models, format version 1: what a config file may say, checked as a whole.

Every model is frozen and rejects unknown keys. ``Config`` is validated in two steps: the
shape of every key (pydantic), then the checks that look at more than one key — a model's
connection exists, executors, script files exist, hook ids. Either step fails with one
``ConfigError`` listing each problem as ``key.path: problem`` (see ``_problems``). Relative
paths are read from ``Config.base_dir``, the config file's folder.

Owns: the whole file (``Config``: its sections, its base folder and source) and this module's
names, the import path of every section's model. The sections live beside it, one module each:
``connections`` (connections, an agent's model), ``agents``, ``hooks``, ``settings`` (workspace,
sandbox, recovery, telemetry, projects, workers), ``mcp``, ``a2a``, ``skills``, ``intents``,
``commands``, ``workflows``; the checks across keys in ``_cross``. Does not own: reading files
(``loader``); the checks that need the provider presets or the script parser, and turning a
configuration into runtime parts — both at build time, in ``agentloom.assembly`` (config is
core: it imports nothing above it); compiling a release.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationInfo, model_validator

from agentloom.config._base import _ENV as _ENV
from agentloom.config._base import _REF as _REF
from agentloom.config._base import NAME, NAME_RULE, _Strict
from agentloom.config._cross import cross_problems
from agentloom.config._problems import config_error, did_you_mean
from agentloom.config.a2a import A2aAgentConfig
from agentloom.config.agents import BUILTIN_TOOLS, AgentConfig, LimitsConfig, OutputConfig, RetryConfig
from agentloom.config.commands import CommandConfig
from agentloom.config.connections import MODEL_TAGS as MODEL_TAGS
from agentloom.config.connections import THINK_SETTINGS as THINK_SETTINGS
from agentloom.config.connections import (
    ConnectionConfig,
    ConnectionModelChoice,
    ModelChoice,
    ScriptModelChoice,
    TestModelChoice,
)
from agentloom.config.connections import ThinkSetting as ThinkSetting
from agentloom.config.handler_kinds import (
    AnyHandlerConfig,
    CommandHandlerConfig,
    HandlerConfig,
    HttpHandlerConfig,
    McpHandlerConfig,
)
from agentloom.config.hooks import AgentHookEntry as AgentHookEntry
from agentloom.config.hooks import HookConfig, HookMatchConfig, default_hook_id
from agentloom.config.intents import IntentConfig
from agentloom.config.mcp import McpServerConfig
from agentloom.config.settings import (
    ProjectConfig,
    ProjectConnectionConfig,
    RecoveryConfig,
    SandboxBackendName,
    SandboxConfig,
    WorkspaceConfig,
)
from agentloom.config.settings import TelemetryConfig as TelemetryConfig
from agentloom.config.settings import WorkersConfig as WorkersConfig
from agentloom.config.skills import SkillSourceConfig
from agentloom.config.workflows import WorkflowConfig, workflow_names
from agentloom.errors import ConfigError
from agentloom.folders import default_workspace_root

__all__ = [
    "BUILTIN_TOOLS",
    "CONFIG_VERSION",
    "NAME",
    "NAME_RULE",
    "AgentConfig",
    "AnyHandlerConfig",
    "CommandHandlerConfig",
    "Config",
    "ConnectionConfig",
    "ConnectionModelChoice",
    "HandlerConfig",
    "HookConfig",
    "HookMatchConfig",
    "HttpHandlerConfig",
    "LimitsConfig",
    "McpHandlerConfig",
    "ModelChoice",
    "OutputConfig",
    "ProjectConfig",
    "ProjectConnectionConfig",
    "RecoveryConfig",
    "RetryConfig",
    "SandboxBackendName",
    "SandboxConfig",
    "ScriptModelChoice",
    "TestModelChoice",
    "WorkspaceConfig",
    "default_hook_id",
]

CONFIG_VERSION = 1
"""Config file format. 1: the layout documented in docs/config.md."""

STORE_FILE = ".agentloom/agentloom.db"

# a workflow's ``hooks`` are HookConfigs, which config.workflows cannot import (a cycle)
WorkflowConfig.model_rebuild(_types_namespace={"HookConfig": HookConfig})


class Config(_Strict):
    """A whole configuration file (format 1), validated.

    ``base_dir`` is the absolute folder relative paths are read from: the config file's folder
    (``context={"base_dir": …, "source": …}`` when validating directly; default: the current
    directory).

    Raises:
        ConfigError: from ``model_validate`` when a cross-check fails (the shape errors are a
            pydantic ``ValidationError``; ``loader.parse_config`` turns both into ConfigError).
    """

    version: Literal[1]
    connections: dict[str, ConnectionConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(min_length=1)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    recovery: RecoveryConfig = Field(default_factory=RecoveryConfig)
    workers: WorkersConfig = Field(default_factory=WorkersConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers whose tools agents list as ``mcp.<server>.<tool>`` and ``kind: mcp`` hooks call
    (docs/mcp.md, docs/hooks.md)."""
    skills: tuple[SkillSourceConfig, ...] = ()
    """Skill sources: folders, archives, pinned git commits (docs/skills.md)."""
    a2a_agents: dict[str, A2aAgentConfig] = Field(default_factory=dict)
    """Remote A2A 1.0 agents that agents list as ``a2a.<name>`` (docs/a2a.md)."""
    intents: dict[str, IntentConfig] = Field(default_factory=dict)
    """What a user's message may be recognised as, each mapped to a command (docs/intent.md)."""
    commands: dict[str, CommandConfig] = Field(default_factory=dict)
    """Actions an intent maps to, with their params, risk and handler (docs/commands.md)."""
    projects: dict[str, ProjectConfig] = Field(default_factory=dict)
    """Per-project overrides of connections (docs/config.md#projects)."""
    workflows: Annotated[dict[str, WorkflowConfig], BeforeValidator(workflow_names)] = \
        Field(default_factory=dict)
    """Durable graphs of agent, capability and wait nodes (docs/workflows.md)."""

    _base_dir: Path = PrivateAttr(default_factory=lambda: Path.cwd().resolve())
    _origin: str = PrivateAttr(default="<config>")
    _source_path: Path | None = PrivateAttr(default=None)
    _source_digest: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _cross_check(self, info: ValidationInfo) -> Config:
        context = info.context if isinstance(info.context, Mapping) else {}
        if context.get("base_dir") is not None:
            self._base_dir = Path(context["base_dir"]).resolve()
        self._origin = str(context.get("source", "<config>"))
        if context.get("source_path") is not None:
            self._source_path = Path(context["source_path"])
            self._source_digest = context.get("source_digest")
        problems = cross_problems(self)
        if problems:
            raise config_error(self._origin, problems)
        return self

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    @property
    def origin(self) -> str:
        """What heads this configuration's error messages: the file as given to
        ``load_config``, or ``parse_config``'s ``source`` (default ``<config>``)."""
        return self._origin

    def source(self) -> dict[str, Any] | None:
        """What a run records of the file this configuration was loaded from (``None`` when
        it was not loaded from a file): its absolute ``path``, the ``digest`` (sha256) of its
        bytes and a ``snapshot`` of its validated values, so ``runs resume RUN_ID`` needs no
        ``--config`` and ``RELEASE_CHANGED`` can name the keys that changed."""
        if self._source_path is None:
            return None
        return {"path": str(self._source_path), "digest": self._source_digest,
                "snapshot": self.model_dump(mode="json")}

    def resolve_path(self, path: str | Path) -> Path:
        """``path`` as an absolute path; a relative one is read from ``base_dir``."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self._base_dir / p

    def workspace_root(self) -> Path:
        """The shared workspace root: ``workspace.root`` resolved against ``base_dir``, else
        ``folders.default_workspace_root(base_dir)`` (outside the project)."""
        if self.workspace.root is None:
            return default_workspace_root(self._base_dir)
        return self.resolve_path(self.workspace.root)

    def default_store_url(self) -> str:
        """``sqlite:///<base_dir>/.agentloom/agentloom.db`` (an absolute path, so the URL
        has four slashes); ``--store`` / ``AGENTLOOM_STORE`` override it."""
        return f"sqlite:///{self._base_dir / STORE_FILE}"

    def workflow_name(self, name: str) -> str:
        """The run name of workflow ``name`` (``workflow:<name>``: what its runs record as
        their agent).

        Raises:
            ConfigError: no such workflow (the message lists the defined ones).
        """
        if name not in self.workflows:
            raise ConfigError(
                f"no workflow named {name!r}; {did_you_mean(name, list(self.workflows))}"
                f"defined: {', '.join(self.workflows) or 'none (workflows: is empty)'}",
                code="CONFIG_WORKFLOW_UNKNOWN")
        return f"workflow:{name}"

    def agent_name(self, name: str | None = None) -> str:
        """``name`` checked (a ``ConfigError`` listing the agents when unknown), or by default
        ``main`` when defined, else the first agent: what ``run`` and ``submit`` drive."""
        if name is not None:
            self.agent(name)
            return name
        return "main" if "main" in self.agents else next(iter(self.agents))

    def agent(self, name: str) -> AgentConfig:
        """The agent called ``name``.

        Raises:
            ConfigError: no such agent (the message lists the defined ones).
        """
        try:
            return self.agents[name]
        except KeyError:
            raise ConfigError(
                f"no agent named {name!r}; {did_you_mean(name, list(self.agents))}"
                f"defined: {', '.join(self.agents)}", code="CONFIG_AGENT_UNKNOWN") from None
