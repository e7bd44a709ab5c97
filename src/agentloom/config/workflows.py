"""The ``workflows:`` section: durable graphs of agent, capability and wait nodes (issue 20,
docs/workflows.md).

Example::

    workflows:
      release:
        nodes:
          plan:    {agent: planner, input: "{{ input.task }}"}
          build:   {capability: exec, args: {argv: [make, dist]}}
          approve: {wait: approval, question: "Ship {{ nodes.build.output }}?"}
        edges:
          - {from: plan, to: build}
          - {from: build, to: approve}
          - {from: build, to: plan, on_error: retry_with_feedback, max: 2}

Owns: the shape of one workflow entry (pydantic, strict, unknown keys refused; a node is
tagged by which of ``agent`` / ``capability`` / ``wait`` it has) and ``workflow_problems``,
the cross-checks against the rest of the configuration (agents exist; capability keys are
built-ins, ``module:attr`` tools, or name a configured MCP server, A2A agent or exposed
command) plus the graph checks of ``config._workflow_graph``; it re-exports those checks and
the template functions of ``config._templates`` for ``squad``. Config is core and must not
import ``squad``: these are plain models, and ``squad.builder.workflow_spec`` turns one into a
``squad.spec.WorkflowSpec``. Does not own: running a workflow (``squad.driver``), whether an
MCP server really has the tool (checked when the runtime is built).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    field_validator,
    model_validator,
)

from agentloom.config._entries import a2a_agent_problem, mcp_server_problem
from agentloom.config._problems import Problem, did_you_mean
from agentloom.config._templates import TemplateError, references, render, render_args, template_texts
from agentloom.config._workflow_graph import (
    GraphEdge,
    GraphNode,
    graph_problems,
    start_nodes,
    topological_order,
)
from agentloom.config.a2a import a2a_entry_agent
from agentloom.config.commands import command_entry, command_problem
from agentloom.config.mcp import mcp_entry_parts

if TYPE_CHECKING:
    from agentloom.config.hooks import HookConfig  # resolved by config.model (an import cycle)
    from agentloom.config.model import Config

__all__ = ["WORKFLOW_TAGS", "AgentNodeConfig", "CapabilityNodeConfig", "EdgeConfig", "GraphEdge",
           "GraphNode", "NodeConfig", "TemplateError", "WaitNodeConfig", "WorkflowConfig",
           "graph_node", "graph_problems", "references", "render", "render_args", "start_nodes",
           "template_texts", "topological_order", "workflow_problems"]

_KINDS = ("agent", "capability", "wait")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class HistoryGrantConfig(_Strict):
    """``{session: NAME}``: an agent node's explicit grant to read its agent's history in the
    session ``NAME`` (the agent's own session; read only, its folder is never mounted)."""

    session: str = Field(min_length=1)


def _history(value: Any) -> Any:
    """``none`` or ``{session: NAME}``, with one error naming what is wrong."""
    if value == "none" or isinstance(value, HistoryGrantConfig):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k != "session")
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} in a history grant; its only key is "
                             "'session'")
        session = value.get("session")
        if not isinstance(session, str) or not session.strip():
            raise ValueError("a history grant's 'session' must name a session of the agent")
        return HistoryGrantConfig(session=session)
    raise ValueError(f"must be 'none' or {{session: NAME}} (got {value!r})")


class OutputsConfig(_Strict):
    """``outputs: {files: [GLOB, …]}`` (issue 37): the files of the node's work folder it hands
    on as artifacts when it succeeds (globs relative to that folder; checked by the graph
    checks: relative, no ``..``)."""

    files: tuple[Annotated[str, Field(min_length=1)], ...] = Field(min_length=1)


