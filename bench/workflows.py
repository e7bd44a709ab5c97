"""Workflow benchmark (issue 20, acceptance 5): a linear workflow of trivial capability nodes on
SQLite, AgentLoom against the same graph in LangGraph with ``SqliteSaver``, in one run of this
script, side by side.

Run from the repository root, with the ``bench`` extra installed (``pip install -e
'.[dev,bench]'``)::

    python bench/workflows.py                  # 20 nodes, 20 measured runs each (~15 s)
    python bench/workflows.py --runs 50 --json
    python bench/workflows.py --memory         # also both sides without a durable store
    python bench/workflows.py --tmpfs          # every file on /dev/shm: no disk sync
    python bench/workflows.py --store postgres # AgentLoom on PostgreSQL, LangGraph on PostgresSaver
    python bench/workflows.py --check          # exit status 1 when a target is missed

The graph: ``--nodes`` nodes ``n000 → n001 → …``, each one call of a trivial tool that returns
``ok <length of its input>``; node 0 reads the task, node ``i`` the output of node ``i - 1``.

* **AgentLoom**: ``Workflow(...).capability(...)`` nodes with ``{{ nodes.PREV.output }}`` args,
  driven by ``Runtime.run(task, agent="workflow:…")`` on a SQLite file (WAL,
  ``synchronous=FULL``): every node is an operation of the recorded pipeline and its record is
  committed per node transition (``workflow_nodes``).
* **LangGraph**: a ``StateGraph`` with the same nodes and edges, the same work in each node,
  compiled with ``SqliteSaver`` on a file in the same folder (the saver's connection: WAL, SQLite's
  default ``synchronous=FULL``), a fresh ``thread_id`` per run, ``invoke`` with LangGraph's
  documented default durability, ``"async"`` (a step's checkpoint is written while the next
  step runs; ``invoke`` returns once every write finished). ``durability="sync"`` (each
  checkpoint written before the next step starts) is measured beside it for reference.

The runs alternate (one of each side in turn, ``gc.collect()`` before each) after
``--warmup`` unmeasured runs each. Printed: median and p90 ms per run, the median per node
(run / nodes), where a run's time goes (start to the first node's tool, tool to tool, the last
tool to the end), AgentLoom's commits per node, and the ratio of the medians AgentLoom /
LangGraph (default durability) against the target ≤ 0.5.

State bytes per node transition (always on SQLite files): for each ``--sizes`` graph (10, 20,
40 nodes) ``--bytes-runs`` runs on a fresh file. AgentLoom: the graph state a node adds (the
length of its ``workflow_nodes.data`` JSON and of the whole row), every byte the run added to
the store (the summed ``length()`` of every column of every table, after minus before) per
node, its marginal per node between two sizes, and the file's growth per node (after a
``wal_checkpoint(TRUNCATE)``); LangGraph: the thread's checkpoints and writes (``length()`` of
their columns) per step, marginal and file growth. Target: AgentLoom's bytes per node the same
at every size (spread ≤ 10 %).

Every figure printed is measured in this run; the targets are the only constants.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import itertools
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from peers.common import StepClock, missing, pg_url  # bench/ is sys.path[0]

from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Runtime
from agentloom.models.offline import TestModel
from agentloom.squad import Workflow, WorkflowSpec
from agentloom.squad.driver import WorkflowProgram, node_rows

TARGET_RATIO = 0.5
TARGET_BYTES_SPREAD = 0.10
TASK = "go"
TOOL = "step"
DISTRIBUTIONS = ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
                 "langgraph-checkpoint-postgres")


def node_name(i: int) -> str:
    return f"n{i:03d}"  # one width for every size: names never make a bigger graph's rows longer


def work(text: str) -> str:
    """The trivial work of every node, on both sides."""
    return f"ok {len(text)}"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- AgentLoom ----------------------------------------------------------------------------------
class StepInput(StrictInput):
    text: str


class Step(Tool[StepInput]):
    """The nodes' capability: marks the clock, returns ``work(text)``."""

    name = TOOL
    description = "Do the trivial work of one node."
    rerunnable = True  # a pure computation, like LangGraph's node function: no side effect

    def __init__(self) -> None:
        self.clock = StepClock()

    async def execute(self, args: StepInput, ctx: ToolContext) -> str:
        self.clock.tool(args.text)
        return work(args.text)


def line_workflow(nodes: int) -> WorkflowSpec:
    wf = Workflow(f"line{nodes}")
    for i in range(nodes):
        source = "{{ input.task }}" if i == 0 else f"{{{{ nodes.{node_name(i - 1)}.output }}}}"
        wf.capability(node_name(i), TOOL, args={"text": source})
        if i:
            wf.edge(node_name(i - 1), node_name(i))
    return wf.build()


