"""What an agent is, as the runtime needs it: a frozen spec per role (000 §4, §3.3).

``AgentSpec`` is built from the YAML configuration (``agentloom.config``) or directly in
Python. The runtime publishes one release per set of specs; each agent is a role of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, Union

from pydantic import BaseModel

from agentloom.agent.output import OutputSpec, output_formats
from agentloom.catalog import CapabilitySpec
from agentloom.errors import ConfigError
from agentloom.models.budget import build_descriptor, model_id
from agentloom.models.ports import Connection, ModelAdapter
from agentloom.models.presets import capabilities_for
from agentloom.models.types import ModelDescriptor, ModelRequest, ThinkParams
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.pipeline.retry import RetryPolicy
from agentloom.tools.sdk import Tool

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpTool

__all__ = ["DELEGATE_PREFIX", "AgentSpec", "AgentTool", "Limits", "delegate_key", "tool_key"]

DELEGATE_PREFIX = "delegate."


def delegate_key(executor: str) -> str:
    """The capability key through which a Planner delegates to ``executor``."""
    return f"{DELEGATE_PREFIX}{executor}"


AgentTool = Union[str, Tool[Any], "McpTool", "A2aAgent", tuple[CapabilitySpec, CapabilityHandler]]
"""One entry of ``AgentSpec.tools``: a built-in's name, an SDK tool, an MCP server's tool, a
remote A2A agent, or a ready ``(spec, handler)`` pair (e.g. ``agent.commands.command_tool``)."""


def tool_key(tool: AgentTool) -> str:
    """The capability key of one of an agent's tools."""
    if isinstance(tool, str):
        return tool
    if isinstance(tool, tuple):
        return tool[0].capability_key
    return tool.describe().name


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Per-agent limits; the root's deadline governs the whole run tree."""

    run_deadline_s: float = 3600.0
    first_output_timeout_s: float = 60.0
    stream_idle_timeout_s: float | None = None
    batch_concurrency: int = 2
    max_steps: int = 50
    # the run tree's token quota; the limit of the agent a run starts with applies
    max_total_tokens: int | None = None
    # model turns in a row whose every tool call could not run (a tool not offered, arguments
    # not a JSON object or not matching the schema) before the invocation ends
    # TOOL_ERRORS_EXCEEDED (agent.tool_errors)
    max_tool_errors: int = 3
    # a call a hook asked a person about waits this long for the answer (None: until answered),
    # then gets ``approval_default`` (issue 17)
    approval_timeout_s: float | None = None
    approval_default: Literal["deny", "approve"] = "deny"

    def __post_init__(self) -> None:
        if self.run_deadline_s <= 0 or self.first_output_timeout_s <= 0:
            raise ValueError("run_deadline_s and first_output_timeout_s must be positive")
        if self.batch_concurrency < 1 or self.max_steps < 1:
            raise ValueError("batch_concurrency and max_steps must be at least 1")
        if self.max_total_tokens is not None and self.max_total_tokens < 1:
            raise ValueError("max_total_tokens must be at least 1")
        if self.max_tool_errors < 1:
            raise ValueError("max_tool_errors must be at least 1")
        if self.approval_timeout_s is not None and self.approval_timeout_s <= 0:
            raise ValueError("approval_timeout_s must be positive")
        if self.approval_default not in ("deny", "approve"):
            raise ValueError(f"approval_default must be deny or approve, "
                             f"got {self.approval_default!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSpec:
    """One agent (a role of the release).

    ``model`` is an adapter (e.g. the offline ``TestModel``) or a ``Connection``. ``tools``
    holds built-in names (``"fs.read"``, ``"exec"``, …) and SDK ``Tool`` instances.
    ``executors`` names the agents this one may delegate to (Planner / Executor).
    ``output`` makes the final answer a JSON value valid against its schema (structured
    output, ``agent.output``); ``output_type``, a pydantic model, sets it from the model's
    schema (give one of the two). ``RunResult.output`` is then the parsed JSON value.
    ``think`` (reasoning on / off / effort) and ``max_output_tokens`` (the output limit sent
    with every request) go into each ``ModelRequest`` the loop makes; the preset maps them onto
    the provider's fields (config ``model.think`` / ``model.max_output_tokens``). ``None``:
    not sent, the provider's default applies. ``retry`` and ``limits`` are part of the release
    (``policy_settings``): a run is resumed only with the ones it started with (000 §3.3.1).

    Every agent has a known window (000 §4): when the spec is built, ``window`` / ``output_limit``
    (what you give: W may narrow what is known about the model, never widen it) are resolved
    into the model's W and O (``models.budget.build_descriptor``: the preset's documented
    window, an offline model's own, else the provider's model listing where the preset
    discovers) and hold the resolved values; ``descriptor`` says where each came from (O with
    nothing known is ``min(4096, W // 4)``, ``output_limit_source="platform_default"``). A model
    whose window nobody knows is refused: ``ConfigError`` ``MODEL_WINDOW_UNKNOWN`` naming the
    agent, the model and ``agents.<agent>.model.window``. ``descriptor`` may be given already
    resolved (the config build does); it is then used as is.
    """

    name: str
    model: ModelAdapter | Connection
    instructions: str = ""
    description: str = ""  # what a Planner is told about this agent as an Executor
    tools: tuple[AgentTool, ...] = ()
    executors: tuple[str, ...] = ()
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    limits: Limits = field(default_factory=Limits)
    window: int | None = None  # W in tokens: resolved when built; the loop compacts to fit it
    output_limit: int | None = None  # O: the output reserve, resolved when built
    output: OutputSpec | None = None
    output_type: type[BaseModel] | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    think: ThinkParams | None = None
    max_output_tokens: int | None = None
    descriptor: ModelDescriptor | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise ValueError(f"agent {self.name!r}: max_output_tokens must be at least 1, "
                             f"not {self.max_output_tokens}")
        if self.think is not None and self.think.enabled is False and self.think.effort:
            raise ValueError(f"agent {self.name!r}: think effort {self.think.effort!r} "
                             "contradicts think disabled; set one of them")
        if self.output_type is not None:
            if self.output is None:
                object.__setattr__(self, "output", OutputSpec.of_type(self.output_type))
            elif self.output.output_type is not self.output_type:  # (a replace() keeps both)
                raise ValueError(f"agent {self.name!r}: give output or output_type, not both")
        self._resolve_window()

    def _resolve_window(self) -> None:
        """Set ``window`` / ``output_limit`` / ``descriptor`` to the model's resolved W and O;
        a ``descriptor`` given (or kept by ``replace``) that agrees with them is used as is."""
        given = self.descriptor
        if (given is not None and given.window is not None and given.output_limit is not None
                and self.window in (None, given.window)
                and self.output_limit in (None, given.output_limit)
                and given.provider_model_id == model_id(self.model)):
            resolved = given
        else:
            resolved = build_descriptor(
                self.model, agent=self.name, configured_window=self.window,
                configured_output_limit=self.output_limit, before_discovery=self.check_model)
        object.__setattr__(self, "descriptor", resolved)
        object.__setattr__(self, "window", resolved.window)
        object.__setattr__(self, "output_limit", resolved.output_limit)

    def has_tools(self) -> bool:
        """Whether the agent offers its model any tool of its own (delegations included)."""
        return bool(self.tools or self.executors)

    def check_model(self) -> None:
        """Refuse now, before any run, what this agent would ask of a model that cannot serve
        it (000 §4.6): tools, its output format, think settings. A model without a preset's
        capability check (an offline model, a hand-made ``Connection``) is not checked.

        Raises:
            ConfigError: ``MODEL_CAPABILITY_UNSUPPORTED`` naming the agent, the model, the
                preset and the capability, and what in the agent needs it.
        """
        model = self.model
        check = model.capability_check if isinstance(model, Connection) else None
        if check is None:
            return
        fmt = self.output.request_format(output_formats(model)) if self.output else "text"
        request = ModelRequest(messages=(), output_format=fmt, think=self.think)
        needed = set(capabilities_for(request)) | ({"tools"} if self.has_tools() else set())
        try:
            check(needed)
        except ConfigError as exc:
            raise ConfigError(
                f"agent {self.name!r}: {exc.error.message}; remove what needs it from the "
                "agent (tools / executors, think settings, output) or choose a model that "
                "supports it", code=exc.code) from None

    def policy_settings(self) -> dict[str, dict[str, Any]]:
        """The agent's retry policy and limits for the release id (000 §3.3.1): only the fields
        that differ from their defaults, under ``retry`` / ``limits`` (a section left at its
        defaults is absent), so a release that sets none of them keeps the id it had before
        they became part of it. A run is resumed only by a release with the same ones."""
        settings: dict[str, dict[str, Any]] = {}
        for key, part in (("retry", self.retry), ("limits", self.limits)):
            changed = _non_default(part)
            if changed:
                settings[key] = changed
        return settings

    def tool_keys(self) -> list[str]:
        """The capability keys of this agent's tools, delegations included."""
        keys = [tool_key(t) for t in self.tools]
        return [*keys, *(delegate_key(e) for e in self.executors)]


def _non_default(part: RetryPolicy | Limits) -> dict[str, Any]:
    """The fields of ``part`` whose value is not the field's default; a whole number given for
    a float field counts as that float (``100`` and ``100.0`` are one setting)."""
    changed: dict[str, Any] = {}
    for f in fields(part):
        value = getattr(part, f.name)
        if f.default is not MISSING and value == f.default:
            continue
        if "float" in str(f.type) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        changed[f.name] = value
    return changed
