"""The checks on a workflow's graph, shared by the YAML (``config.workflows``) and the Python
builder (``squad.validate``), and the order its nodes start in.

Both sides hand the checks the same neutral view: ``GraphNode`` (a node's name, kind, what it
invokes and its template texts) and anything shaped like ``GraphEdge`` (the pydantic
``EdgeConfig`` and ``squad.spec.Edge`` both are). Config is core and may not import
``squad``; this module is where the graph rules live once::

    config.workflows (YAML) ──┐
                              ├─► graph_problems / start_nodes / topological_order
    squad.validate (spec) ────┘

Run order: every edge is a set of *arcs* source → target. An arc of an edge with ``max`` whose
target leads back to its source is a **bounded back arc** (a loop's way back, e.g. a
``retry_with_feedback`` edge to an earlier node); the other arcs are *forward* arcs. On a
checked workflow the forward arcs have no cycle. **Start nodes** are the nodes no forward arc
leads into; a node can run only after the nodes with a forward path to it (its *ancestors*),
and a template may name only those.

Owns: the graph rules and their messages. Does not own: the shape of one key (pydantic, in
``config.workflows``), parsing templates (``config._templates``), running (``squad.driver``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from agentloom.config._problems import Problem, did_you_mean, key_path
from agentloom.config._templates import TemplateError, references
from agentloom.errors import ConfigError

__all__ = ["GraphEdge", "GraphNode", "NodeKind", "graph_problems", "start_nodes", "topological_order"]

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,57}$")
"""A workflow or node name: a letter, then letters, digits, ``_`` or ``-`` (at most 58)."""

NodeKind = Literal["agent", "capability", "wait"]
Location = tuple[str | int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphNode:
    """What the checks need of one node: its ``kind`` key and that key's value (the agent, the
    capability key or the wait), and each template text with its location under the node
    (``("input",)``, ``("args", "argv", 1)``)."""

    name: str
    kind: NodeKind
    target: str
    texts: tuple[tuple[Location, str], ...] = ()


class GraphEdge(Protocol):
    """An edge as the checks read it."""

    @property
    def sources(self) -> tuple[str, ...]: ...
    @property
    def targets(self) -> tuple[str, ...]: ...
    @property
    def join(self) -> str: ...
    @property
    def when(self) -> str | None: ...
    @property
    def on_error(self) -> str | None: ...
    @property
    def max(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class _Arc:
    source: str
    target: str
    edge: int


def _arcs(names: Collection[str], edges: Sequence[GraphEdge]) -> list[_Arc]:
    """Every source → target pair of every edge between nodes that exist."""
    return [_Arc(s, t, i) for i, e in enumerate(edges) for s in e.sources for t in e.targets
            if s in names and t in names]


def _reach(start: str, arcs: Sequence[_Arc]) -> set[str]:
    """The nodes a path of one or more arcs leads to from ``start``."""
    after: dict[str, list[str]] = {}
    for arc in arcs:
        after.setdefault(arc.source, []).append(arc.target)
    seen: set[str] = set()
    todo = list(after.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(after.get(node, ()))
    return seen


def _forward(names: Collection[str], edges: Sequence[GraphEdge]) -> list[_Arc]:
    arcs = _arcs(names, edges)
    reach = {n: _reach(n, arcs) for n in names}
    return [a for a in arcs
            if not (edges[a.edge].max is not None and a.source in reach[a.target] | {a.target})]


def start_nodes(names: Sequence[str], edges: Sequence[GraphEdge]) -> tuple[str, ...]:
    """The nodes no forward arc leads into, in definition order: they run first."""
    entered = {a.target for a in _forward(names, edges)}
    return tuple(n for n in names if n not in entered)


def topological_order(names: Sequence[str], edges: Sequence[GraphEdge]) -> tuple[str, ...]:
    """Every node after its ancestors (bounded back arcs ignored), ties in definition order.

    Raises:
        ConfigError: the forward arcs have a cycle (a workflow that does not pass the checks).
    """
    arcs = _forward(names, edges)
    waiting = {n: {a.source for a in arcs if a.target == n} for n in names}
    order: list[str] = []
    while len(order) < len(names):
        ready = [n for n in names if n not in order and not waiting[n] - set(order)]
        if not ready:
            raise ConfigError("the workflow has a cycle without a `max`; check it first "
                              "(squad.validate.problems)")
        order.append(ready[0])
    return tuple(order)


# -- the checks ----------------------------------------------------------------------------------


def graph_problems(
    workflow: str, nodes: Mapping[str, GraphNode], edges: Sequence[GraphEdge], *,
    agents: Collection[str] | None = None,
    capability_problem: Callable[[str], str | None] | None = None,
) -> list[Problem]:
    """Every problem of workflow ``workflow``'s graph, each at its key path under
    ``workflows.<workflow>``: bad names, unknown agents (when ``agents`` is given) or
    capabilities (``capability_problem(key)`` says what is wrong, or None), edges naming no
    node or breaking an edge rule, no start node, cycles without a ``max``, unreachable
    nodes, and templates that name nothing or a node that cannot have run before theirs."""
    at = ("workflows", workflow)
    problems: list[Problem] = []
    if not NAME.match(workflow):
        problems.append(Problem(key_path(at), "a workflow name must start with a letter and hold "
                                "only letters, digits, '_' or '-' (at most 58 characters); rename it"))
    for name, node in nodes.items():
        where = (*at, "nodes", name)
        if not NAME.match(name):
            problems.append(Problem(key_path(where), "a node name must start with a letter and hold "
                                    "only letters, digits, '_' or '-' (at most 58 characters); "
                                    "rename it"))
        if node.kind == "agent" and agents is not None and node.target not in agents:
            known = sorted(agents)
            problems.append(Problem(key_path((*where, "agent")), f"no agent named {node.target!r}; "
                                    f"{did_you_mean(node.target, known)}defined: "
                                    f"{', '.join(known) or 'none'}"))
        if node.kind == "capability" and capability_problem is not None:
            wrong = capability_problem(node.target)
            if wrong:
                problems.append(Problem(key_path((*where, "capability")), wrong))
    names = list(nodes)
    problems += _edge_problems(at, names, edges)
    cycles = _cycle_problems(at, names, edges)
    starts = start_nodes(names, edges)
    if names and not starts:
        problems.append(Problem(key_path((*at, "edges")), "no start node: an edge leads into every "
                                "node, so none can run first; remove the edge into the node that "
                                "should start, or give a loop's way back a `max`"))
    problems += cycles
    forward = _forward(names, edges)
    reached = set(starts).union(*(_reach(s, forward) for s in starts))
    for name in names if starts else ():  # no start node: that one problem says it all
        if name not in reached:
            problems.append(Problem(key_path((*at, "nodes", name)), "unreachable: no path of edges "
                                    f"leads to it from a start node ({', '.join(starts) or 'none'}); "
                                    "add an edge into it from a node that runs, or remove it"))
    after = {n: _reach(n, forward) for n in names}
    ancestors = {n: {a for a in names if n in after[a]} for n in names}
    for name, node in nodes.items():
        problems += _template_problems((*at, "nodes", name), node, names, ancestors[name])
    return problems


def _edge_problems(at: Location, names: Sequence[str], edges: Sequence[GraphEdge]) -> list[Problem]:
    problems: list[Problem] = []
    for i, edge in enumerate(edges):
        where = (*at, "edges", i)
        for key, listed in (("from", edge.sources), ("to", edge.targets)):
            for name in listed:
                if name not in names:
                    problems.append(Problem(key_path((*where, key)), f"no node named {name!r}; "
                                            f"{did_you_mean(name, names)}nodes: "
                                            f"{', '.join(names) or 'none'}"))
            twice = sorted({n for n in listed if listed.count(n) > 1})
            if twice:
                problems.append(Problem(key_path((*where, key)), f"{twice[0]!r} is listed twice; "
                                        "remove one"))
        if edge.on_error is not None:
            if len(edge.sources) != 1:
                problems.append(Problem(key_path((*where, "from")), "an error edge (on_error) routes "
                                        "the failure of one node: give exactly one node in `from`"))
            if edge.when is not None:
                problems.append(Problem(key_path((*where, "when")), "an error edge fires when its "
                                        "source failed, and a failure has no output to compare: "
                                        "remove `when` or `on_error`"))
        elif edge.when is not None and len(edge.sources) != 1:
            problems.append(Problem(key_path((*where, "when")), "`when` compares the output of "
                                    "one node: an edge with `when` has exactly one node in `from`"))
        if edge.max is not None and edge.max < 1:
            problems.append(Problem(key_path((*where, "max")), f"must be at least 1 (got {edge.max})"))
    return problems


def _cycle_problems(at: Location, names: Sequence[str], edges: Sequence[GraphEdge]) -> list[Problem]:
    """One problem per cycle of arcs of edges without ``max`` — per group of nodes that all
    lead to each other, and per edge from a node to itself — at the cycle's last edge."""
    unbounded = [a for a in _arcs(names, edges) if edges[a.edge].max is None]
    reach = {n: _reach(n, unbounded) for n in names}
    found: list[tuple[int, str]] = []
    grouped: set[str] = set()
    for node in names:
        group = [n for n in names if n != node and n in reach[node] and node in reach[n]]
        if not group or node in grouped:
            continue
        members = {node, *group}
        grouped |= members
        inside = [a for a in unbounded if a.source in members and a.target in members
                  and a.source != a.target]
        last = max(inside, key=lambda a: a.edge)
        loop = _path(last.target, last.source, inside) or [last.source]
        found.append((last.edge, " → ".join([last.source, *loop])))
    found += [(a.edge, f"{a.source} → {a.source}") for a in unbounded if a.source == a.target]
    return [Problem(key_path((*at, "edges", edge)), f"edges form a cycle with no bound ({shown}); "
                    "give one of its edges `max: N` (how often it may fire in one run)")
            for edge, shown in sorted(found)]