class InputGrantConfig(_Strict):
    """``{from: NODE, files: [GLOB, …]}`` (issue 37): the artifacts of an upstream node this
    node is granted, read only; ``files`` defaults to every one (``["**"]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              serialize_by_alias=True)

    source: str = Field(alias="from", min_length=1)
    files: tuple[Annotated[str, Field(min_length=1)], ...] = Field(default=("**",), min_length=1)


def _grants(value: Any) -> Any:
    """One grant or a list of them."""
    return [value] if isinstance(value, Mapping | InputGrantConfig) else value


_Inputs = Annotated[tuple[InputGrantConfig, ...], BeforeValidator(_grants)]


class AgentNodeConfig(_Strict):
    """``{agent: NAME, input: TEMPLATE, history: none | {session: NAME}}``: one input_only
    invocation of a configured agent. ``input`` defaults to ``{{ input.task }}``;
    ``history`` to ``none``; ``outputs`` / ``inputs`` (issue 37) to none."""

    agent: str = Field(min_length=1)
    input: str = "{{ input.task }}"
    history: Annotated[Literal["none"] | HistoryGrantConfig,
                       BeforeValidator(_history)] = "none"
    outputs: OutputsConfig | None = None
    inputs: _Inputs = ()


def _json_value(value: Any, at: str = "args") -> Any:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{at}: keys must be strings (got {key!r})")
            _json_value(item, f"{at}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _json_value(item, f"{at}[{i}]")
    elif not (value is None or isinstance(value, str | int | float | bool)):
        raise ValueError(f"{at} must hold JSON values only (strings, numbers, true/false, null, "
                         f"lists, mappings); got a {type(value).__name__} — quote it")
    return value


class CapabilityNodeConfig(_Strict):
    """``{capability: KEY, args: {...}}``: one call of a capability (a built-in such as
    ``exec``, ``mcp.<server>.<tool>``, ``a2a.<name>``, ``command.<id>`` or a ``module:attr``
    tool). Every string inside ``args`` is a template. ``args`` defaults to ``{}``."""

    capability: str = Field(min_length=1)
    args: Annotated[dict[str, Any], BeforeValidator(_json_value)] = Field(default_factory=dict)
    outputs: OutputsConfig | None = None
    inputs: _Inputs = ()


class WaitNodeConfig(_Strict):
    """``{wait: approval, question: TEMPLATE}``: a wait for a person's answer; its output is
    ``approved`` or ``rejected``. ``question`` defaults to ``""``. Or ``{wait: message, for:
    NODE, from: NODE}`` (issue 37): a wait for a mailbox message to ``for`` (default: this
    node) from ``from`` (default: anyone); its output is the message's body."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              serialize_by_alias=True)

    wait: Literal["approval", "message"]
    question: str = ""
    for_node: str | None = Field(default=None, alias="for", min_length=1)
    from_node: str | None = Field(default=None, alias="from", min_length=1)

    @model_validator(mode="after")
    def _message_keys(self) -> WaitNodeConfig:
        if self.wait != "message" and (self.for_node or self.from_node):
            raise ValueError("`for` and `from` belong to a wait for a message "
                             "(`wait: message`); a `wait: approval` node asks a person")
        return self


WORKFLOW_TAGS: dict[str, type[BaseModel]] = {
    "<agent node>": AgentNodeConfig, "<capability node>": CapabilityNodeConfig,
    "<wait node>": WaitNodeConfig}
"""The tags of the node union (left out of key paths in error messages)."""


def _node_tag(value: Any) -> str | None:
    if isinstance(value, Mapping):
        kind = next((k for k in _KINDS if k in value), None)
        return f"<{kind} node>" if kind else None
    for tag, cls in WORKFLOW_TAGS.items():
        if isinstance(value, cls):
            return tag
    return None


def _one_kind(value: Any) -> Any:
    if isinstance(value, Mapping):
        kinds = [k for k in _KINDS if k in value]
        if len(kinds) > 1:
            raise ValueError(f"a node is one of an agent, a capability or a wait: give exactly one "
                             f"of `agent`, `capability` or `wait` (got {' and '.join(kinds)})")
    return value


NodeConfig = Annotated[
    Annotated[AgentNodeConfig, Tag("<agent node>")]
    | Annotated[CapabilityNodeConfig, Tag("<capability node>")]
    | Annotated[WaitNodeConfig, Tag("<wait node>")],
    Discriminator(_node_tag, custom_error_type="node_kind",
                  custom_error_message="a node needs exactly one of `agent: NAME`, "
                  "`capability: KEY` or `wait: approval`"),
    BeforeValidator(_one_kind),
]
"""A node: an agent, a capability or a wait, by which of those keys it has."""


def _names(value: Any) -> Any:
    return (value,) if isinstance(value, str) else value


_NodeNames = Annotated[tuple[Annotated[str, Field(min_length=1)], ...],
                       BeforeValidator(_names), Field(min_length=1)]


