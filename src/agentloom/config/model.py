"""Configuration models, format version 1: what a config file may say, checked as a whole.

Every model is frozen and rejects unknown keys. ``Config`` is validated in two steps: the
shape of every key (pydantic), then the checks that look at more than one key — a model's
connection exists, executors, script files exist, hook ids. Either step fails with one
``ConfigError`` listing each problem as ``key.path: problem`` (see ``_problems``). Relative
paths are read from ``Config.base_dir``, the config file's folder.

Owns: what a configuration may say, checked from the configuration alone. Does not own:
reading files (``loader``); the checks that need the provider presets or the script parser,
and turning a configuration into runtime parts — both at build time, in
``agentloom.assembly`` (config is core: it imports nothing above it); compiling a
release.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentloom.catalog import compile_schema
from agentloom.config._entries import a2a_agent_problem, mcp_server_problem
from agentloom.config._problems import Problem, config_error, did_you_mean, key_path, shown
from agentloom.config.a2a import A2aAgentConfig, a2a_entry_agent
from agentloom.config.commands import (
    CommandConfig,
    command_entry,
    command_problems,
    command_tool_problems,
)
from agentloom.config.handler_kinds import (
    AnyHandlerConfig,
    CommandHandlerConfig,
    HandlerConfig,
    HttpHandlerConfig,
    McpHandlerConfig,
    publish_handler_tags,
)
from agentloom.config.intents import IntentConfig, intent_problems
from agentloom.config.mcp import MCP_TAGS, McpServerConfig, mcp_entry_parts
from agentloom.config.skills import AgentSkills, SkillHooksConfig, SkillSourceConfig
from agentloom.config.workflows import WORKFLOW_TAGS, WorkflowConfig, workflow_names, workflow_problems
from agentloom.errors import CatalogError, ConfigError
from agentloom.folders import default_workspace_root
from agentloom.limits import leaves_input_room

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

BUILTIN_TOOLS: tuple[str, ...] = (
    "fs.read", "fs.write", "fs.edit", "fs.patch", "fs.list", "fs.glob", "fs.grep", "fs.mkdir",
    "fs.move", "fs.delete", "exec",
)
"""Tool names an agent may list without an import (``RunEnvironment.builtin`` serves them).
Written out here, as names only, so config imports no tool; tests/config/test_load.py pins it
equal to ``agentloom.environment.BUILTIN_TOOLS``."""

STORE_FILE = ".agentloom/agentloom.db"

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,57}$")
"""What a name under ``connections``, ``agents``, ``mcp_servers`` and ``a2a_agents`` may be."""
NAME_RULE = ("a name must start with a letter and hold only letters, digits, '_' or '-' "
             "(at most 58 characters); rename it")
_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ALWAYS_OFFERED = ("result.read",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# -- single values -------------------------------------------------------------------------------


def _env_name(value: str) -> str:
    if not _ENV.match(value):
        raise ValueError(f"must be an environment variable name such as OPENAI_API_KEY (got {value!r}); "
                         "put the key itself in that variable, never in the file")
    return value


def _url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https:// (got {value!r})")
    return value


def _tool_entry(value: str) -> str:
    if value in BUILTIN_TOOLS or _REF.match(value) or mcp_entry_parts(value) \
            or a2a_entry_agent(value) or command_entry(value):
        return value
    if value in _ALWAYS_OFFERED:
        raise ValueError(f"{value!r} is offered to every agent already; remove it")
    raise ValueError(
        f"unknown tool {value!r}; {did_you_mean(value, BUILTIN_TOOLS)}built-ins are "
        f"{', '.join(BUILTIN_TOOLS)}; an SDK tool is written 'package.module:attribute', an MCP "
        "tool 'mcp.<server>.<tool>' (or a glob such as 'mcp.git.*'), a remote A2A agent 'a2a.<name>', "
        "a command 'command.<id>'"
    )


# -- connections and models ----------------------------------------------------------------------


class ConnectionConfig(_Strict):
    """A model provider endpoint: a shipped preset, optionally another URL or key variable."""

    preset: str = Field(min_length=1)
    protocol: Literal["chat", "responses"] | None = None
    base_url: Annotated[str, AfterValidator(_url)] | None = None
    api_key_env: Annotated[str, AfterValidator(_env_name)] | None = None


ThinkSetting = Literal["on", "off", "low", "medium", "high"]
"""``model.think``: reasoning ``on`` / ``off`` (the preset's ``think_toggle``) or an effort
``low`` / ``medium`` / ``high`` (its ``think_effort``)."""
THINK_SETTINGS: tuple[str, ...] = ("on", "off", "low", "medium", "high")


def _think_setting(value: Any) -> Any:
    # YAML 1.1 reads a bare on / off (and yes / no) as a boolean
    if isinstance(value, bool):
        return "on" if value else "off"
    if not isinstance(value, str) or value not in THINK_SETTINGS:
        raise ValueError(f"must be one of {', '.join(THINK_SETTINGS)} (got {shown(value)}): on / "
                         "off switch reasoning, low / medium / high set its effort")
    return value


class ConnectionModelChoice(_Strict):
    """Model ``name`` served through connection ``connection``.

    ``think`` (default: not sent, the provider's default) and ``max_output_tokens`` (default:
    not sent) go into every request of the agent, mapped by the connection's preset; a setting
    the preset cannot send for this model is refused when the runtime is built."""

    connection: str
    name: str = Field(min_length=1)
    window: StrictInt | None = Field(default=None, ge=1)
    output_limit: StrictInt | None = Field(default=None, ge=1)
    variant: str | None = Field(default=None, min_length=1)
    think: Annotated[ThinkSetting, BeforeValidator(_think_setting)] | None = None
    max_output_tokens: StrictInt | None = Field(default=None, ge=1)


class TestModelChoice(_Strict):
    """The deterministic offline model ``test``."""

    __test__: ClassVar[bool] = False
    builtin: Literal["test"]


class ScriptModelChoice(_Strict):
    """The offline ``script`` model replaying the turns in ``path``."""

    builtin: Literal["script"]
    path: str = Field(min_length=1)


_CONNECTION_TAG, _TEST_TAG, _SCRIPT_TAG = "<connection>", "<builtin test>", "<builtin script>"
MODEL_TAGS: dict[str, type[BaseModel]] = {
    _CONNECTION_TAG: ConnectionModelChoice,
    _TEST_TAG: TestModelChoice,
    _SCRIPT_TAG: ScriptModelChoice,
    **MCP_TAGS,  # so error paths leave the mcp_servers transport tag out too
    **WORKFLOW_TAGS,  # and a workflow node's kind
}
_BUILTIN_MODELS = {"test": _TEST_TAG, "script": _SCRIPT_TAG}
_MODEL_FORMS = ("{connection: <connection name>, name: <model id>}, {builtin: test} or "
                "{builtin: script, path: <turns file>}")


def _model_tag(value: Any) -> str | None:
    if isinstance(value, Mapping):
        builtin = value.get("builtin")
        return _BUILTIN_MODELS.get(builtin) if isinstance(builtin, str) else _CONNECTION_TAG
    for tag, cls in MODEL_TAGS.items():
        if isinstance(value, cls):
            return tag
    return None


ModelChoice = Annotated[
    Annotated[ConnectionModelChoice, Tag(_CONNECTION_TAG)]
    | Annotated[TestModelChoice, Tag(_TEST_TAG)]
    | Annotated[ScriptModelChoice, Tag(_SCRIPT_TAG)],
    Discriminator(_model_tag),
]
"""A connection model, ``{builtin: test}`` or ``{builtin: script, path}``."""


# -- agents --------------------------------------------------------------------------------------


class RetryConfig(_Strict):
    """``pipeline.retry.RetryPolicy`` for the agent's calls: transport / rate-limit only."""

    enabled: StrictBool = False
    max_attempts: StrictInt = Field(default=2, ge=1)
    interval_s: StrictFloat = Field(default=2.0, ge=0)


class LimitsConfig(_Strict):
    """An agent's ``limits:`` — the run deadline, stream timeouts, tool-call batch concurrency,
    step / token / tool-error budgets. Each field's default is the one shown; nothing else
    overrides them."""

    run_deadline_s: StrictFloat = Field(default=3600.0, gt=0)
    first_output_timeout_s: StrictFloat = Field(default=60.0, gt=0)
    stream_idle_timeout_s: StrictFloat | None = Field(default=None, gt=0)
    batch_concurrency: StrictInt = Field(default=2, ge=1)
    max_steps: StrictInt = Field(default=50, ge=1)
    """The most model turns one invocation may take."""
    max_total_tokens: StrictInt | None = Field(default=None, ge=1)
    """The run tree's token quota (of the agent a run starts with)."""
    max_tool_errors: StrictInt = Field(default=3, ge=1)
    """Model turns in a row whose every tool call could not run (a tool that was not offered,
    arguments that are not a JSON object or do not match the schema) before the invocation
    ends ``TOOL_ERRORS_EXCEEDED``."""
    approval_timeout_s: StrictFloat | None = Field(default=None, gt=0)
    """How long a call a hook asked a person about (``decision: ask``) waits for the answer;
    then ``approval_default`` applies. None: it waits until answered."""
    approval_default: Literal["deny", "approve"] = "deny"
    """The answer a call gets when its ``approval_timeout_s`` passes unanswered."""


class HookMatchConfig(_Strict):
    """A hook's ``match:`` — which calls it sees, by role, capability key, purpose or (after
    hooks) result status. An absent field matches everything."""

    role: str | None = Field(default=None, min_length=1)
    capability: str | None = Field(default=None, min_length=1)
    purpose: str | None = Field(default=None, min_length=1)
    status: str | None = Field(default=None, min_length=1)


# The handler kinds (HandlerConfig, CommandHandlerConfig, HttpHandlerConfig, McpHandlerConfig and
# any registered later) and AnyHandlerConfig, their union: config.handler_kinds.
publish_handler_tags(MODEL_TAGS)  # error paths leave the handler kind's tag out too


class HookConfig(_Strict):
    """One hook. ``hook_id`` defaults to ``<agent>.hooks[<i>]``; ``match.role`` to the agent.
    ``timing`` and ``hook_id`` are the names ``HookSpec`` and the JSON output use."""

    renamed_keys: ClassVar[Mapping[str, str]] = {"at": "timing", "id": "hook_id"}

    hook_id: str | None = Field(default=None, min_length=1)
    timing: Literal["before", "after"]
    event: Literal["tool", "model"] = "tool"
    match: HookMatchConfig = Field(default_factory=HookMatchConfig)
    handler: AnyHandlerConfig
    timeout_s: StrictFloat = Field(default=10.0, gt=0)
    on_failure: Literal["allow", "deny"] = "allow"
    """``deny``: a failure, timeout, invalid decision or dropped patch denies the call."""

    @model_validator(mode="after")
    def _one_timeout(self) -> HookConfig:
        given = getattr(self.handler, "timeout_s", None)
        if given is not None and "timeout_s" in self.model_fields_set and given != self.timeout_s:
            raise ValueError(f"timeout_s is given twice ({self.timeout_s} on the hook, {given} in "
                             "its handler); keep one")
        return self

    @property
    def hook_timeout_s(self) -> float:
        """The hook's timeout: its handler's ``timeout_s`` when given, else its own."""
        given = getattr(self.handler, "timeout_s", None)
        return self.timeout_s if given is None else float(given)


class OutputConfig(_Strict):
    """Structured output: the final answer is one JSON value valid against ``schema`` (a JSON
    Schema 2020-12, checked here), asked for as the model's preset allows (docs/config.md#output).
    ``name`` labels it on the wire; ``strict`` asks for OpenAI's strict schema mode."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              serialize_by_alias=True)

    schema_: dict[str, Any] = Field(alias="schema")  # (``schema`` would shadow BaseModel's)
    name: str = Field(default="output", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    strict: StrictBool = False

    @field_validator("schema_")
    @classmethod
    def _json_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        try:
            compile_schema(schema, origin="mcp")  # checked as declared, as the agent uses it
        except CatalogError as exc:
            raise ValueError(f"{exc.error.message.removeprefix('schema ')}; write a JSON Schema "
                             "2020-12 (https://json-schema.org)") from None
        return schema


def _hook_entry_tag(value: Any) -> str | None:
    if isinstance(value, Mapping):
        return "<skill hooks>" if "skill" in value else "<hook>"
    return ("<skill hooks>" if isinstance(value, SkillHooksConfig)
            else "<hook>" if isinstance(value, HookConfig) else None)


MODEL_TAGS.update({"<hook>": HookConfig, "<skill hooks>": SkillHooksConfig})
AgentHookEntry = Annotated[
    Annotated[HookConfig, Tag("<hook>")] | Annotated[SkillHooksConfig, Tag("<skill hooks>")],
    Discriminator(_hook_entry_tag),
]
"""An entry of an agent's ``hooks:``: a hook, or ``{skill: <name>[, hook: <id>]}`` binding
the hooks a skill declares (config/skills.py)."""


def default_hook_id(agent: str, index: int) -> str:
    """The id of an agent's hook that sets none: ``<agent>.hooks[<index>]``."""
    return f"{agent}.hooks[{index}]"


class AgentConfig(_Strict):
    """One entry of ``agents:`` — its model, instructions, tools, Executors it may delegate to,
    retry policy, limits, hooks, Skills and output schema. Cross-references (a tool, an Executor,
    a model connection) are checked by the compile step, not here."""

    model: ModelChoice
    description: str = ""
    instructions: str = ""
    tools: tuple[Annotated[str, AfterValidator(_tool_entry)], ...] = ()
    executors: tuple[str, ...] = ()
    retry: RetryConfig = Field(default_factory=RetryConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    hooks: tuple[AgentHookEntry, ...] = ()
    output: OutputConfig | None = None
    """Structured output (``None``: the final answer is text)."""
    skills: AgentSkills = ()
    """Imported skills the agent may use, by name, or ``"*"`` (config/skills.py)."""

    @field_validator("model", mode="before")
    @classmethod
    def _model_form(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            builtin = value.get("builtin")
            if "builtin" in value and not (isinstance(builtin, str) and builtin in _BUILTIN_MODELS):
                raise ValueError(f"unknown builtin model {shown(builtin)}; built-ins are "
                                 f"{', '.join(_BUILTIN_MODELS)}")
            if "builtin" not in value and "connection" not in value:
                raise ValueError(f"must be one of {_MODEL_FORMS} (got keys: {', '.join(map(str, value))})")
        elif not isinstance(value, BaseModel):
            raise ValueError(f"must be one of {_MODEL_FORMS} (got {shown(value)})")
        return value


# -- the whole file ------------------------------------------------------------------------------


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


# -- cross-checks --------------------------------------------------------------------------------


def cross_problems(config: Config) -> list[Problem]:
    """Every problem that needs more than one key to see, in file order (those that need a
    provider preset or the script parser are found at build time)."""
    problems: list[Problem] = []
    for section, names in (("connections", config.connections), ("agents", config.agents),
                           ("mcp_servers", config.mcp_servers),
                           ("a2a_agents", config.a2a_agents)):
        for name in names:
            if not NAME.match(name):
                problems.append(Problem(key_path((section, name)), NAME_RULE))
    for project, settings in config.projects.items():
        for name in settings.connections:
            if name not in config.connections:
                known = list(config.connections)
                problems.append(Problem(key_path(("projects", project, "connections", name)),
                                        f"no connection named {name!r}; {did_you_mean(name, known)}"
                                        f"defined: {', '.join(known) or 'none'}"))
    for agent_name in config.workers.max_concurrent_runs:
        if agent_name not in config.agents:
            problems.append(Problem(key_path(("workers", "max_concurrent_runs", agent_name)),
                                    f"no agent {agent_name!r} is defined; "
                                    f"{did_you_mean(agent_name, list(config.agents))}"
                                    f"agents: {', '.join(sorted(config.agents))}"))
    hook_ids: dict[str, str] = {}
    for name, agent in config.agents.items():
        at = key_path(("agents", name))
        _model_problems(config, agent.model, f"{at}.model", problems)
        _duplicates(agent.tools, f"{at}.tools", problems)
        _mcp_tool_problems(config, agent.tools, f"{at}.tools", problems)
        _a2a_tool_problems(config, agent.tools, f"{at}.tools", problems)
        _executor_problems(config, name, agent, at, problems)
        if agent.skills != "*":
            _duplicates(agent.skills, f"{at}.skills", problems)
        for i, hook in enumerate(agent.hooks):
            where = f"{at}.hooks[{i}]"
            if isinstance(hook, SkillHooksConfig):
                if agent.skills != "*" and hook.skill not in agent.skills:
                    problems.append(Problem(f"{where}.skill", f"skill {hook.skill!r} is not in "
                                            f"{at}.skills; add it there to bind its hooks"))
                continue
            hook_id = hook.hook_id or default_hook_id(name, i)
            if hook_id in hook_ids:
                problems.append(Problem(f"{where}.hook_id", f"hook id {hook_id!r} is already used by "
                                        f"{hook_ids[hook_id]}; give each hook its own id"))
            hook_ids.setdefault(hook_id, where)
            if hook.timing == "before" and hook.match.status is not None:
                problems.append(Problem(f"{where}.match.status", "applies to after hooks only "
                                        "(nothing has a status before it runs); remove it or set "
                                        "timing: after"))
    problems.extend(intent_problems(config.intents))
    problems.extend(command_problems(config.intents, config.commands))
    problems.extend(command_tool_problems(config.agents, config.commands))
    problems.extend(workflow_problems(config))
    return problems


def _model_problems(
    config: Config, choice: ConnectionModelChoice | TestModelChoice | ScriptModelChoice, at: str,
    problems: list[Problem],
) -> None:
    if isinstance(choice, ScriptModelChoice):
        path = config.resolve_path(choice.path)
        if not path.is_file():
            problems.append(Problem(f"{at}.path", f"no script file at {str(path)!r} (a relative path is "
                                    f"read from the config file's folder); create it or fix the path"))
        return
    if isinstance(choice, TestModelChoice):
        return
    if choice.connection not in config.connections:
        known = list(config.connections)
        problems.append(Problem(f"{at}.connection", f"no connection named {choice.connection!r}; "
                                f"{did_you_mean(choice.connection, known)}defined: "
                                f"{', '.join(known) or 'none (add one under connections)'}"))
    if (choice.window is not None and choice.output_limit is not None
            and not leaves_input_room(choice.window, choice.output_limit)):
        problems.append(Problem(f"{at}.output_limit", f"must be less than window ({choice.window}) to leave "
                                f"room for input (got {choice.output_limit})"))
    limit = choice.max_output_tokens
    if limit is not None and choice.window is not None and not leaves_input_room(choice.window, limit):
        problems.append(Problem(f"{at}.max_output_tokens", f"must be less than window ({choice.window}) "
                                f"to leave room for input (got {limit})"))
    elif limit is not None and choice.output_limit is not None and limit > choice.output_limit:
        problems.append(Problem(f"{at}.max_output_tokens", f"must not exceed output_limit "
                                f"({choice.output_limit}), the model's output limit (got {limit})"))


def _duplicates(entries: tuple[str, ...], at: str, problems: list[Problem]) -> None:
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        if entry in first:
            problems.append(Problem(f"{at}[{i}]", f"{entry!r} is listed twice (also at [{first[entry]}]); "
                                    "remove one"))
        first.setdefault(entry, i)


def _mcp_tool_problems(config: Config, entries: tuple[str, ...], at: str,
                       problems: list[Problem]) -> None:
    problems.extend(Problem(f"{at}[{i}]", problem) for i, entry in enumerate(entries)
                    if (problem := mcp_server_problem(config.mcp_servers, entry)) is not None)


def _a2a_tool_problems(config: Config, entries: tuple[str, ...], at: str,
                       problems: list[Problem]) -> None:
    problems.extend(Problem(f"{at}[{i}]", problem) for i, entry in enumerate(entries)
                    if (problem := a2a_agent_problem(config.a2a_agents, entry)) is not None)


def _executor_problems(config: Config, name: str, agent: AgentConfig, at: str,
                       problems: list[Problem]) -> None:
    first: dict[str, int] = {}
    for i, executor in enumerate(agent.executors):
        where = f"{at}.executors[{i}]"
        if executor in first:
            problems.append(Problem(where, f"{executor!r} is listed twice (also at [{first[executor]}]); "
                                    "remove one"))
        elif executor == name:
            problems.append(Problem(where, "an agent cannot be its own executor; remove it"))
        elif executor not in config.agents:
            others = [a for a in config.agents if a != name]
            problems.append(Problem(where, f"no agent named {executor!r}; {did_you_mean(executor, others)}"
                                    f"defined: {', '.join(others) or 'none besides this one'}"))
        elif config.agents[executor].executors:
            problems.append(Problem(
                where, f"agent {executor!r} has executors of its own; delegation is one level deep "
                f"(an executor does not delegate further): remove {key_path(('agents', executor))}"
                f".executors, or do not use {executor!r} as an executor"))
        first.setdefault(executor, i)