def _path(start: str, end: str, arcs: Sequence[_Arc]) -> list[str] | None:
    """The nodes of a shortest path start → … → end (both included), or None."""
    before: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        node = todo.pop(0)
        if node == end:
            path = [node]
            while (prev := before[path[-1]]) is not None:
                path.append(prev)
            return path[::-1]
        for arc in arcs:
            if arc.source == node and arc.target not in before:
                before[arc.target] = node
                todo.append(arc.target)
    return None


def _template_problems(where: Location, node: GraphNode, names: Sequence[str],
                       ancestors: Collection[str]) -> list[Problem]:
    problems: list[Problem] = []
    for loc, text in node.texts:
        path = key_path((*where, *loc))
        try:
            named = sorted(references(text))
        except TemplateError as exc:
            problems.append(Problem(path, str(exc)))
            continue
        for ref in named:
            if ref not in names:
                problems.append(Problem(path, f"{{{{ nodes.{ref}.output }}}} names no node; "
                                        f"{did_you_mean(ref, names)}nodes: {', '.join(names)}"))
            elif ref == node.name:
                problems.append(Problem(path, f"{{{{ nodes.{ref}.output }}}}: a node cannot use its "
                                        "own output; name a node before it"))
            elif ref not in ancestors:
                before = [n for n in names if n in ancestors]
                problems.append(Problem(path, f"{{{{ nodes.{ref}.output }}}}: node {ref!r} cannot "
                                        f"have run before {node.name!r} (no path of edges leads "
                                        f"from it to {node.name!r}); name a node before it "
                                        f"({', '.join(before) or f'none: {node.name!r} starts'}) "
                                        "or add an edge"))
    return problems
