"""An agent's ``hooks:`` — a hook (when it runs, what it matches, its handler, timeout and
failure policy), or ``{skill: <name>[, hook: <id>]}`` binding the hooks a skill declares.

Owns: ``HookMatchConfig``, ``HookConfig``, ``AgentHookEntry`` (their tagged union),
``default_hook_id`` and ``configured_hooks`` (every agent's and workflow's entries, in file
order, with their default role and key). Does not own: the handler kinds
(``handler_kinds``: their config models and registry), skill hook bindings (``skills``), hook
ids being unique across agents and workflows (``_cross``), nor running a hook (``agentloom.hooks``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, StrictFloat, Tag, model_validator

from agentloom.config._base import _Strict
from agentloom.config._problems import key_path
from agentloom.config.connections import MODEL_TAGS
from agentloom.config.handler_kinds import AnyHandlerConfig, publish_handler_tags
from agentloom.config.skills import SkillHooksConfig

if TYPE_CHECKING:
    from agentloom.config.model import Config

__all__ = ["AgentHookEntry", "ConfiguredHook", "HookConfig", "HookMatchConfig",
           "configured_hooks", "default_hook_id"]


class HookMatchConfig(_Strict):
    """A hook's ``match:`` — which calls it sees, by role, capability key, purpose, (after
    hooks) result status, or the name of the workflow node the call serves (``node``: a call
    made for no node never matches it). An absent field matches everything."""

    role: str | None = Field(default=None, min_length=1)
    capability: str | None = Field(default=None, min_length=1)
    purpose: str | None = Field(default=None, min_length=1)
    status: str | None = Field(default=None, min_length=1)
    node: str | None = Field(default=None, min_length=1)


# The handler kinds (HandlerConfig, CommandHandlerConfig, HttpHandlerConfig, McpHandlerConfig and
# any registered later) and AnyHandlerConfig, their union: config.handler_kinds.
publish_handler_tags(MODEL_TAGS)  # error paths leave the handler kind's tag out too


class HookConfig(_Strict):
    """One hook. ``hook_id`` defaults to ``<agent>.hooks[<i>]``; ``match.role`` to the agent
    (a workflow's hook: ``<workflow>.hooks[<i>]`` and ``workflow:<workflow>``).
    ``timing`` and ``hook_id`` are the names ``HookSpec`` and the JSON output use."""

    renamed_keys: ClassVar[Mapping[str, str]] = {"at": "timing", "id": "hook_id"}

    hook_id: str | None = Field(default=None, min_length=1)
    timing: Literal["before", "after"]
    event: Literal["tool", "model", "delegation"] = "tool"
    """``tool``, ``model`` or ``delegation`` (an agent's call of its executor, payload
    ``{task}``; a workflow's agent node, payload ``{task, agent, node, attempt}``)."""
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


@dataclass(frozen=True, slots=True)
class ConfiguredHook:
    """One entry of an agent's or a workflow's ``hooks:``: its owner's name, the role its
    ``match.role`` defaults to (the agent, or ``workflow:<name>`` — the role of a workflow's own
    calls: its delegations, capability nodes and waits), its key and its default id."""

    owner: str
    role: str
    where: str
    """``agents.<agent>.hooks[<i>]`` / ``workflows.<workflow>.hooks[<i>]``."""
    default_id: str
    entry: HookConfig | SkillHooksConfig


def configured_hooks(config: Config) -> Iterator[ConfiguredHook]:
    """Every agent's hook entries, then every workflow's, in file order."""
    for name, agent in config.agents.items():
        for i, hook in enumerate(agent.hooks):
            yield ConfiguredHook(name, name, f"{key_path(('agents', name))}.hooks[{i}]",
                                 default_hook_id(name, i), hook)
    for name, workflow in config.workflows.items():
        for i, hook in enumerate(workflow.hooks):
            yield ConfiguredHook(name, f"workflow:{name}",
                                 f"{key_path(('workflows', name))}.hooks[{i}]",
                                 default_hook_id(name, i), hook)