class Loom:
    """One ``Runtime`` driving the ``nodes``-node workflow on ``url``, on an event loop of its
    own (``asyncio.Runner``): between two runs nothing of it runs while LangGraph is timed."""

    def __init__(self, url: str, workspaces: Path, nodes: int) -> None:
        self.nodes = nodes
        self.tool = Step()
        self.runner = asyncio.Runner()
        self.spec = line_workflow(nodes)
        self.rt: Runtime = self.runner.run(self._make(url, workspaces))

    async def _make(self, url: str, workspaces: Path) -> Runtime:
        program = WorkflowProgram(self.spec, tools=[self.tool])
        return Runtime([AgentSpec(name="main", model=TestModel())], store=url,
                       workspace_root=workspaces, programs=[program])

    def run(self) -> tuple[int, StepClock, str]:
        """One run: (ns, the clock of its tool entries, run id)."""
        self.tool.clock = clock = StepClock()
        t0 = time.perf_counter_ns()
        clock.start()
        result = self.runner.run(self.rt.run(TASK, agent=f"workflow:{self.spec.name}"))
        took = time.perf_counter_ns() - t0
        if result.status != "succeeded" or len(clock.lines) != self.nodes:
            raise RuntimeError(f"AgentLoom run {result.run_id} ended {result.status} after "
                               f"{len(clock.lines)} of {self.nodes} nodes: {result.error}")
        return took, clock, result.run_id

    def commits(self) -> int:
        return self.rt.kernel.coordinator.stats.transactions

    def close(self) -> None:
        try:
            self.runner.run(self.rt.aclose())
        finally:
            self.runner.close()


# -- LangGraph ----------------------------------------------------------------------------------
class LangGraphLine:
    """The same line as a ``StateGraph`` over ``{task, out}``, on ``saver`` (or none)."""

    def __init__(self, nodes: int, saver: Any, durability: str | None) -> None:
        from typing import TypedDict

        from langgraph.graph import END, START, StateGraph

        class State(TypedDict):
            task: str
            out: str

        self.nodes = nodes
        self.durability = durability
        self.clock = StepClock()

        def node(state: State) -> dict[str, str]:
            text = state["out"] or state["task"]
            self.clock.tool(text)
            return {"out": work(text)}

        builder = StateGraph(State)
        for i in range(nodes):
            builder.add_node(node_name(i), node)
        builder.add_edge(START, node_name(0))
        for i in range(1, nodes):
            builder.add_edge(node_name(i - 1), node_name(i))
        builder.add_edge(node_name(nodes - 1), END)
        self.graph: Any = builder.compile(checkpointer=saver)

    def run(self, thread_id: str | None = None) -> tuple[int, StepClock, str]:
        self.clock = clock = StepClock()
        thread_id = thread_id or uuid.uuid4().hex
        config = {"configurable": {"thread_id": thread_id}, "recursion_limit": self.nodes + 10}
        extra = {"durability": self.durability} if self.durability else {}
        t0 = time.perf_counter_ns()
        clock.start()
        result = self.graph.invoke({"task": TASK, "out": ""}, config, **extra)
        took = time.perf_counter_ns() - t0
        if len(clock.lines) != self.nodes or result["out"] != work(clock.lines[-1]):
            raise RuntimeError(f"LangGraph ran {len(clock.lines)} of {self.nodes} nodes")
        return took, clock, thread_id


