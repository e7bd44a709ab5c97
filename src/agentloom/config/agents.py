"""The ``agents:`` section — one agent's model, instructions, tools, Executors it may delegate
to, retry policy, limits, hooks, Skills and structured output.

Owns: ``AgentConfig`` and its parts ``RetryConfig``, ``LimitsConfig``, ``OutputConfig``; the
tool entries an agent may list (``BUILTIN_TOOLS``, ``package.module:attribute``, ``mcp.…``,
``a2a.…``, ``command.…``). Does not own: the model choices (``connections``), hooks
(``hooks``), nor the cross-references (a tool's server, an Executor, a model's connection:
``_cross``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
)

from agentloom.catalog import compile_schema
from agentloom.config._base import _REF, _Strict
from agentloom.config._problems import did_you_mean, shown
from agentloom.config.a2a import a2a_entry_agent
from agentloom.config.commands import command_entry
from agentloom.config.connections import BUILTIN_MODELS, MODEL_FORMS, ModelChoice
from agentloom.config.hooks import AgentHookEntry
from agentloom.config.mcp import mcp_entry_parts
from agentloom.config.skills import AgentSkills
from agentloom.errors import CatalogError

__all__ = ["AUTO_TOOLS", "BUILTIN_TOOLS", "WORKFLOW_TOOLS", "AgentConfig", "LimitsConfig",
           "OutputConfig", "RetryConfig"]

BUILTIN_TOOLS: tuple[str, ...] = (
    "fs.read", "fs.write", "fs.edit", "fs.patch", "fs.list", "fs.glob", "fs.grep", "fs.mkdir",
    "fs.move", "fs.delete", "exec",
)
"""Tool names an agent may list without an import (``RunEnvironment.builtin`` serves them).
Written out here, as names only, so config imports no tool; tests/config/test_load.py pins it
equal to ``agentloom.environment.BUILTIN_TOOLS``."""

WORKFLOW_TOOLS: tuple[str, ...] = (
    "collab.post", "collab.read", "collab.handoff", "collab.accept", "collab.claim",
    "collab.update", "artifact.publish",
)
"""Tool names only a workflow node can use (issue 37): its run's mailbox, handoffs and task
board, and publishing an artifact. Names only, so config imports no squad; the assembly
resolves them (``squad.workflow_tools``). Listed outside any workflow they still load; a
call then fails ``NOT_IN_WORKFLOW``."""

AUTO_TOOLS: tuple[str, ...] = ("result.read", "skill.list", "skill.read")
"""Capabilities an agent gets without listing them (``result.read`` always, ``skill.list`` /
``skill.read`` with skills); listing one too is accepted and changes nothing."""


def _tool_entry(value: str) -> str:
    if value in BUILTIN_TOOLS or value in AUTO_TOOLS or value in WORKFLOW_TOOLS \
            or _REF.match(value) \
            or mcp_entry_parts(value) or a2a_entry_agent(value) or command_entry(value):
        return value
    raise ValueError(
        f"unknown tool {value!r}; {did_you_mean(value, (*BUILTIN_TOOLS, *AUTO_TOOLS, *WORKFLOW_TOOLS))}"
        f"built-ins are {', '.join(BUILTIN_TOOLS)}; a workflow node's tools "
        f"{', '.join(WORKFLOW_TOOLS)}; an SDK tool is written 'package.module:attribute', an MCP "
        "tool 'mcp.<server>.<tool>' (or a glob such as 'mcp.git.*'), a remote A2A agent 'a2a.<name>', "
        "a command 'command.<id>'"
    )


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
            if "builtin" in value and not (isinstance(builtin, str) and builtin in BUILTIN_MODELS):
                raise ValueError(f"unknown builtin model {shown(builtin)}; built-ins are "
                                 f"{', '.join(BUILTIN_MODELS)}")
            if "builtin" not in value and "connection" not in value:
                raise ValueError(f"must be one of {MODEL_FORMS} (got keys: {', '.join(map(str, value))})")
        elif not isinstance(value, BaseModel):
            raise ValueError(f"must be one of {MODEL_FORMS} (got {shown(value)})")
        return value