class EdgeConfig(_Strict):
    """``{from: A, to: B}`` — ``from`` and ``to`` are a node name or a list of them. ``join``
    (default ``all``): with several sources, wait for every one (``all``) or the first
    (``any``). ``when``: fire only when the source's output (stripped) equals it. ``on_error``
    (``route`` | ``retry_with_feedback``): an error edge, fired when its one source failed.
    ``max``: how often the edge may fire in one run (a cycle needs one)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              serialize_by_alias=True)

    sources: _NodeNames = Field(alias="from")
    targets: _NodeNames = Field(alias="to")
    join: Literal["all", "any"] = "all"
    when: str | None = None
    on_error: Literal["route", "retry_with_feedback"] | None = None
    max: StrictInt | None = Field(default=None, ge=1)


class WorkflowLimitsConfig(_Strict):
    """``limits:`` of a workflow — the whole run's, every node included: ``run_deadline_s``
    (default 3600), ``max_total_tokens`` (the token budget of all its agent nodes together;
    default none), ``approval_timeout_s`` / ``approval_default`` (how long a wait node waits,
    then which answer applies; default: until answered)."""

    run_deadline_s: float = Field(default=3600.0, gt=0)
    max_total_tokens: int | None = Field(default=None, ge=1)
    approval_timeout_s: float | None = Field(default=None, gt=0)
    approval_default: Literal["deny", "approve"] = "deny"


class WorkflowConfig(_Strict):
    """One workflow under ``workflows:``: ``nodes`` (at least one, in order) and ``edges``
    (default: none, every node then starts at once); ``description`` defaults to ``""``."""

    description: str = ""
    nodes: dict[str, NodeConfig] = Field(min_length=1)
    edges: tuple[EdgeConfig, ...] = ()
    limits: WorkflowLimitsConfig = Field(default_factory=WorkflowLimitsConfig)
    hooks: tuple[HookConfig, ...] = ()
    """Hooks on the workflow's own calls (issue 37; docs/workflows.md "Hooks on nodes"), as an
    agent's: ``match.role`` defaults to ``workflow:<name>``, ids to ``<name>.hooks[<i>]``."""

    @field_validator("nodes", mode="before")
    @classmethod
    def _nodes_mapping(cls, value: Any) -> Any:
        if isinstance(value, list):
            raise ValueError("must be a mapping of node name → node (got a list); write "
                             "`plan: {agent: planner}` rather than `- plan: …`")
        if isinstance(value, Mapping):
            for name in value:
                _check_name(name, "node")
        return value

    @model_validator(mode="after")
    def _message_waits(self) -> WorkflowConfig:
        """A message wait's ``for`` / ``from`` name nodes of this workflow (issue 37)."""
        for name, node in self.nodes.items():
            if not isinstance(node, WaitNodeConfig):
                continue
            for key, value in (("for", node.for_node), ("from", node.from_node)):
                if value is not None and value not in self.nodes:
                    raise ValueError(
                        f"nodes.{name}.{key}: {value!r} is not a node of this workflow; "
                        f"{did_you_mean(value, list(self.nodes))}nodes: {', '.join(self.nodes)}")
        return self


NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
"""A workflow's or a node's name: a letter, then letters, digits, ``_`` or ``-`` (at most 64):
it names the node's calls (``<run>/n/<node>/<attempt>``) and folders."""


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(f"{what} name {name!r} must be a letter, then letters, digits, '_' or "
                         "'-' (at most 64)")


def workflow_names(value: Any) -> Any:
    """Check the names under ``workflows:`` (a ``before`` validator of ``Config.workflows``)."""
    if isinstance(value, Mapping):
        for name in value:
            _check_name(name, "workflow")
    return value


def graph_node(name: str, node: AgentNodeConfig | CapabilityNodeConfig | WaitNodeConfig) -> GraphNode:
    """The view of one node the graph checks read."""
    if isinstance(node, AgentNodeConfig):
        return GraphNode(name=name, kind="agent", target=node.agent, texts=((("input",), node.input),),
                         **_artifact_view(node))
    if isinstance(node, CapabilityNodeConfig):
        return GraphNode(name=name, kind="capability", target=node.capability,
                         texts=tuple(template_texts(node.args, ("args",))), **_artifact_view(node))
    return GraphNode(name=name, kind="wait", target=node.wait, texts=((("question",), node.question),))


def _artifact_view(node: AgentNodeConfig | CapabilityNodeConfig) -> dict[str, Any]:
    """A node's ``outputs`` / ``inputs`` as the graph checks read them (issue 37)."""
    return {"outputs": node.outputs.files if node.outputs else (),
            "inputs": tuple((g.source, g.files) for g in node.inputs)}


def workflow_problems(config: Config) -> list[Problem]:
    """Every problem of ``config.workflows`` that needs more than one key to see, in file
    order: the graph checks, agents that are not defined, capability keys that name nothing."""
    problems: list[Problem] = []
    for name, workflow in config.workflows.items():
        nodes = {n: graph_node(n, node) for n, node in workflow.nodes.items()}
        problems += graph_problems(name, nodes, workflow.edges, agents=list(config.agents),
                                   capability_problem=lambda key: _capability_problem(config, key),
                                   publishers=[a for a, c in config.agents.items()
                                               if "artifact.publish" in c.tools])
    return problems


def _capability_problem(config: Config, key: str) -> str | None:
    from agentloom.config.model import _REF, BUILTIN_TOOLS  # model.py imports this module

    if key in BUILTIN_TOOLS or _REF.match(key):
        return None
    mcp = mcp_entry_parts(key)
    if mcp is not None:
        if any(c in mcp[1] for c in "*?["):
            return f"{key!r} is a pattern; a capability node calls one tool: name it"
        return mcp_server_problem(config.mcp_servers, key)
    if a2a_entry_agent(key) is not None:
        return a2a_agent_problem(config.a2a_agents, key)
    if command_entry(key) is not None:
        return command_problem(config.commands, key)
    return (f"unknown capability {key!r}; {did_you_mean(key, BUILTIN_TOOLS)}built-ins are "
            f"{', '.join(BUILTIN_TOOLS)}; an SDK tool is written 'package.module:attribute', an MCP "
            "tool 'mcp.<server>.<tool>', a remote A2A agent 'a2a.<name>', a command 'command.<id>'")
