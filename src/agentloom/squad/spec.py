"""A workflow's definition (issue 20): its nodes and edges, as frozen data.

A workflow is a graph whose nodes are capability calls (``CapabilityNode``), whole agent
invocations (``AgentNode``, input_only) or waits for a person (``WaitNode``), joined by
``Edge`` s. The YAML keys (``nodes``, ``agent``, ``capability``, ``args``, ``input``,
``history``, ``wait``, ``question``, ``edges``, ``from``, ``to``, ``join``, ``when``,
``on_error``, ``max``, and issue 37's ``outputs`` / ``inputs``) map one to one onto the
fields here; ``config.workflows`` parses and checks them, ``squad.builder`` builds the same
data from Python.

Owns: the shape of a definition and its content digest. Does not own: parsing or validating
it (``config.workflows``, ``squad.validate``), rendering templates (``squad.templates``),
running it (``squad.driver``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agentloom.canonical import sorted_json

__all__ = ["AgentNode", "ArtifactGrant", "CapabilityNode", "Edge", "JoinMode", "Node", "OnError",
           "WaitNode", "WorkflowSpec"]

JoinMode: TypeAlias = Literal["all", "any"]
OnError: TypeAlias = Literal["route", "retry_with_feedback"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactGrant:
    """``inputs: {from: NODE, files: [GLOB, …]}`` (issue 37): the artifacts of ``from``'s
    latest succeeded activation whose paths match one of ``files`` (default: all) are written
    read only into this node's inputs folder, under ``<from>/<path>``."""

    source: str
    files: tuple[str, ...] = ("**",)

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.source, "files": list(self.files)}


def _artifact_keys(outputs: tuple[str, ...], inputs: tuple[ArtifactGrant, ...]) -> dict[str, Any]:
    """A node's ``outputs`` / ``inputs`` keys, only when set (a node without them keeps the
    digest it had before artifacts existed)."""
    out: dict[str, Any] = {}
    if outputs:
        out["outputs"] = {"files": list(outputs)}
    if inputs:
        out["inputs"] = [g.to_dict() for g in inputs]
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityNode:
    """One capability call (``capability: exec``) with templated ``args``; it runs under the
    workflow's owner in the workflow's own workspace. Its output is the tool result's text."""

    name: str
    capability: str
    args: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    """Globs (relative to its work folder) of the files it hands on as artifacts (issue 37)."""
    inputs: tuple[ArtifactGrant, ...] = ()
    """The artifacts of earlier nodes it is granted (issue 37)."""

    def to_dict(self) -> dict[str, Any]:
        return {"capability": self.capability, "args": dict(self.args),
                **_artifact_keys(self.outputs, self.inputs)}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentNode:
    """One invocation of a configured agent on a templated ``input`` (input_only: its own
    workspace folder, no session). ``history``: ``none``, or an explicit grant
    ``{"session": NAME}`` — the agent's earlier turns in that session of its own come before
    the input (read only: the node still works in its own folder, never the session's).
    Its output is the agent's final answer."""

    name: str
    agent: str
    input: str = "{{ input.task }}"
    history: Literal["none"] | Mapping[str, str] = "none"
    outputs: tuple[str, ...] = ()
    """Globs (relative to its work folder) of the files it hands on as artifacts (issue 37)."""
    inputs: tuple[ArtifactGrant, ...] = ()
    """The artifacts of earlier nodes it is granted (issue 37)."""

    @property
    def history_session(self) -> str | None:
        """The session whose history the node is granted, if any."""
        return None if isinstance(self.history, str) else self.history["session"]

    def to_dict(self) -> dict[str, Any]:
        history = self.history if isinstance(self.history, str) else dict(self.history)
        return {"agent": self.agent, "input": self.input, "history": history,
                **_artifact_keys(self.outputs, self.inputs)}


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitNode:
    """A wait for a person (``wait: approval``) asking a templated ``question``: its output is
    ``approved`` or ``rejected``; an edge's ``when`` routes on it. Or (issue 37) a wait for a
    mailbox message (``wait: message``) to ``for_node`` (YAML ``for``; default: this node),
    from ``from_node`` (YAML ``from``) when given: its output is the message's body
    (``squad.waits``)."""

    name: str
    wait: Literal["approval", "message"] = "approval"
    question: str = ""
    for_node: str | None = None
    from_node: str | None = None

    @property
    def recipient(self) -> str:
        """Whose inbox a message wait watches."""
        return self.for_node or self.name

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"wait": self.wait, "question": self.question}
        if self.wait == "message":  # an approval wait keeps the digest it had before
            out["for"] = self.recipient
            if self.from_node is not None:
                out["from"] = self.from_node
        return out


Node: TypeAlias = CapabilityNode | AgentNode | WaitNode


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """``from`` → ``to``. Several sources join (``join: all`` waits for every one, ``any`` for
    the first); several targets fan out. ``when``: the edge fires only when its source's output
    (stripped) equals it. ``on_error``: an error edge — it fires when its source *failed*
    (``route``: the target runs next; ``retry_with_feedback``: the target runs again with the
    failure appended to its input). ``max``: how often the edge may fire in one run (a cycle
    must have an edge with a ``max``)."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    join: JoinMode = "all"
    when: str | None = None
    on_error: OnError | None = None
    max: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": list(self.sources), "to": list(self.targets),
                               "join": self.join}
        for key, value in (("when", self.when), ("on_error", self.on_error), ("max", self.max)):
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowSpec:
    """A named workflow: its nodes (in definition order) and edges."""

    name: str
    nodes: Mapping[str, Node]
    edges: tuple[Edge, ...] = ()
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "nodes": {n: node.to_dict() for n, node in self.nodes.items()},
                "edges": [e.to_dict() for e in self.edges]}

    @property
    def digest(self) -> str:
        """A content digest of the definition: a changed workflow is a new release."""
        return hashlib.sha256(sorted_json(self.to_dict()).encode()).hexdigest()[:16]

    def agents(self) -> tuple[str, ...]:
        """The agents its AgentNodes invoke, each once, in node order."""
        seen: dict[str, None] = {}
        for node in self.nodes.values():
            if isinstance(node, AgentNode):
                seen.setdefault(node.agent, None)
        return tuple(seen)

    def capabilities(self) -> tuple[str, ...]:
        """The capability keys its CapabilityNodes call, each once, in node order."""
        seen: dict[str, None] = {}
        for node in self.nodes.values():
            if isinstance(node, CapabilityNode):
                seen.setdefault(node.capability, None)
        return tuple(seen)
