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

Every check is linear in the size of the graph (nodes plus arcs) for the shapes workflows
have — a fan-out of N nodes and its join cost N, not N² (issue #34): adjacency is built once
per check, reachability is computed only from the nodes a rule asks about, cycles are found as
strongly connected components.

Owns: the graph rules and their messages. Does not own: the shape of one key (pydantic, in
``config.workflows``), parsing templates (``config._templates``), running (``squad.driver``).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from agentloom.config._artifact_checks import artifact_problems
from agentloom.config._problems import Problem, did_you_mean, key_path
from agentloom.config._templates import TemplateError, artifact_references, references
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
    outputs: tuple[str, ...] = ()
    """Its ``outputs.files`` globs (issue 37)."""
    inputs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Its ``inputs`` grants: ``(from, files)`` each (issue 37)."""


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
    known = set(names)
    return [_Arc(s, t, i) for i, e in enumerate(edges) for s in e.sources for t in e.targets
            if s in known and t in known]


def _after(arcs: Sequence[_Arc]) -> dict[str, list[str]]:
    """Each node's arc targets, in arc order (the adjacency every walk of one check shares)."""
    after: dict[str, list[str]] = {}
    for arc in arcs:
        after.setdefault(arc.source, []).append(arc.target)
    return after


def _reach(starts: Collection[str], after: Mapping[str, Sequence[str]]) -> set[str]:
    """The nodes a path of one or more arcs leads to from one of ``starts``."""
    seen: set[str] = set()
    todo = [t for s in starts for t in after.get(s, ())]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(after.get(node, ()))
    return seen


class _Reach:
    """``_reach`` of one node at a time, each computed once, on demand."""

    def __init__(self, arcs: Sequence[_Arc]) -> None:
        self.after = _after(arcs)
        self._pairs = {(a.source, a.target) for a in arcs}
        self._of: dict[str, set[str]] = {}

    def __call__(self, node: str) -> set[str]:
        found = self._of.get(node)
        if found is None:
            found = self._of[node] = _reach((node,), self.after)
        return found

    def leads(self, source: str, target: str) -> bool:
        """Whether a path of one or more arcs leads from ``source`` to ``target``."""
        return (source, target) in self._pairs or target in self(source)  # one arc: no walk


def _forward(names: Collection[str], edges: Sequence[GraphEdge]) -> list[_Arc]:
    arcs = _arcs(names, edges)
    if all(edges[a.edge].max is None for a in arcs):
        return arcs
    reach = _Reach(arcs)  # only what a bounded arc's target reaches is asked
    return [a for a in arcs if not (edges[a.edge].max is not None
                                    and (a.source == a.target or reach.leads(a.target, a.source)))]


def start_nodes(names: Sequence[str], edges: Sequence[GraphEdge]) -> tuple[str, ...]:
    """The nodes no forward arc leads into, in definition order: they run first."""
    entered = {a.target for a in _forward(names, edges)}
    return tuple(n for n in names if n not in entered)


def topological_order(names: Sequence[str], edges: Sequence[GraphEdge]) -> tuple[str, ...]:
    """Every node after its ancestors (bounded back arcs ignored), ties in definition order.

    Raises:
        ConfigError: the forward arcs have a cycle (a workflow that does not pass the checks).
    """
    position = {n: i for i, n in enumerate(names)}
    after: dict[str, set[str]] = {n: set() for n in names}
    for arc in _forward(names, edges):
        after[arc.source].add(arc.target)
    waiting = Counter(t for targets in after.values() for t in targets)  # distinct sources
    ready = [i for i, n in enumerate(names) if not waiting[n]]
    order: list[str] = []
    while ready:  # the first ready node in definition order, each time
        node = names[heapq.heappop(ready)]
        order.append(node)
        for target in after[node]:
            waiting[target] -= 1
            if not waiting[target]:
                heapq.heappush(ready, position[target])
    if len(order) < len(names):
        raise ConfigError("the workflow has a cycle without a `max`; check it first "
                          "(squad.validate.problems)")
    return tuple(order)


# -- the checks ----------------------------------------------------------------------------------


def graph_problems(
    workflow: str, nodes: Mapping[str, GraphNode], edges: Sequence[GraphEdge], *,
    agents: Collection[str] | None = None,
    capability_problem: Callable[[str], str | None] | None = None,
    publishers: Collection[str] | None = None,
) -> list[Problem]:
    """Every problem of workflow ``workflow``'s graph, each at its key path under
    ``workflows.<workflow>``: bad names, unknown agents (when ``agents`` is given) or
    capabilities (``capability_problem(key)`` says what is wrong, or None), edges naming no
    node or breaking an edge rule, no start node, cycles without a ``max``, unreachable
    nodes, and templates that name nothing or a node that cannot have run before theirs;
    artifact globs, grants and ``artifacts`` templates (``config._artifact_checks``; an agent
    may publish when it is in ``publishers``, any agent when that is None)."""
    at = ("workflows", workflow)
    problems: list[Problem] = []
    defined = None if agents is None else set(agents)
    if not NAME.match(workflow):
        problems.append(Problem(key_path(at), "a workflow name must start with a letter and hold "
                                "only letters, digits, '_' or '-' (at most 58 characters); rename it"))
    for name, node in nodes.items():
        where = (*at, "nodes", name)
        if not NAME.match(name):
            problems.append(Problem(key_path(where), "a node name must start with a letter and hold "
                                    "only letters, digits, '_' or '-' (at most 58 characters); "
                                    "rename it"))
        if node.kind == "agent" and defined is not None and node.target not in defined:
            known = sorted(defined)
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
    reach = _Reach(_forward(names, edges))
    reached = set(starts) | _reach(starts, reach.after)
    for name in names if starts else ():  # no start node: that one problem says it all
        if name not in reached:
            problems.append(Problem(key_path((*at, "nodes", name)), "unreachable: no path of edges "
                                    f"leads to it from a start node ({', '.join(starts) or 'none'}); "
                                    "add an edge into it from a node that runs, or remove it"))
    for name, node in nodes.items():
        problems += _template_problems((*at, "nodes", name), node, names, reach)
    if any(n.outputs or n.inputs or "artifacts" in "".join(t for _, t in n.texts)
           for n in nodes.values()):  # a workflow without artifacts pays nothing more
        problems += artifact_problems(at, nodes, leads=reach.leads, publishers=publishers)
    return problems


def _edge_problems(at: Location, names: Sequence[str], edges: Sequence[GraphEdge]) -> list[Problem]:
    problems: list[Problem] = []
    known = set(names)
    for i, edge in enumerate(edges):
        where = (*at, "edges", i)
        for key, listed in (("from", edge.sources), ("to", edge.targets)):
            for name in listed:
                if name not in known:
                    problems.append(Problem(key_path((*where, key)), f"no node named {name!r}; "
                                            f"{did_you_mean(name, names)}nodes: "
                                            f"{', '.join(names) or 'none'}"))
            twice = sorted(n for n, times in Counter(listed).items() if times > 1)
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
    group = {n: i for i, members in enumerate(_components(names, _after(unbounded)))
             for n in members}
    inside: dict[int, list[_Arc]] = {}  # the arcs within each group of two or more nodes
    for arc in unbounded:
        if arc.source != arc.target and group[arc.source] == group[arc.target]:
            inside.setdefault(group[arc.source], []).append(arc)
    found: list[tuple[int, str]] = []
    for arcs in inside.values():
        last = max(arcs, key=lambda a: a.edge)
        loop = _path(last.target, last.source, arcs) or [last.source]
        found.append((last.edge, " → ".join([last.source, *loop])))
    found += [(a.edge, f"{a.source} → {a.source}") for a in unbounded if a.source == a.target]
    return [Problem(key_path((*at, "edges", edge)), f"edges form a cycle with no bound ({shown}); "
                    "give one of its edges `max: N` (how often it may fire in one run)")
            for edge, shown in sorted(found)]


def _components(names: Sequence[str], after: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The strongly connected components of the graph ``after`` over ``names`` (nodes that all
    lead to each other), by Tarjan's algorithm without recursion: linear in nodes and arcs."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in names:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        walk = [(root, iter(after.get(root, ())))]
        while walk:
            node, targets = walk[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    walk.append((target, iter(after.get(target, ()))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:  # every target of ``node`` done
                walk.pop()
                if walk:
                    parent = walk[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    members: list[str] = []
                    while not members or members[-1] != node:
                        members.append(stack.pop())
                        on_stack.discard(members[-1])
                    found.append(members)
    return found


def _path(start: str, end: str, arcs: Sequence[_Arc]) -> list[str] | None:
    """The nodes of a shortest path start → … → end (both included), or None."""
    after = _after(arcs)
    before: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        node = todo.popleft()
        if node == end:
            path = [node]
            while (prev := before[path[-1]]) is not None:
                path.append(prev)
            return path[::-1]
        for target in after.get(node, ()):
            if target not in before:
                before[target] = node
                todo.append(target)
    return None


def _template_problems(where: Location, node: GraphNode, names: Sequence[str],
                       reach: _Reach) -> list[Problem]:
    """The problems of ``node``'s templates; a node it names must be one of its ancestors
    (``reach.leads(ref, node)``: asked only of the nodes named)."""
    problems: list[Problem] = []
    for loc, text in node.texts:
        path = key_path((*where, *loc))
        try:
            named = sorted(references(text))
            files = artifact_references(text)
        except TemplateError as exc:
            problems.append(Problem(path, str(exc)))
            continue
        for ref in named:
            field = "artifacts" if ref in files else "output"
            if ref not in names:
                problems.append(Problem(path, f"{{{{ nodes.{ref}.{field} }}}} names no node; "
                                        f"{did_you_mean(ref, names)}nodes: {', '.join(names)}"))
            elif ref == node.name:
                problems.append(Problem(path, f"{{{{ nodes.{ref}.{field} }}}}: a node cannot use its "
                                        "own output; name a node before it"))
            elif not reach.leads(ref, node.name):
                before = [n for n in names if reach.leads(n, node.name)]
                problems.append(Problem(path, f"{{{{ nodes.{ref}.{field} }}}}: node {ref!r} cannot "
                                        f"have run before {node.name!r} (no path of edges leads "
                                        f"from it to {node.name!r}); name a node before it "
                                        f"({', '.join(before) or f'none: {node.name!r} starts'}) "
                                        "or add an edge"))
    return problems
