"""Workflow runs under random SIGKILLs (issue 20, acceptance 3).

    python bench/chaos_workflows.py                         # 50 runs, 200 kills, SQLite
    python bench/chaos_workflows.py --store postgres        # the same on PostgreSQL
    python bench/chaos_workflows.py --runs 3 --kills 6 --json   # CI size (tests/bench)

**The workflow** (YAML, ``workflows: chaos``) has six nodes::

    plan (agent) ─┬─► a (capability) ─┐
                  ├─► b (capability) ─┼─ join: all ─► join (capability) ─► report (agent)
                  └─► c (capability) ─┘

``plan`` and ``report`` are agents on the offline script model; ``plan`` itself calls the
effect tool once before it answers. Every capability node calls the SDK tool
``chaos_wf_tools:effect``, which appends one fsynced line ``<run> <operation> <node> <attempt
no> <time>`` to ``ledger.log`` beside the config — outside every workspace and outside the
store: the record of what really ran — then waits a moment before it returns, so that kills
land between the effect and the saved result too.

**The chaos.** Each run is started with ``agentloom run CONFIG --workflow chaos TASK`` and
then ``agentloom runs resume RUN`` until it ends or waits for a person (exit 3). Each
process of a run is killed while the run still has kills due (twice its fair share of the
kills left, so that a run that waits early leaves its share to the next). Half of the kills
are aimed with a named crash point (``AGENTLOOM_CRASH_AT``: the process SIGKILLs itself right
after ``intent_saved``, ``attempt_started``, ``effect_done``, ``raw_saved``,
``effective_saved`` or ``delivered`` of its n-th call), the other half are a SIGKILL from
here after a random delay (the window follows how long a clean process takes). A kill that
lands before the run exists starts it again.

**The checks**, from the store, an audit this script adds to it (triggers logging every write
of ``workflow_nodes``) and the ledger:

- *nodes completed twice*: an activation (run, node, attempt) whose record was written
  ``succeeded`` more than once, a node activated more than once (the graph has no loop: a
  second attempt is a re-run), or a logical call with a second operation that succeeded;
- *effects repeated*: an operation with more than one ledger line — counted apart when its raw
  result had been saved (an Attempt that recorded a result, not one recovery closed ``lost``:
  never allowed), or when its outcome is ``unknown`` (allowed only after
  a person approved a re-run: this bench approves none, so also a violation); besides, a
  ``succeeded`` capability node whose operation has no ledger line or is not ``succeeded``;
- *runs*: every run ``succeeded`` (the workflow never fails by itself) or ``waiting`` with a
  reason: a node ``waiting`` whose unknown calls are listed (``runs show --json``:
  ``nodes[].unknown``), each an operation that saved no raw result, and a question for a
  person naming the node (``diagnosis.waiting_for.approvals``).

Prints the figures (runs, kills, repeats, states); exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
EXIT_WAITING = 3
CAPABILITY_NODES = ("a", "b", "c", "join")
AGENT_NODES = ("plan", "report")
NODES = ("plan", "a", "b", "c", "join", "report")
POINTS = ("intent_saved", "attempt_started", "effect_done", "raw_saved", "effective_saved",
          "delivered")
POINT_P = 0.5  # the share of kills aimed with a crash point (the rest: a timer)
MAX_NTH = 4  # a crash point kills at its n-th pass, n in 1..MAX_NTH
MIN_WINDOW_S = 0.05
PROCESS_TIMEOUT_S = 120
TOOL_REF = "chaos_wf_tools:effect"
TOOL_NAME = "chaos.effect"

TOOL_MODULE = f'''
"""The chaos workflow's side effect: one fsynced ledger line per execution."""
import os
import time

from agentloom import StrictInput, Tool, ToolContext


class EffectInput(StrictInput):
    node: str
    text: str = ""


