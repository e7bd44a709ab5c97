"""Checking a ``WorkflowSpec`` (issue 20) — the same checks a ``workflows:`` entry gets at load.

``problems(spec, agents=…, capabilities=…)`` lists what is wrong, each as ``key.path: what;
how to fix`` under ``workflows.<name>`` (``nodes.review.input``, ``edges[2].to``):

- an edge naming no node; an error edge (``on_error``) with other than one source, or with
  ``when``; ``when`` on an edge of several sources; ``max`` below 1;
- a cycle none of whose edges has a ``max``; no start node; a node no path reaches;
- a template that names no node, its own node, or a node that cannot have run before it;
- an agent not in ``agents`` / a capability not in ``capabilities`` (each checked only when
  given).

``start_nodes`` and ``topological_order`` give the run order those checks assume: an arc of
an edge with ``max`` that leads back into a cycle (a loop's way back, a retry) is a *bounded
back arc* and ignored; start nodes are the nodes no other arc leads into.

Owns: the spec-side entry to the checks. Does not own: the rules themselves
(``config._workflow_graph``, shared with the YAML loader), the YAML-only checks (unknown keys,
MCP servers, commands: ``config.workflows``).
"""

from __future__ import annotations

from collections.abc import Collection

from agentloom.config import Problem, config_error, did_you_mean, key_path
from agentloom.config import workflows as graph
from agentloom.config.workflows import GraphNode, template_texts
from agentloom.squad.spec import AgentNode, CapabilityNode, Node, WorkflowSpec

__all__ = ["check", "graph_node", "problems", "start_nodes", "topological_order"]


def graph_node(node: Node) -> GraphNode:
    """The view of one node the graph checks read."""
    if isinstance(node, AgentNode | CapabilityNode):  # their artifacts too (issue 37)
        texts = (((("input",), node.input),) if isinstance(node, AgentNode)
                 else tuple(template_texts(node.args, ("args",))))
        return GraphNode(name=node.name, kind="agent" if isinstance(node, AgentNode)
                         else "capability",
                         target=node.agent if isinstance(node, AgentNode) else node.capability,
                         texts=texts, outputs=node.outputs,
                         inputs=tuple((g.source, g.files) for g in node.inputs))
    return GraphNode(name=node.name, kind="wait", target=node.wait,
                     texts=((("question",), node.question),))


def problems(spec: WorkflowSpec, *, agents: Collection[str] | None = None,
             capabilities: Collection[str] | None = None) -> list[Problem]:
    """Every problem of ``spec``, in definition order of what it concerns."""
    known = sorted(capabilities) if capabilities is not None else None
    offered = set(known or ())

    def capability_problem(key: str) -> str | None:
        if known is None or key in offered:
            return None
        listed = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
        return f"no capability {key!r}; {did_you_mean(key, known)}known: {listed or 'none'}"

    nodes = {name: graph_node(node) for name, node in spec.nodes.items()}
    found = graph.graph_problems(spec.name, nodes, spec.edges, agents=agents,
                           capability_problem=capability_problem)
    for name, node in spec.nodes.items():
        if node.name != name:
            found.append(Problem(key_path(("workflows", spec.name, "nodes", name)),
                                 f"the node under {name!r} is called {node.name!r}; give it its "
                                 "key's name"))
    return found


def check(spec: WorkflowSpec, *, agents: Collection[str] | None = None,
          capabilities: Collection[str] | None = None) -> WorkflowSpec:
    """``spec`` when it has no problem.

    Raises:
        ConfigError: listing every problem (``problems``).
    """
    found = problems(spec, agents=agents, capabilities=capabilities)
    if found:
        raise config_error(f"workflow {spec.name!r}", found)
    return spec


def start_nodes(spec: WorkflowSpec) -> tuple[str, ...]:
    """The nodes that run first: no arc but a bounded back arc leads into them (definition
    order)."""
    return graph.start_nodes(list(spec.nodes), spec.edges)


def topological_order(spec: WorkflowSpec) -> tuple[str, ...]:
    """Every node after the nodes with a path to it, bounded back arcs ignored (ties in
    definition order).

    Raises:
        ConfigError: a cycle without ``max`` (a spec that does not pass ``check``).
    """
    return graph.topological_order(list(spec.nodes), spec.edges)
