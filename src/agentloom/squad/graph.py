"""The state of a workflow's graph, advanced wave by wave (issue 20). Pure: no I/O.

A run advances in *waves*: every activation that is ready runs (concurrently), and when the
whole wave settled its outcomes are applied in node definition order, which readies the next
wave. The same outcomes therefore always give the same activations with the same attempt
numbers — so after a crash the driver rebuilds the state by applying the committed outcomes
again, and each activation keeps its logical key (``<run>/n/<node>/<attempt>``).

Edges (docs/workflows.md):

- start nodes make the first wave: the nodes no edge leads into, an edge with ``max`` that
  closes a cycle (a bounded back edge) not counted (``squad.validate.start_nodes``) — a node
  only an error edge leads into runs only when that edge fires;
- a normal edge fires when its source succeeded and ``when`` (if set) equals the source's
  output, stripped. With several sources, ``join: all`` fires once every source arrived since
  it last fired; ``join: any`` fires on the first arrival and absorbs the others until every
  source arrived (then it is armed again);
- an error edge fires when its source failed; ``retry_with_feedback`` gives the target the
  failure as feedback appended to its input;
- an edge fires at most ``max`` times in a run (no ``max``: unbounded — validation refuses
  cycles without one);
- a failed activation that no error edge takes fails the workflow, but the wave's other
  activations and what they ready still run (a failure never ends its siblings);
- the workflow's output is the output of the last activation that finished (the last one of
  the last wave, in definition order).

Owns: readiness, firing, attempt numbers, the final state. Does not own: running a node or
storing its outcome (``squad.driver``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agentloom.errors import OperationError
from agentloom.squad.results import NodeOutcome
from agentloom.squad.spec import Edge, WorkflowSpec
from agentloom.squad.validate import start_nodes

__all__ = ["Activation", "GraphState"]


@dataclass(frozen=True, slots=True)
class Activation:
    """One run of a node: its attempt number (1, 2, … in this run) and the feedback of the
    failure that sent the run here (``retry_with_feedback``)."""

    node: str
    attempt: int
    feedback: str | None = None


@dataclass(slots=True)
class GraphState:
    """Which nodes ran with what outcome, and what runs next."""

    spec: WorkflowSpec
    starts: tuple[str, ...] | None = None  # its start nodes, when the caller knows them
    outcomes: dict[str, list[NodeOutcome]] = field(default_factory=dict)
    fired: dict[int, int] = field(default_factory=dict)  # edge index -> times fired
    arrived: dict[int, set[str]] = field(default_factory=dict)  # edge index -> sources in
    absorbing: set[int] = field(default_factory=set)  # ``any`` edges that already fired
    failures: list[tuple[str, OperationError]] = field(default_factory=list)  # unrouted
    last: NodeOutcome | None = None
    last_node: str | None = None
    _started: dict[str, int] = field(default_factory=dict)  # node -> activations handed out
    _latest: dict[str, str] = field(default_factory=dict)  # node -> last succeeded output
    _order: dict[str, int] = field(default_factory=dict)  # node -> its definition position
    _edges_from: dict[str, list[int]] = field(default_factory=dict)  # node -> its edges
    _sources: dict[int, int] = field(default_factory=dict)  # edge index -> its distinct sources

    def __post_init__(self) -> None:
        self._order = {name: i for i, name in enumerate(self.spec.nodes)}
        for i, edge in enumerate(self.spec.edges):
            self._sources[i] = len(set(edge.sources))
            for source in edge.sources:
                self._edges_from.setdefault(source, []).append(i)

    def first_wave(self) -> list[Activation]:
        starts = self.starts if self.starts is not None else start_nodes(self.spec)
        return [self._activate(n) for n in starts]

    def latest_outputs(self) -> dict[str, str]:
        """Each node's output of its last succeeded activation (what templates read)."""
        return dict(self._latest)

    @property
    def outputs(self) -> Mapping[str, str]:
        """``latest_outputs`` as a read-only view, not a copy (a node of a wide wave reads it
        without copying every output before it); it changes when ``apply`` runs."""
        return MappingProxyType(self._latest)

    def apply(self, wave: list[tuple[Activation, NodeOutcome]]) -> list[Activation]:
        """Record a settled wave's outcomes (any order given: applied in definition order) and
        return the next wave. A ``waiting`` outcome is never applied (the driver resolves
        it first)."""
        order = self._order
        nxt: list[Activation] = []
        for act, outcome in sorted(wave, key=lambda p: order[p[0].node]):
            assert outcome.status != "waiting", "a waiting node is resolved before it is applied"
            self.outcomes.setdefault(act.node, []).append(outcome)
            if outcome.succeeded:
                self._latest[act.node] = outcome.output
            self.last, self.last_node = outcome, act.node
            nxt.extend(self._fire(act.node, outcome))
        # one activation per node per wave: two edges into one node in a wave run it once
        seen: dict[str, Activation] = {}
        for act in nxt:
            if act.node not in seen:
                seen[act.node] = act
            else:
                self._started[act.node] -= 1  # give the number back
        return sorted(seen.values(), key=lambda a: order[a.node])

    def _fire(self, node: str, outcome: NodeOutcome) -> list[Activation]:
        out: list[Activation] = []
        routed = False
        for i in self._edges_from.get(node, ()):
            edge = self.spec.edges[i]
            if edge.on_error is not None:
                if outcome.succeeded or not self._may_fire(i, edge):
                    continue
                routed = True
                feedback = None
                if edge.on_error == "retry_with_feedback" and outcome.error is not None:
                    feedback = f"[workflow] node {node!r} failed: {outcome.error.message}"
                out.extend(self._take(i, edge, feedback))
                continue
            if not outcome.succeeded:
                continue
            if edge.when is not None and outcome.output.strip() != edge.when:
                continue
            arrived = self.arrived.setdefault(i, set())
            arrived.add(node)
            complete = len(arrived) == self._sources[i]  # only its sources arrive
            if edge.join == "any" and len(edge.sources) > 1:
                if i in self.absorbing:
                    if complete:
                        self.absorbing.discard(i)
                        arrived.clear()
                    continue
                if not complete:
                    self.absorbing.add(i)
                else:
                    arrived.clear()
                if self._may_fire(i, edge):
                    out.extend(self._take(i, edge, None))
                continue
            if complete:
                arrived.clear()
                if self._may_fire(i, edge):
                    out.extend(self._take(i, edge, None))
        if not outcome.succeeded and not routed:
            assert outcome.error is not None
            self.failures.append((node, outcome.error))
        return out

    def _may_fire(self, i: int, edge: Edge) -> bool:
        return edge.max is None or self.fired.get(i, 0) < edge.max

    def _take(self, i: int, edge: Edge, feedback: str | None) -> list[Activation]:
        self.fired[i] = self.fired.get(i, 0) + 1
        return [self._activate(t, feedback) for t in edge.targets]

    def _activate(self, node: str, feedback: str | None = None) -> Activation:
        self._started[node] = self._started.get(node, 0) + 1
        return Activation(node, self._started[node], feedback)