class Effect(Tool[EffectInput]):
    name = "{TOOL_NAME}"
    description = "Append one line to the ledger."

    async def execute(self, args: EffectInput, ctx: ToolContext) -> str:
        fd = os.open(os.environ["CHAOS_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{{ctx.run_id}} {{ctx.operation_id}} {{args.node}} {{ctx.attempt_no}} "
                         f"{{time.time():.6f}}\\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        time.sleep(0.05)  # a window between the effect and its saved result
        return f"{{args.node}}: {{args.text[:60]}}"


effect = Effect()
'''

WORKFLOW = """\
workflows:
  chaos:
    nodes:
      plan:   {agent: planner, input: "{{ input.task }}"}
      a:      {capability: "@REF@", args: {node: a, text: "{{ nodes.plan.output }}"}}
      b:      {capability: "@REF@", args: {node: b, text: "{{ nodes.plan.output }}"}}
      c:      {capability: "@REF@", args: {node: c, text: "{{ nodes.plan.output }}"}}
      join:   {capability: "@REF@", args: {node: join, text: "{{ nodes.a.output }} {{ nodes.c.output }}"}}
      report: {agent: reporter, input: "Report on {{ nodes.join.output }}"}
    edges:
      - {from: plan, to: [a, b, c]}
      - {from: [a, b, c], to: join, join: all}
      - {from: join, to: report}
""".replace("@REF@", TOOL_REF)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_project(folder: Path) -> Path:
    """The agents, the tool module and the workflow; returns the config path."""
    from agentloom.catalog import legal_exposed_name

    tool = legal_exposed_name(TOOL_NAME)
    plan = {"turns": [{"tool_calls": [{"name": tool, "arguments": {"node": "plan-tool"}}]},
                      {"expect": {"role": "tool"}, "text": "the plan"}]}
    (folder / "plan.yaml").write_text(json.dumps(plan), encoding="utf-8")
    (folder / "report.yaml").write_text(json.dumps({"turns": [{"text": "reported"}]}),
                                        encoding="utf-8")
    (folder / "chaos_wf_tools.py").write_text(TOOL_MODULE, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n"
        f"  planner:\n    model: {{builtin: script, path: plan.yaml}}\n    tools: ['{TOOL_REF}']\n"
        "  reporter:\n    model: {builtin: script, path: report.yaml}\n"
        f"{WORKFLOW}"
        f"workspace: {{root: {json.dumps(str(folder / 'ws'))}}}\n"
        "sandbox: {backend: none}\n", encoding="utf-8")
    return config


# -- the store and its audit -----------------------------------------------------------------
SQLITE_AUDIT = """
CREATE TABLE chaos_node_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, node TEXT,
  attempt INTEGER, status TEXT, operation_id TEXT);
CREATE TRIGGER chaos_nodes_insert AFTER INSERT ON workflow_nodes BEGIN
  INSERT INTO chaos_node_log (run_id, node, attempt, status, operation_id)
  VALUES (NEW.run_id, NEW.node, NEW.attempt, NEW.status, NEW.operation_id); END;
CREATE TRIGGER chaos_nodes_update AFTER UPDATE ON workflow_nodes BEGIN
  INSERT INTO chaos_node_log (run_id, node, attempt, status, operation_id)
  VALUES (NEW.run_id, NEW.node, NEW.attempt, NEW.status, NEW.operation_id); END;
"""
PG_AUDIT = """
CREATE TABLE {s}.chaos_node_log (seq BIGSERIAL PRIMARY KEY, run_id TEXT, node TEXT,
  attempt INTEGER, status TEXT, operation_id TEXT);
CREATE FUNCTION {s}.chaos_log_node() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {s}.chaos_node_log (run_id, node, attempt, status, operation_id)
  VALUES (NEW.run_id, NEW.node, NEW.attempt, NEW.status, NEW.operation_id);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_nodes AFTER INSERT OR UPDATE ON {s}.workflow_nodes
  FOR EACH ROW EXECUTE FUNCTION {s}.chaos_log_node();
"""


def store_url(store: str, folder: Path, base: str) -> str:
    if store == "sqlite":
        return f"sqlite:///{folder / 'chaos.db'}"
    return f"{base}{'&' if '?' in base else '?'}schema=chaos_wf_{uuid.uuid4().hex[:12]}"


def _schema(url: str) -> str:
    return url.rpartition("schema=")[2]


def create_store(url: str) -> None:
    """The store's tables, then the audit of ``workflow_nodes`` beside them."""
    from agentloom.store import open_store

    open_store(url).close()
    if url.startswith("sqlite:"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.executescript(SQLITE_AUDIT)
        return
    import psycopg

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(PG_AUDIT.format(s=f'"{_schema(url)}"'))


def node_log(url: str) -> list[dict[str, Any]]:
    cols = ("run_id", "node", "attempt", "status", "operation_id")
    sql = f"SELECT {', '.join(cols)} FROM chaos_node_log ORDER BY seq"
    if url.startswith("sqlite:"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return [dict(zip(cols, r, strict=True)) for r in conn.execute(sql)]
    import psycopg

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{_schema(url)}"')
        return [dict(zip(cols, r, strict=True)) for r in conn.execute(sql)]


def drop_store(url: str) -> None:
    if url.startswith("sqlite:"):
        return
    import psycopg

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{_schema(url)}" CASCADE')


# -- the kills -------------------------------------------------------------------------------
@dataclass
class Tally:
    kills: int = 0
    point_kills: Counter[str] = field(default_factory=Counter)
    timer_kills: int = 0
    processes: int = 0
    starts_lost: int = 0  # killed before the run existed: started again
    failed_processes: list[str] = field(default_factory=list)  # exits no run explains


class Harness:
    """Starts, kills and resumes ``agentloom`` processes for one project and store."""

    def __init__(self, config: Path, url: str, rng: random.Random) -> None:
        self.config, self.url, self.rng = config, url, rng
        self.folder = config.parent
        self.tally = Tally()
        self.window = (0.5, 4.0)  # the timer's delay range (s): set from a clean process
        self.err = self.folder / "last-process.err"  # the stderr of the latest process
        env = {k: v for k, v in os.environ.items()
               if k not in ("AGENTLOOM_STORE", "AGENTLOOM_CRASH_AT")}
        self.env = {**env, "CHAOS_LEDGER": str(self.folder / "ledger.log"),
                    "PYTHONUNBUFFERED": "1"}

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agentloom", *args, "--store", self.url, "--json"]

    def process(self, argv: list[str], kill: bool) -> int | None:
        """Run ``argv``, killed on the way when ``kill``; its exit code, None when killed."""
        env, delay = dict(self.env), None
        point = None
        if kill and self.rng.random() < POINT_P:
            point = f"{self.rng.choice(POINTS)}@{self.rng.randint(1, MAX_NTH)}"
            env["AGENTLOOM_CRASH_AT"] = point
        elif kill:
            delay = self.rng.uniform(*self.window)
        self.tally.processes += 1
        with self.err.open("wb") as err:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                    cwd=self.folder)
        started = time.perf_counter()
        try:
            code = proc.wait(timeout=delay if delay is not None else PROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            if delay is None:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"{argv[3:5]} hung for {PROCESS_TIMEOUT_S}s") from None
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            self.tally.kills += 1
            self.tally.timer_kills += 1
            return None
        if code == -signal.SIGKILL and point is not None:
            self.tally.kills += 1
            self.tally.point_kills[point.partition("@")[0]] += 1
            return None
        if delay is not None:  # ended before its timer: narrow the window
            took = time.perf_counter() - started
            low, high = self.window
            if took < high:
                high = max(MIN_WINDOW_S, 1.05 * took)
                self.window = (min(low, 0.5 * high), high)
        return code

    def clean_run(self, task: str) -> float:
        """One run without kills; sets the timer's window from its length."""
        started = time.perf_counter()
        self.process(self.cli("run", str(self.config), "--workflow", "chaos", task), False)
        took = time.perf_counter() - started
        self.window = (0.5 * took, 1.05 * took)
        return took

    def run_of(self, task: str) -> str | None:
        from agentloom.store import open_store
        from agentloom.store.records import get_run

        store = open_store(self.url)
        try:
            for row in store.query("runs"):
                run = get_run(store, row["run_id"], lenient=True)
                if run is not None and run.task == task:
                    return str(row["run_id"])
            return None
        finally:
            store.close()

    def one_run(self, task: str, kills: int) -> str | None:
        """Start a run and see it to its end or its wait, with ``kills`` kills on the way
        (fewer when it ends first); None when a process failed for a reason no run explains
        (noted in the tally)."""
        run_id: str | None = None
        while True:
            kill = kills > 0
            if run_id is None:
                code = self.process(self.cli("run", str(self.config), "--workflow", "chaos",
                                             task), kill)
                run_id = self.run_of(task)
                if run_id is None:
                    self.tally.starts_lost += 1
            else:
                code = self.process(self.cli("runs", "resume", run_id), kill)
            if code is None:
                kills -= 1
                continue
            if run_id is not None and code in (0, 1, EXIT_WAITING):
                return run_id
            tail = self.err.read_text(encoding="utf-8", errors="replace")[-600:]
            self.tally.failed_processes.append(f"{task}: agentloom exited with {code} (run "
                                               f"{run_id}): {tail}")
            return None


# -- the checks ------------------------------------------------------------------------------
def ledger(path: Path) -> dict[str, list[str]]:
    """Operation id -> the node named by each of its ledger lines."""
    lines: dict[str, list[str]] = defaultdict(list)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 5:
                lines[parts[1]].append(parts[2])
    return lines


def check(url: str, ledger_path: Path, run_ids: list[str]) -> dict[str, Any]:
    """Every figure and every violation, from the store, its audit and the ledger."""
    from agentloom.store import open_store
    from agentloom.views import run_detail

    effects = ledger(ledger_path)
    audit = node_log(url)
    problems: list[str] = []
    figures: Counter[str] = Counter()
    states: Counter[str] = Counter()
    store = open_store(url)
    try:
        ops: dict[str, dict[str, Any]] = {}
        for run_id in run_ids:
            for row in store.query("operations", {"run_id": run_id}):
                attempts = store.query("attempts", {"operation_id": row["operation_id"]})
                # an Attempt cut off is closed ``lost`` by recovery (its raw: ``unknown``)
                raw_saved = any(a["status"] not in ("started", "lost") for a in attempts)
                ops[row["operation_id"]] = {**row, "raw_saved": raw_saved}
        by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for op in ops.values():
            by_key[op["logical_key"]].append(op)
        for key, same in by_key.items():
            if sum(o["outcome"] == "succeeded" for o in same) > 1:
                figures["nodes_completed_twice"] += 1
                problems.append(f"logical call {key}: {len(same)} operations succeeded")
        written = Counter((r["run_id"], r["node"], r["attempt"]) for r in audit
                          if r["status"] == "succeeded")
        for (run_id, node, attempt), n in written.items():
            if n > 1:
                figures["nodes_completed_twice"] += 1
                problems.append(f"run {run_id}: node {node}#{attempt} recorded succeeded {n} times")
        for op_id, nodes in effects.items():
            figures["effects"] += len(nodes)
            found = ops.get(op_id)
            if found is None:
                problems.append(f"ledger lines of operation {op_id} ({nodes[0]}) that no run has")
                continue
            if len(nodes) > 1:
                figures["effects_repeated"] += 1
                if found["raw_saved"]:
                    figures["effects_repeated_after_raw_saved"] += 1
                problems.append(f"operation {op_id} ({found['logical_key']}, {found['outcome']}, raw "
                                f"{'saved' if found['raw_saved'] else 'not saved'}) ran "
                                f"{len(nodes)} times; no re-run was approved")
        for run_id in run_ids:
            states_of, run_problems = _check_run(store, run_id, run_detail(store, run_id), ops,
                                                 effects)
            states[states_of] += 1
            problems.extend(run_problems)
        figures["unknown_effects_cut_short"] = sum(
            1 for op in ops.values() if op["outcome"] == "unknown" and op["operation_id"] in effects)
        figures["operations"] = len(ops)
    finally:
        store.close()
    return {"states": dict(states), "nodes_completed_twice": figures["nodes_completed_twice"],
            "effects": figures["effects"], "effects_repeated": figures["effects_repeated"],
            "effects_repeated_after_raw_saved": figures["effects_repeated_after_raw_saved"],
            "unknown_with_effect": figures["unknown_effects_cut_short"],
            "operations": figures["operations"], "violations": problems}


def _check_run(store: Any, run_id: str, detail: dict[str, Any] | None,
               ops: dict[str, dict[str, Any]], effects: dict[str, list[str]]
               ) -> tuple[str, list[str]]:
    """The run's state (``succeeded`` / ``waiting`` / other) and what is wrong with it."""
    if detail is None:
        return "missing", [f"run {run_id} is missing"]
    status, problems = str(detail["status"]), []
    nodes = {n["node"]: n for n in detail.get("nodes") or []}
    for name, node in nodes.items():
        if node["attempts"] > 1:
            problems.append(f"run {run_id}: node {name} ran {node['attempts']} times")
        if node["status"] == "succeeded" and name in CAPABILITY_NODES:
            op = ops.get(node["operation_id"] or "")
            if op is None or op["outcome"] != "succeeded" or len(effects.get(op["operation_id"],
                                                                              [])) != 1:
                problems.append(f"run {run_id}: node {name} succeeded without exactly one "
                                f"effect of a succeeded call ({op and op['outcome']})")
    if status == "succeeded":
        if sorted(nodes) != sorted(NODES) or any(n["status"] != "succeeded"
                                                 for n in nodes.values()):
            problems.append(f"run {run_id} succeeded with nodes "
                            f"{ {k: v['status'] for k, v in nodes.items()} }")
        return status, problems
    if status != "waiting":
        error = detail.get("error") or {}
        return status, [*problems, f"run {run_id} ended {status}: {error}"]
    waiting = [n for n in nodes.values() if n["status"] == "waiting"]
    questions = [a.get("question") or "" for a in
                 ((detail.get("diagnosis") or {}).get("waiting_for") or {}).get("approvals", [])]
    if not waiting:
        problems.append(f"run {run_id} waits with no node waiting")
    for node in waiting:
        if not node.get("unknown"):
            problems.append(f"run {run_id}: node {node['node']} waits with no unknown call listed")
        for unknown in node.get("unknown") or []:
            op = ops.get(unknown["operation_id"])
            if op is None or op["raw_saved"] or op["outcome"] == "succeeded":
                problems.append(f"run {run_id}: node {node['node']} lists {unknown} as unknown "
                                f"but its raw result was saved")
        if not any(f"node {node['node']!r}" in q for q in questions):
            problems.append(f"run {run_id}: no question names waiting node {node['node']}")
    return status, problems


# -- the bench -------------------------------------------------------------------------------
def chaos_workflows(*, runs: int, kills: int, store: str = "sqlite", seed: int = 1,
                    store_base: str = DEFAULT_PG, keep: bool = False) -> dict[str, Any]:
    """Run the bench in a temporary folder (and, on PostgreSQL, a fresh schema), both removed
    after unless ``keep``; the report."""
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="agentloom-chaos-wf-"))
    url = store_url(store, folder, store_base)
    try:
        config = write_project(folder)
        create_store(url)
        harness = Harness(config, url, rng)
        started = time.perf_counter()
        clean_s = harness.clean_run("chaos clean run")
        run_ids = [r for r in [harness.run_of("chaos clean run")] if r]
        for i in range(runs):
            # twice the fair share of the kills left: a run that waits early (a kill cut off an
            # effect) leaves its share to the runs after it
            left = kills - harness.tally.kills
            due = min(left, -(-2 * left // (runs - i)))
            run_id = harness.one_run(f"chaos run {i}", max(0, due))
            if run_id is not None:
                run_ids.append(run_id)
        elapsed = time.perf_counter() - started
        report = check(url, folder / "ledger.log", run_ids)
    finally:
        if keep:
            log(f"kept: the folder {folder} and the store {url}")
        else:
            drop_store(url)
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    tally = harness.tally
    report["violations"][:0] = [f"a process failed: {p}" for p in tally.failed_processes]
    if tally.kills < kills:
        report["violations"].insert(0, f"only {tally.kills} of {kills} kills landed (the runs "
                                    "ended first)")
    return {"store": store, "seed": seed, "runs": len(run_ids), "kills": tally.kills,
            "kills_requested": kills, "kills_at_points": dict(tally.point_kills),
            "kills_by_timer": tally.timer_kills, "processes": tally.processes,
            "starts_lost": tally.starts_lost, "clean_run_s": round(clean_s, 2),
            "elapsed_s": round(elapsed, 1), **report,
            **({"kept": {"folder": str(folder), "store": url}} if keep else {})}


def print_report(r: dict[str, Any]) -> None:
    print(f"chaos workflows on {r['store']}: {r['runs']} runs (one clean), {r['kills']} kills "
          f"of {r['kills_requested']} requested in {r['processes']} processes, "
          f"{r['elapsed_s']} s, seed {r['seed']}")
    print(f"  kills at crash points: {r['kills_at_points']}; by timer: {r['kills_by_timer']}; "
          f"killed before the run existed: {r['starts_lost']}")
    print(f"  runs by state: {r['states']}")
    print(f"  nodes completed twice: {r['nodes_completed_twice']}")
    print(f"  effects: {r['effects']} ledger lines over {r['operations']} operations; repeated: "
          f"{r['effects_repeated']} (after raw_saved: {r['effects_repeated_after_raw_saved']}); "
          f"unknown calls whose effect happened: {r['unknown_with_effect']}")
    print(f"violations: {len(r['violations'])}")
    for problem in r["violations"]:
        print(f"  VIOLATION {problem}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--store-base", default=os.environ.get("AGENTLOOM_TEST_PG", DEFAULT_PG),
                        help="with --store postgres: the server; a fresh schema, dropped after")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the folder and the store")
    args = parser.parse_args()
    if args.runs < 1 or args.kills < 0:
        parser.error("--runs must be at least 1 and --kills at least 0")
    report = chaos_workflows(runs=args.runs, kills=args.kills, store=args.store, seed=args.seed,
                             store_base=args.store_base, keep=args.keep)
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