@contextmanager
def sqlite_saver(path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()


@contextmanager
def postgres_saver(url: str) -> Iterator[Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    schema = f"bench_wf_lg_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row,
                                 options=f"-c search_path={schema}") as conn:
                saver = PostgresSaver(conn)
                saver.setup()
                yield saver
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


# -- timing -------------------------------------------------------------------------------------
Side = Callable[[], tuple[int, StepClock, str]]


def summarise(samples: list[tuple[int, StepClock, str]], nodes: int) -> dict[str, Any]:
    runs = sorted(ns for ns, _, _ in samples)
    starts = [c.marks[1] - c.marks[0] for _, c, _ in samples]
    between = [d for _, c, _ in samples for d in c.step_ns()[1:]]
    ends = [ns - (c.marks[-1] - c.marks[0]) for ns, c, _ in samples]
    median = statistics.median(runs) / 1e6
    return {"runs": len(runs), "median_ms": median,
            "p90_ms": runs[min(len(runs) - 1, round(0.9 * (len(runs) - 1)))] / 1e6,
            "per_node_ms": median / nodes,
            "start_ms": statistics.median(starts) / 1e6,
            "node_to_node_ms": statistics.median(between) / 1e6 if between else 0.0,
            "end_ms": statistics.median(ends) / 1e6}


def measure(sides: dict[str, Side], *, runs: int, warmup: int) -> dict[str, list[Any]]:
    for key, side in sides.items():
        log(f"… warm-up {key}")
        for _ in range(warmup):
            side()
    samples: dict[str, list[Any]] = {key: [] for key in sides}
    for i in range(runs):
        for key, side in sides.items():  # alternate run by run: drift and spikes hit all alike
            gc.collect()
            samples[key].append(side())
        if (i + 1) % 10 == 0:
            log(f"… {i + 1}/{runs} runs")
    return samples


# -- state bytes --------------------------------------------------------------------------------
def table_bytes(path: Path) -> dict[str, int]:
    """Every table's summed ``length()`` of every column of every row."""
    conn = sqlite3.connect(path)
    try:
        out = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                     "AND name NOT LIKE 'sqlite_%'").fetchall():
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            total = " + ".join(f'COALESCE(LENGTH("{c}"), 0)' for c in cols)
            out[table] = int(conn.execute(f'SELECT COALESCE(SUM({total}), 0) FROM "{table}"')
                             .fetchone()[0])
        return out
    finally:
        conn.close()


def file_size(path: Path) -> int:
    """The database file's size once its WAL is checkpointed into it and truncated."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.close()
    return path.stat().st_size


def loom_bytes(folder: Path, nodes: int, runs: int) -> dict[str, Any]:
    path = folder / f"bytes-loom-{nodes}.db"
    loom = Loom(f"sqlite:///{path}", folder / f"ws-bytes-{nodes}", nodes)
    try:
        loom.run()  # the store's one-off rows (migrations, release) are not a run's
        before, size0 = table_bytes(path), file_size(path)
        state, row = [], []
        for _ in range(runs):
            _, _, run_id = loom.run()
            for r in node_rows(loom.rt.store, run_id):
                state.append(len(json.dumps(r["data"], separators=(",", ":"))))
                row.append(len(json.dumps(r, separators=(",", ":"))))
        after, size1 = table_bytes(path), file_size(path)
    finally:
        loom.close()
    per_table = {t: (after.get(t, 0) - before.get(t, 0)) / (runs * nodes) for t in after}
    return {"nodes": nodes, "state_data_b": statistics.fmean(state),
            "state_row_b": statistics.fmean(row),
            "run_b_per_node": sum(per_table.values()),
            "run_b": sum(per_table.values()) * nodes,
            "per_table_b": {t: b for t, b in per_table.items() if b},
            "file_b_per_node": (size1 - size0) / (runs * nodes)}


def langgraph_bytes(folder: Path, nodes: int, runs: int) -> dict[str, Any]:
    path = folder / f"bytes-lg-{nodes}.db"
    with sqlite_saver(path) as saver:
        graph = LangGraphLine(nodes, saver, None)
        graph.run()
        size0 = file_size(path)
        threads = [graph.run()[2] for _ in range(runs)]
        conn = saver.conn
        marks = ",".join("?" * len(threads))
        checkpoints = conn.execute(
            "SELECT COUNT(*), SUM(LENGTH(checkpoint) + LENGTH(metadata)) FROM checkpoints "
            f"WHERE thread_id IN ({marks})", threads).fetchone()
        writes = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM writes "
            f"WHERE thread_id IN ({marks})", threads).fetchone()
        size1 = file_size(path)
    total = (checkpoints[1] + writes[1]) / runs
    return {"nodes": nodes, "run_b_per_node": total / nodes, "run_b": total,
            "checkpoints_per_run": checkpoints[0] / runs, "writes_per_run": writes[0] / runs,
            "file_b_per_node": (size1 - size0) / (runs * nodes)}


def with_marginals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add ``marginal_b_per_node``: (bytes of a run − those of the size before) / Δnodes."""
    for prev, row in itertools.pairwise(rows):
        row["marginal_b_per_node"] = (row["run_b"] - prev["run_b"]) / (row["nodes"] - prev["nodes"])
    return rows


def spread(values: list[float]) -> float:
    """(largest − smallest) / smallest; 0 for fewer than two values."""
    if len(values) < 2 or min(values) <= 0:
        return 0.0
    return (max(values) - min(values)) / min(values)


# -- printing -----------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         None)
    except OSError:
        pass
    versions = {}
    for name in DISTRIBUTIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {"cpus": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version, "load_1m": os.getloadavg()[0], "versions": versions}


