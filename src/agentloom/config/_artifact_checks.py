"""The checks on a workflow's artifacts (issue 37): ``outputs``, ``inputs`` and ``{{
nodes.NAME.artifacts }}``, shared by the YAML loader and the Python builder through
``config._workflow_graph.graph_problems``.

- a glob (``outputs.files[i]``, ``inputs[j].files[i]``) is non-empty, relative (no leading
  ``/`` or ``~``), holds no ``..`` component and no backslash;
- ``inputs[j].from`` names a node upstream of this one (an edge path leads from it here) that
  can have artifacts: it declares ``outputs``, or it is an agent node whose agent lists
  ``artifact.publish`` in its ``tools``;
- a template naming ``{{ nodes.NAME.artifacts }}`` names such a node.

Whether an agent lists ``artifact.publish`` is known where the agents are (the YAML loader
passes ``publishers``); where it is not (``None``), every agent node may publish.

Owns: those rules and their messages. Does not own: the graph's reachability
(``config._workflow_graph``), parsing templates (``config._templates``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from agentloom.config._problems import Problem, did_you_mean, key_path
from agentloom.config._templates import TemplateError, artifact_references

if TYPE_CHECKING:
    from agentloom.config._workflow_graph import GraphNode, Location

__all__ = ["PUBLISH_TOOL", "artifact_problems", "glob_problem"]

PUBLISH_TOOL = "artifact.publish"
"""The tool an agent lists to publish files of its node as artifacts."""


def glob_problem(glob: str) -> str | None:
    """What is wrong with an artifact glob, or None."""
    if not glob.strip():
        return "a glob must not be empty; name files below the node's folder, e.g. 'src/**'"
    if glob.startswith(("/", "~")) or "\\" in glob:
        return (f"{glob!r} must be relative to the node's folder (no leading '/' or '~', no "
                "backslash); e.g. 'src/**'")
    if ".." in glob.split("/"):
        return f"{glob!r} must not hold '..': an artifact is a file below the node's folder"
    return None


def can_have_artifacts(node: GraphNode, publishers: Collection[str] | None) -> bool:
    """Whether ``node`` can hand artifacts on: it declares ``outputs``, or its agent may
    publish (lists ``artifact.publish``; any agent when ``publishers`` is None)."""
    if node.outputs:
        return True
    return node.kind == "agent" and (publishers is None or node.target in publishers)


def artifact_problems(at: Location, nodes: Mapping[str, GraphNode], *,
                      leads: Callable[[str, str], bool],
                      publishers: Collection[str] | None = None) -> list[Problem]:
    """Every artifact problem of the workflow at ``at``; ``leads(a, b)``: an edge path leads
    from node ``a`` to node ``b``."""
    problems: list[Problem] = []
    names: Sequence[str] = list(nodes)
    for name, node in nodes.items():
        where = (*at, "nodes", name)
        for i, glob in enumerate(node.outputs):
            wrong = glob_problem(glob)
            if wrong:
                problems.append(Problem(key_path((*where, "outputs", "files", i)), wrong))
        for j, (source, files) in enumerate(node.inputs):
            grant = (*where, "inputs", j)
            for i, glob in enumerate(files):
                wrong = glob_problem(glob)
                if wrong:
                    problems.append(Problem(key_path((*grant, "files", i)), wrong))
            wrong = _source_problem(name, source, nodes, names, leads, publishers)
            if wrong:
                problems.append(Problem(key_path((*grant, "from")), wrong))
        for loc, text in node.texts:
            try:
                named = sorted(artifact_references(text))
            except TemplateError:
                continue  # the template checks name it
            for ref in named:
                if ref in nodes and not can_have_artifacts(nodes[ref], publishers):
                    problems.append(Problem(key_path((*where, *loc)), (
                        f"{{{{ nodes.{ref}.artifacts }}}}: node {ref!r} hands on no artifacts; "
                        f"give it `outputs: {{files: [GLOB]}}`{_or_publish(nodes[ref])}")))
    return problems


def _or_publish(node: GraphNode) -> str:
    return (f" or list {PUBLISH_TOOL!r} in agent {node.target!r}'s tools"
            if node.kind == "agent" else "")


def _source_problem(name: str, source: str, nodes: Mapping[str, GraphNode],
                    names: Sequence[str], leads: Callable[[str, str], bool],
                    publishers: Collection[str] | None) -> str | None:
    if source not in nodes:
        return (f"no node named {source!r}; {did_you_mean(source, names)}nodes: "
                f"{', '.join(names)}")
    if source == name:
        return "a node cannot be granted its own artifacts; name a node before it"
    if not leads(source, name):
        return (f"node {source!r} is not upstream of {name!r} (no path of edges leads from it "
                f"to {name!r}); add an edge or name a node before it")
    if not can_have_artifacts(nodes[source], publishers):
        return (f"node {source!r} hands on no artifacts; give it `outputs: {{files: [GLOB]}}`"
                f"{_or_publish(nodes[source])}")
    return None
