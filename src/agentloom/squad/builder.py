"""Building a ``WorkflowSpec`` from Python, or from a loaded configuration (issue 20).

::

    spec = (Workflow("release")
            .agent("plan", "planner", input="{{ input.task }}")
            .capability("build", "exec", args={"argv": ["make", "dist"]})
            .wait("approve", question="Ship {{ nodes.build.output }}?")
            .edge("plan", "build").edge("build", "approve")
            .edge("build", "plan", on_error="retry_with_feedback", max=2)
            .build())

The builder writes down what the YAML would say and reads it through the same model
(``config.workflows.WorkflowConfig``) and the same graph checks, so a workflow built here and
the one written in YAML are the same spec, with the same digest.

Owns: the builder, ``workflow_spec`` (a ``WorkflowConfig`` → ``WorkflowSpec``) and
``from_config``. Does not own: the checks (``squad.validate``, ``config.workflows``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from agentloom.config import Config, Problem, config_error, key_path
from agentloom.config._problems import validation_problems
from agentloom.config.workflows import (
    NAME,
    WORKFLOW_TAGS,
    AgentNodeConfig,
    CapabilityNodeConfig,
    WorkflowConfig,
)
from agentloom.squad.spec import (
    AgentNode,
    ArtifactGrant,
    CapabilityNode,
    Edge,
    JoinMode,
    Node,
    OnError,
    WaitNode,
    WorkflowSpec,
)
from agentloom.squad.validate import problems as spec_problems

__all__ = ["Workflow", "from_config", "workflow_spec"]


def workflow_spec(name: str, cfg: WorkflowConfig) -> WorkflowSpec:
    """The spec of workflow ``name`` as configured (checked by the config's load already)."""
    nodes: dict[str, Node] = {}
    for node_name, node in cfg.nodes.items():
        if isinstance(node, AgentNodeConfig):
            history: Literal["none"] | Mapping[str, str] = (
                node.history if isinstance(node.history, str)
                else {"session": node.history.session})
            nodes[node_name] = AgentNode(name=node_name, agent=node.agent, input=node.input,
                                         history=history, **_artifacts(node))
        elif isinstance(node, CapabilityNodeConfig):
            nodes[node_name] = CapabilityNode(name=node_name, capability=node.capability,
                                              args=dict(node.args), **_artifacts(node))
        else:
            nodes[node_name] = WaitNode(name=node_name, wait=node.wait, question=node.question,
                                        for_node=node.for_node, from_node=node.from_node)
    edges = tuple(Edge(sources=e.sources, targets=e.targets, join=e.join, when=e.when,
                       on_error=e.on_error, max=e.max) for e in cfg.edges)
    return WorkflowSpec(name=name, nodes=nodes, edges=edges, description=cfg.description)


def _artifacts(node: AgentNodeConfig | CapabilityNodeConfig) -> dict[str, Any]:
    """A node's ``outputs`` and ``inputs`` (issue 37) as the spec's fields."""
    return {"outputs": node.outputs.files if node.outputs else (),
            "inputs": tuple(ArtifactGrant(source=g.source, files=g.files) for g in node.inputs)}


def _artifact_keys(outputs: Sequence[str] | None,
                   inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The YAML keys ``outputs`` / ``inputs`` of a built node, only when given."""
    keys: dict[str, Any] = {}
    if outputs is not None:
        keys["outputs"] = {"files": list(outputs)}
    if inputs is not None:
        keys["inputs"] = dict(inputs) if isinstance(inputs, Mapping) else [dict(g) for g in inputs]
    return keys


def from_config(config: Config) -> dict[str, WorkflowSpec]:
    """Every workflow of ``config`` (``workflows:``) as a spec, in file order."""
    return {name: workflow_spec(name, cfg) for name, cfg in config.workflows.items()}


class Workflow:
    """A workflow written in Python: add nodes and edges, then ``build()``. Each method
    returns the builder; the keyword arguments and their defaults are the YAML keys'."""

    def __init__(self, name: str, *, description: str = "") -> None:
        self.name = name
        self._description = description
        self._nodes: dict[str, dict[str, Any]] = {}
        self._twice: list[str] = []
        self._edges: list[dict[str, Any]] = []

    def _node(self, name: str, node: dict[str, Any]) -> Workflow:
        if name in self._nodes:
            self._twice.append(name)
        self._nodes[name] = node
        return self

    def agent(self, name: str, agent: str, *, input: str = "{{ input.task }}",
              history: Literal["none"] | Mapping[str, str] = "none",
              outputs: Sequence[str] | None = None,
              inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None) -> Workflow:
        """An agent node: one input_only invocation of ``agent`` on the rendered ``input``;
        ``history={"session": NAME}`` grants it the agent's history in that session;
        ``outputs=[GLOB, …]`` its files handed on as artifacts, ``inputs={"from": NODE,
        "files": [GLOB, …]}`` (or a list of them) the artifacts it is granted (issue 37)."""
        return self._node(name, {"agent": agent, "input": input,
                                 "history": history if isinstance(history, str)
                                 else dict(history), **_artifact_keys(outputs, inputs)})

    def capability(self, name: str, capability: str, *,
                   args: Mapping[str, Any] | None = None,
                   outputs: Sequence[str] | None = None,
                   inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
                   ) -> Workflow:
        """A capability node: one call of ``capability`` with the rendered ``args``;
        ``outputs`` / ``inputs`` as for ``agent``."""
        return self._node(name, {"capability": capability, "args": dict(args or {}),
                                 **_artifact_keys(outputs, inputs)})

    def wait(self, name: str, *, question: str = "",
             wait: Literal["approval", "message"] = "approval", for_node: str | None = None,
             from_node: str | None = None) -> Workflow:
        """A wait node: a person answers the rendered ``question`` (``approved`` / ``rejected``);
        or, ``wait="message"``, a wait for a mailbox message to ``for_node`` (YAML ``for``;
        default: this node) from ``from_node`` (YAML ``from``), whose body is its output."""
        node: dict[str, Any] = {"wait": wait, "question": question}
        node.update({k: v for k, v in (("for", for_node), ("from", from_node)) if v is not None})
        return self._node(name, node)

    def edge(self, sources: str | Sequence[str], targets: str | Sequence[str], *,
             join: JoinMode = "all", when: str | None = None, on_error: OnError | None = None,
             max: int | None = None) -> Workflow:
        """An edge ``sources`` → ``targets`` (a name or a list; see ``squad.spec.Edge``)."""
        self._edges.append({
            "from": sources if isinstance(sources, str) else list(sources),
            "to": targets if isinstance(targets, str) else list(targets),
            "join": join, "when": when, "on_error": on_error, "max": max})
        return self

    def build(self, *, agents: Collection[str] | None = None,
              capabilities: Collection[str] | None = None) -> WorkflowSpec:
        """The spec, checked as a ``workflows:`` entry is at load (agents and capabilities
        only when given).

        Raises:
            ConfigError: listing every problem, at its YAML key path.
        """
        at = key_path(("workflows", self.name))
        found = [Problem(f"{at}.nodes.{name}", "is defined twice; give each node its own name")
                 for name in dict.fromkeys(self._twice)]
        if not NAME.match(self.name):
            found.append(Problem(at, f"workflow name {self.name!r} must be a letter, then "
                                 "letters, digits, '_' or '-' (at most 64)"))
        try:
            cfg = WorkflowConfig.model_validate(
                {"description": self._description, "nodes": self._nodes, "edges": self._edges})
        except ValidationError as exc:
            found += [_under(at, p) for p in validation_problems(exc, WorkflowConfig, WORKFLOW_TAGS)]
            raise config_error(f"workflow {self.name!r}", found) from None
        spec = workflow_spec(self.name, cfg)
        found += spec_problems(spec, agents=agents, capabilities=capabilities)
        if found:
            raise config_error(f"workflow {self.name!r}", found)
        return spec


def _under(at: str, problem: Problem) -> Problem:
    if problem.path == "(top level)":
        return Problem(at, problem.message)
    sep = "" if problem.path.startswith("[") else "."
    return Problem(f"{at}{sep}{problem.path}", problem.message)