LABELS = {"agentloom": "AgentLoom, {store}", "langgraph": "LangGraph + {saver}, durability=async "
          "(default)", "langgraph_sync": "LangGraph + {saver}, durability=sync",
          "agentloom_memory": "AgentLoom, memory://",
          "langgraph_memory": "LangGraph + InMemorySaver (default durability)"}


def print_report(doc: dict[str, Any], out: Any) -> None:
    m = doc["machine"]
    print(f"python {m['python']}, SQLite {m['sqlite']}, {m['cpus']} CPUs {m['cpu_model'] or ''}, "
          f"load {m['load_1m']:.2f}; " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
          file=out)
    print(f"\n{doc['nodes']}-node linear workflow, trivial capability nodes, {doc['runs']} runs "
          f"each after {doc['warmup']} warm-up, alternating; files in {doc['folder_kind']}",
          file=out)
    print(f"  {'':58} {'median ms':>10} {'p90 ms':>8} {'ms/node':>8} {'start':>7} "
          f"{'node→node':>9} {'end':>6}", file=out)
    names = {"store": doc["store_label"], "saver": doc["saver_label"]}
    for key, t in doc["timing"].items():
        print(f"  {LABELS[key].format(**names):58} {t['median_ms']:10.2f} {t['p90_ms']:8.2f} "
              f"{t['per_node_ms']:8.3f} {t['start_ms']:7.2f} {t['node_to_node_ms']:9.3f} "
              f"{t['end_ms']:6.2f}", file=out)
    print(f"  AgentLoom commits per node: {doc['commits_per_node']:.2f}", file=out)
    target = f"(target ≤ {TARGET_RATIO}×)" if doc["store"] == "sqlite" else "(no target here)"
    print(f"  ratio AgentLoom / LangGraph (default durability): {doc['ratio']:.2f}×  {target}"
          f"  → {doc['ratio_verdict']}", file=out)
    if "ratio_sync" in doc:
        print(f"  ratio AgentLoom / LangGraph (durability=sync):    {doc['ratio_sync']:.2f}×",
              file=out)
    b = doc.get("bytes")
    if not b:
        return
    sizes = [r["nodes"] for r in b["agentloom"]]
    head = "".join(f"{f'{n} nodes':>12}" for n in sizes)
    print(f"\nstate bytes per node transition, SQLite, {b['runs']} run(s) per size "
          f"(B/node){'':6}{head}", file=out)

    def row(label: str, rows: list[dict[str, Any]], key: str) -> None:
        cells = "".join(f"{r[key]:12,.1f}" if key in r else f"{'-':>12}" for r in rows)
        print(f"  {label:58}{cells}", file=out)

    row("AgentLoom graph state (workflow_nodes.data)", b["agentloom"], "state_data_b")
    row("AgentLoom workflow_nodes row", b["agentloom"], "state_row_b")
    row("AgentLoom every row the run wrote, / nodes", b["agentloom"], "run_b_per_node")
    row("AgentLoom same, marginal (Δ run bytes / Δ nodes)", b["agentloom"], "marginal_b_per_node")
    row("AgentLoom file growth / node", b["agentloom"], "file_b_per_node")
    row("LangGraph checkpoints + writes of the thread, / nodes", b["langgraph"], "run_b_per_node")
    row("LangGraph same, marginal (Δ run bytes / Δ nodes)", b["langgraph"], "marginal_b_per_node")
    row("LangGraph file growth / node", b["langgraph"], "file_b_per_node")
    largest = b["agentloom"][-1]["per_table_b"]
    print("  AgentLoom per node by table at " f"{sizes[-1]} nodes: " + ", ".join(
        f"{t} {v:,.0f}" for t, v in sorted(largest.items(), key=lambda kv: -kv[1])), file=out)
    print(f"  AgentLoom bytes per node constant (spread of the graph state and of the marginal "
          f"≤ {TARGET_BYTES_SPREAD:.0%}): state {b['state_spread']:.1%}, marginal "
          f"{b['marginal_spread']:.1%} → {b['verdict']}", file=out)


# -- main ---------------------------------------------------------------------------------------
def timing(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    nodes = args.nodes
    with ExitStack() as stack:
        if args.store == "sqlite":
            url = f"sqlite:///{folder / 'agentloom.db'}"
            saver = stack.enter_context(sqlite_saver(folder / "langgraph.db"))
        else:
            url = f"{pg_url()}?schema=bench_wf_{uuid.uuid4().hex[:10]}"
            saver = stack.enter_context(postgres_saver(pg_url()))
            stack.callback(drop_schema, url)  # after the runtime closed (callbacks run LIFO)
        loom = Loom(url, folder / "ws", nodes)
        stack.callback(loom.close)
        sides: dict[str, Side] = {
            "agentloom": loom.run,
            "langgraph": LangGraphLine(nodes, saver, None).run,
            "langgraph_sync": LangGraphLine(nodes, saver, "sync").run}
        if args.memory:
            from langgraph.checkpoint.memory import InMemorySaver

            mem = Loom("memory://", folder / "ws-memory", nodes)
            stack.callback(mem.close)
            sides["agentloom_memory"] = mem.run
            sides["langgraph_memory"] = LangGraphLine(nodes, InMemorySaver(), None).run
        commits0 = loom.commits()
        samples = measure(sides, runs=args.runs, warmup=args.warmup)
        commits = (loom.commits() - commits0) / ((args.runs + args.warmup) * nodes)
    figures = {key: summarise(s, nodes) for key, s in samples.items()}
    ratio = figures["agentloom"]["median_ms"] / figures["langgraph"]["median_ms"]
    verdict = ("PASS" if ratio <= TARGET_RATIO else "FAIL") if args.store == "sqlite" else "-"
    return {"timing": figures, "ratio": ratio, "ratio_verdict": verdict,
            "ratio_sync": figures["agentloom"]["median_ms"] / figures["langgraph_sync"]["median_ms"],
            "commits_per_node": commits}


def drop_schema(url: str) -> None:
    from agentloom.store import open_store

    store = open_store(url)
    store.drop_schema()  # type: ignore[attr-defined]
    store.close()


def state_bytes(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    loom = with_marginals([loom_bytes(folder, n, args.bytes_runs) for n in sizes])
    lg = with_marginals([langgraph_bytes(folder, n, args.bytes_runs) for n in sizes])
    state = spread([r["state_data_b"] for r in loom])
    marginal = spread([r["marginal_b_per_node"] for r in loom[1:]])
    ok = state <= TARGET_BYTES_SPREAD and marginal <= TARGET_BYTES_SPREAD
    return {"runs": args.bytes_runs, "agentloom": loom, "langgraph": lg, "state_spread": state,
            "marginal_spread": marginal, "verdict": "PASS" if ok else "FAIL"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=20, help="nodes of the timed graph (20)")
    parser.add_argument("--runs", type=int, default=20, help="measured runs per side (20)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured runs per side first (3)")
    parser.add_argument("--sizes", default="10,20,40", help="graph sizes of the bytes section")
    parser.add_argument("--bytes-runs", type=int, default=3, help="runs per size for the bytes")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite",
                        help="where the timed runs keep their state (the bytes: SQLite always)")
    parser.add_argument("--memory", action="store_true",
                        help="also time both sides with no durable store (reference)")
    parser.add_argument("--tmpfs", action="store_true",
                        help="keep every file on /dev/shm (a disk sync then costs nothing)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    if args.nodes < 2 or args.runs < 1 or args.warmup < 0 or args.bytes_runs < 1:
        parser.error("--nodes ≥ 2, --runs ≥ 1, --warmup ≥ 0 and --bytes-runs ≥ 1")
    if len({int(s) for s in args.sizes.split(",")}) < 3 or min(
            int(s) for s in args.sizes.split(",")) < 2:
        parser.error("--sizes needs three or more sizes of at least 2 nodes")
    needed = ["langgraph.graph", "langgraph.checkpoint.sqlite"]
    if args.store == "postgres":
        needed.append("langgraph.checkpoint.postgres")
    why = missing(*needed)
    if why:
        print(f"LangGraph is not available: {why}", file=sys.stderr)
        return 2
    base = "/dev/shm" if args.tmpfs else None
    doc: dict[str, Any] = {"machine": machine(), "nodes": args.nodes, "runs": args.runs,
                           "warmup": args.warmup, "store": args.store,
                           "folder_kind": "tmpfs (/dev/shm)" if args.tmpfs
                           else f"{tempfile.gettempdir()} (same folder both sides)",
                           "store_label": "SQLite file (WAL, synchronous=FULL)"
                           if args.store == "sqlite" else "PostgreSQL",
                           "saver_label": "SqliteSaver" if args.store == "sqlite"
                           else "PostgresSaver",
                           "targets": {"ratio_at_most": TARGET_RATIO,
                                       "bytes_spread_at_most": TARGET_BYTES_SPREAD}}
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-wf-", dir=base) as tmp:
        doc.update(timing(args, Path(tmp)))
        log("… state bytes")
        doc["bytes"] = state_bytes(args, Path(tmp))
    print_report(doc, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(doc, indent=1))
    missed = doc["ratio_verdict"] == "FAIL" or doc["bytes"]["verdict"] == "FAIL"
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
