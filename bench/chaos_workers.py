"""Many workers under SIGKILL and SIGSTOP on PostgreSQL (issue 17, acceptance 1).

    python bench/chaos_workers.py                      # 4 workers, 200 runs, 100 kills, 50 pauses
    python bench/chaos_workers.py --workers 2 --runs 12 --kills 3 --pauses 1 --json   # CI size

**The runs.** A scripted agent (``{builtin: script}``) makes two sandboxed ``exec`` calls, then
answers. The first (*effect*) appends one line ``chaos-effect <nonce> <time>`` to
``evidence.log`` in the run's own workspace folder (kept: ``workspace.keep``), the second
(*slow*) appends ``chaos-slow <nonce> <i> <time>`` six times, 0.1 s apart, so that kills land
mid-step. Each execution draws a fresh nonce: the file, outside the store, is the record of
what really ran. Every fourth run is submitted to the agent ``gated``, whose before-hook
answers ``ask`` for the effect call: the run waits, and this script answers (``Runtime.approve``
/ ``reject`` on its own runtime, about one in five rejected) a moment after it sees it waiting.
Leases are short: ``workers: {lease_ttl_s: 2, takeover_grace_s: 3, poll_s: 0.5}``.

**The chaos.** ``--workers`` processes ``python -m agentloom worker CONFIG --store URL
--concurrency C`` drain the queue. ``--kills`` SIGKILLs and ``--pauses`` SIGSTOPs (each for a
random 3-5 s, longer than the lease TTL, then SIGCONT) hit workers that hold a run at that
moment; a killed worker is restarted at once. Adaptive pacing: an action is due while the
share of actions done is below the share of runs ended (over 75 %, plus a small lead), so the
actions spread over the runs and all land before the queue drains, however fast the machine.

**The checks**, from the store, the evidence files, and an audit this script adds to its own
schema (triggers that log every lease-epoch and status change of ``runs`` and every write of
``operations`` / ``attempts``, each with the writer's connection ``application_name``: every
worker process runs with its own ``PGAPPNAME``):

- *commits under a stale epoch*: a write of an operation or attempt row by a process other
  than the one that claimed the run's lease epoch current in that very transaction (fenced
  commits hold the run's lease lock shared and claims take it exclusive, so the epoch the
  trigger reads is the epoch the commit was checked against). Refused commits (``LEASE_LOST``
  lines on the workers' stderr) are counted apart: they are the fence at work;
- *two live holders*: a claim of epoch E+1 while the process that claimed epoch E had not
  been sent SIGKILL and had recorded no confirmed revocation receipt for E; beside it, two
  executions of one run whose evidence lines overlap in time (one run makes one call at a
  time); and operation rows delivered by two processes;
- *side effects executed twice*: a call of a run with more than one execution in its evidence
  — any duplicate at all is counted, and apart those whose operation saved its raw result
  (``succeeded``). Besides: a ``succeeded`` call with no execution, a rejected call that ran;
- *lost runs*: a submitted run that is not ended and not ``waiting`` when the bench ends
  (all runs ended, or ``--timeout``); ``suspended`` runs are listed with their reasons;
- *failed runs*: the scripted agent never fails by itself, so a ``failed`` run is work the
  runtime lost (its error code and message are printed);
- a worker that exited without being killed.

**Where the workers run** (issue #34, 2): ``--pid-namespaces`` starts each worker in its own
PID namespace (``unshare -p -f --mount-proc``, the same hostname: containers, cloned machines);
``--skew-s S`` runs worker 0 with its clock ``S`` seconds off (``agentloom.testing.skewed_clock``).
A killed holder in another namespace is never judged gone by a PID: its runs wait for their
lease, then are ``suspended``, and this script hands them back to the queue as ``runs resume
--force`` would — an operator who knows that worker is dead (``forced``; a claim at the epoch it
read, so never a run a worker took meanwhile). Also checked then: *healthy runs suspended* — a
suspension before the run's lease had expired, by the store's clock, for the grace.

Prints the counts (``--json``: as JSON); exits 1 on any violation. ``--keep`` keeps the schema
and the folder: the workers' stderr (``chaos-w<slot>-<n>.err``), ``chaos.log`` (when which
worker was hit) and the workspaces with their evidence. The sandbox's PID namespace
hides the worker's pid from a command, so executions are told apart by nonce and time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
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
ENDED = frozenset({"succeeded", "failed", "cancelled"})
EFFECT, SLOW = "chaos-effect", "chaos-slow"
GATED_EVERY = 4  # every fourth run asks for an approval
REJECT_P = 0.2
ANSWER_DELAY_S = (0.2, 1.0)
PAUSE_S = (3.0, 5.0)
TAKEOVER_GRACE_S = 3.0  # the config's workers.takeover_grace_s
CLOCK_TOLERANCE_S = 0.25  # how far a worker's reading of the store's clock may be off
ACTIONS_BY = 0.75  # every kill and pause is due once this share of the runs has ended
TICK_S = 0.1
STOP_WAIT_S = 60.0

EFFECT_CODE = (f"import os,time;open('evidence.log','a').write('{EFFECT} %s %.6f\\n' "
               "% (os.urandom(6).hex(), time.time()))")
SLOW_CODE = (f"import os,time;n=os.urandom(6).hex();[(open('evidence.log','a').write("
             f"'{SLOW} %s %d %.6f\\n' % (n, i, time.time())),time.sleep(0.1)) for i in range(6)]")
GUARD = f'''\
"""The gated agent's hook: a person approves the effect call."""


def ask_effect(event):
    if "{EFFECT}" in str(event.payload.get("argv")):
        return {{"decision": "ask", "reason": "Append the evidence line?"}}
    return {{"decision": "allow"}}
'''
HOOK = ('[{timing: before, event: tool, match: {capability: exec}, '
        'handler: {ref: "chaos_guards:ask_effect"}}]')


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the project ---------------------------------------------------------------------------
def write_project(folder: Path) -> Path:
    """The agents ``main`` and ``gated`` (the same script; ``gated`` asks before its effect),
    the hook module and short leases; returns the config path."""
    turns = [{"tool_calls": [{"name": "exec", "arguments": {
                 "argv": ["python3", "-c", EFFECT_CODE], "timeout_s": 30}}]},
             {"tool_calls": [{"name": "exec", "arguments": {
                 "argv": ["python3", "-c", SLOW_CODE], "timeout_s": 30}}]},
             {"text": "done"}]
    (folder / "turns.yaml").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    (folder / "chaos_guards.py").write_text(GUARD, encoding="utf-8")
    agent = "    model: {builtin: script, path: turns.yaml}\n    tools: [exec]\n"
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n"
        f"  main:\n{agent}"
        f"  gated:\n{agent}    hooks: {HOOK}\n"
        f"workspace: {{root: {json.dumps(str(folder / 'ws'))}, keep: true}}\n"
        "workers: {lease_ttl_s: 2, takeover_grace_s: 3, poll_s: 0.5}\n", encoding="utf-8")
    return config


# -- the schema and its audit ----------------------------------------------------------------
AUDIT = """
CREATE TABLE {s}.chaos_run_log (
  seq BIGSERIAL PRIMARY KEY, run_id TEXT, old_status TEXT, status TEXT, old_epoch INTEGER,
  epoch INTEGER, owner TEXT, app TEXT, at DOUBLE PRECISION, reason TEXT,
  lease_expires_at DOUBLE PRECISION);
CREATE TABLE {s}.chaos_write_log (
  seq BIGSERIAL PRIMARY KEY, tbl TEXT, run_id TEXT, operation_id TEXT, phase TEXT,
  status TEXT, epoch INTEGER, app TEXT, at DOUBLE PRECISION);
CREATE FUNCTION {s}.chaos_log_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.lease_epoch IS DISTINCT FROM OLD.lease_epoch
     OR NEW.status IS DISTINCT FROM OLD.status THEN
    INSERT INTO {s}.chaos_run_log (run_id, old_status, status, old_epoch, epoch, owner, app,
                                   at, reason, lease_expires_at)
    VALUES (NEW.run_id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status,
            CASE WHEN TG_OP = 'UPDATE' THEN OLD.lease_epoch END, NEW.lease_epoch,
            NEW.lease_owner, current_setting('application_name'),
            extract(epoch FROM clock_timestamp()),
            NEW.data::jsonb -> 'suspended' ->> 'reason', NEW.lease_expires_at);
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION {s}.chaos_log_operation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {s}.chaos_write_log (tbl, run_id, operation_id, phase, status, epoch, app, at)
  SELECT 'operations', NEW.run_id, NEW.operation_id, NEW.phase, NEW.outcome, r.lease_epoch,
         current_setting('application_name'), extract(epoch FROM clock_timestamp())
  FROM {s}.runs r WHERE r.run_id = NEW.run_id;
  RETURN NULL;
END $$;
CREATE FUNCTION {s}.chaos_log_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO {s}.chaos_write_log (tbl, run_id, operation_id, phase, status, epoch, app, at)
  SELECT 'attempts', o.run_id, NEW.operation_id, NULL, NEW.status, r.lease_epoch,
         current_setting('application_name'), extract(epoch FROM clock_timestamp())
  FROM {s}.operations o JOIN {s}.runs r ON r.run_id = o.run_id
  WHERE o.operation_id = NEW.operation_id;
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_runs AFTER INSERT OR UPDATE ON {s}.runs
  FOR EACH ROW EXECUTE FUNCTION {s}.chaos_log_run();
CREATE TRIGGER chaos_operations AFTER INSERT OR UPDATE ON {s}.operations
  FOR EACH ROW EXECUTE FUNCTION {s}.chaos_log_operation();
CREATE TRIGGER chaos_attempts AFTER INSERT OR UPDATE ON {s}.attempts
  FOR EACH ROW EXECUTE FUNCTION {s}.chaos_log_attempt();
"""


def fresh_url(base: str) -> str:
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema=chaos_w_{uuid.uuid4().hex[:12]}"


def schema_of(url: str) -> str:
    return url.rpartition("schema=")[2]


def create_store(url: str) -> None:
    """Create the store's schema and tables, then the audit triggers in the same schema."""
    import psycopg

    from agentloom.store import open_store

    open_store(url).close()
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(AUDIT.format(s=f'"{schema_of(url)}"'))


def drop_schema(url: str) -> None:
    import psycopg

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema_of(url)}" CASCADE')


def pg_unreachable(base: str) -> str | None:
    try:
        import psycopg

        with psycopg.connect(base, connect_timeout=3):
            return None
    except Exception as exc:
        return f"PostgreSQL at {base} is unreachable: {type(exc).__name__}: {exc}"


# -- the workers -----------------------------------------------------------------------------
@dataclass(slots=True)
class Incarnation:
    """One worker process: its slot, its ``PGAPPNAME``, when it was signalled."""

    slot: int
    app: str
    proc: subprocess.Popen[bytes]
    err: Path
    started_at: float
    killed_at: float | None = None  # when SIGKILL was sent
    paused_until: float | None = None
    exited_by_itself: int | None = None
    in_namespace: bool = False  # proc is ``unshare``; the worker is its child
    _owner: str | None = None

    @property
    def owner(self) -> str:
        """Its holder id (``host@space:pid``), as the worker printed it on starting."""
        if self._owner is None:
            text = self.err.read_text(errors="replace") if self.err.exists() else ""
            found = re.search(r"^worker (\S+) on ", text, re.M)
            if found is None:
                return f"(not started) {self.app}"
            self._owner = found.group(1)
        return self._owner

    def signal(self, signum: int) -> None:
        """Signal the worker itself (in a PID namespace: the child of ``unshare``)."""
        pid = self.proc.pid
        if self.in_namespace:
            pid = _child_of(pid) or pid
        with contextlib.suppress(ProcessLookupError):  # it exited already
            os.kill(pid, signum)


def _child_of(pid: int) -> int | None:
    """The one child of ``unshare --fork`` (None until it exists)."""
    for _ in range(50):
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return None
        if children:
            return int(children[0])
        time.sleep(0.01)
    return None


@dataclass(frozen=True, slots=True)
class Shape:
    """Where the workers run: each in its own PID namespace (``unshare -p -f --mount-proc``,
    same hostname), and the clock offset of worker slot 0 (``agentloom.testing.skewed_clock``)."""

    pid_namespaces: bool = False
    skew_s: float = 0.0


def namespaces_refused() -> str | None:
    """Why workers cannot get PID namespaces here (None: they can)."""
    try:
        done = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--pid-namespaces: unshare cannot run: {exc}"
    if done.returncode != 0:
        return (f"--pid-namespaces: unshare --pid --fork --mount-proc is refused here "
                f"(needs root or CAP_SYS_ADMIN): {done.stderr.strip()}")
    return None


def spawn(config: Path, url: str, slot: int, n: int, concurrency: int,
          shape: Shape = Shape()) -> Incarnation:
    app = f"chaos-w{slot}-{n}"
    err = config.parent / f"{app}.err"
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    env.update(PGAPPNAME=app, PYTHONUNBUFFERED="1")
    command = ["worker", str(config), "--store", url, "--concurrency", str(concurrency)]
    argv = [sys.executable, "-m", "agentloom", *command]
    if slot == 0 and shape.skew_s:
        argv = [sys.executable, "-m", "agentloom.testing.skewed_clock", "--offset-s",
                str(shape.skew_s), "--", *command]
    if shape.pid_namespaces:
        argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *argv]
    with (config.parent / f"{app}.out").open("wb") as out, err.open("wb") as stderr:
        proc = subprocess.Popen(argv, cwd=config.parent, env=env, stdout=out, stderr=stderr)
    return Incarnation(slot, app, proc, err, time.time(), in_namespace=shape.pid_namespaces)


@dataclass
class Tally:
    kills: int = 0
    pauses: int = 0
    kills_mid_run: int = 0  # the victim held at least one running run
    pauses_mid_run: int = 0
    runs_held_at_kill: int = 0
    restarts: int = 0
    approved: int = 0
    rejected: int = 0
    answer_refused: list[str] = field(default_factory=list)
    forced: int = 0  # suspended runs of a killed holder resumed with --force


class Chaos:
    """Runs the workers, the kills and pauses, and the approvals until every run ended."""

    def __init__(self, config: Path, url: str, *, workers: int, concurrency: int,
                 rng: random.Random, shape: Shape = Shape()) -> None:
        import psycopg

        self.config, self.url, self.rng, self.shape = config, url, rng, shape
        self.concurrency = concurrency
        self.generation = [0] * workers
        self.live = [spawn(config, url, slot, 0, concurrency, shape) for slot in range(workers)]
        self.every: list[Incarnation] = list(self.live)
        self.tally = Tally()
        self.seen_waiting: dict[str, float] = {}  # approval operation id -> answer at
        self.db = psycopg.connect(url.split("?")[0], autocommit=True)
        self.db.execute(f'SET search_path TO "{schema_of(url)}"')

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return list(self.db.execute(sql, args).fetchall())

    def held(self) -> Counter[str]:
        return Counter(dict(self.rows("SELECT lease_owner, count(*) FROM runs WHERE status = "
                                      "'running' GROUP BY lease_owner")))

    def ended(self) -> int:
        (n,) = self.rows("SELECT count(*) FROM runs WHERE status = ANY(%s)", list(ENDED))[0]
        return int(n)

    # -- the actions ------------------------------------------------------------------------
    def restart(self, slot: int) -> None:
        self.generation[slot] += 1
        self.live[slot] = spawn(self.config, self.url, slot, self.generation[slot],
                                self.concurrency, self.shape)
        self.every.append(self.live[slot])
        self.tally.restarts += 1

    def note(self, what: str, victim: Incarnation, held: int) -> None:
        """One line of ``chaos.log`` beside the config: when which worker was hit."""
        with (self.config.parent / "chaos.log").open("a", encoding="utf-8") as out:
            out.write(f"{time.time():.3f} {what} {victim.app} pid {victim.proc.pid} "
                      f"holding {held}\n")

    def kill(self, victim: Incarnation, held: int) -> None:
        self.note("SIGKILL", victim, held)
        victim.killed_at = time.time()
        victim.signal(signal.SIGKILL)
        victim.proc.wait()
        self.tally.kills += 1
        self.tally.kills_mid_run += held > 0
        self.tally.runs_held_at_kill += held
        self.restart(victim.slot)

    def pause(self, victim: Incarnation, held: int) -> None:
        self.note("SIGSTOP", victim, held)
        victim.signal(signal.SIGSTOP)
        victim.paused_until = time.time() + self.rng.uniform(*PAUSE_S)
        self.tally.pauses += 1
        self.tally.pauses_mid_run += held > 0

    def act(self, action: str) -> bool:
        """Kill or pause a worker that holds a run now; False when none does."""
        held = self.held()
        paused = sum(w.paused_until is not None for w in self.live)
        candidates = [w for w in self.live if w.paused_until is None and held[w.owner] > 0]
        if not candidates or (action == "pause" and paused >= len(self.live) - 1):
            return False
        victim = self.rng.choice(candidates)
        (self.kill if action == "kill" else self.pause)(victim, held[victim.owner])
        return True

    def tend(self) -> None:
        """SIGCONT the pauses that are over; restart a worker that exited by itself."""
        now = time.time()
        for w in self.live:
            if w.paused_until is not None and w.paused_until <= now:
                w.signal(signal.SIGCONT)
                w.paused_until = None
            code = w.proc.poll()
            if code is not None:
                w.exited_by_itself = code
                log(f"worker {w.app} (pid {w.proc.pid}) exited by itself with {code}: "
                    f"{tail(w.err)}")
                self.restart(w.slot)

    async def answer(self, runtime: Any) -> None:
        """Answer the approvals waiting for a person, each a moment after it was first seen."""
        from agentloom.approvals.errors import ApprovalError

        now = time.time()
        for op_id, run_id in self.rows("SELECT operation_id, run_id FROM approvals "
                                       "WHERE status = 'pending'"):
            due = self.seen_waiting.setdefault(op_id, now + self.rng.uniform(*ANSWER_DELAY_S))
            if due > now:
                continue
            approve = self.rng.random() >= REJECT_P
            try:
                if approve:
                    await runtime.approve(run_id, op_id, reason="chaos: yes", actor="chaos")
                else:
                    await runtime.reject(run_id, op_id, reason="chaos: no", actor="chaos")
            except ApprovalError as exc:
                self.tally.answer_refused.append(f"{op_id}: {exc}")
                continue
            self.tally.approved += approve
            self.tally.rejected += not approve

    async def operate(self, runtime: Any) -> None:
        """What an operator does for a run suspended because its holder may live on: once it
        knows that holder is dead (it was killed), ``runs resume --force`` hands the run to
        the queue. (A killed holder in another PID namespace or on another machine is never
        judged gone by a PID: its runs wait for their lease, then for this.)"""
        from agentloom.errors import StoreError
        from agentloom.store.records import get_run

        killed = {w.owner for w in self.every if w.killed_at is not None}
        for run_id, owner, epoch in self.rows("SELECT run_id, lease_owner, lease_epoch FROM "
                                              "runs WHERE status = 'suspended'"):
            if owner not in killed:
                continue
            try:  # only while it is still that epoch: a worker may have taken it meanwhile
                lease = runtime.kernel.claim(run_id, lease_ttl_s=2.0, expect_epoch=epoch)
            except StoreError:
                continue
            run = get_run(runtime.store, run_id)
            await runtime.kernel.park_run(lease, "pending", data=dict(run.data if run else {}))
            self.tally.forced += 1

    async def drive(self, runtime: Any, *, runs: int, kills: int, pauses: int,
                    timeout_s: float) -> bool:
        """Until every run ended (True) or ``timeout_s`` (False)."""
        actions = ["kill"] * kills + ["pause"] * pauses
        self.rng.shuffle(actions)
        lead = 1 + 0.05 * len(actions)
        done = 0
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.tend()
            await self.answer(runtime)
            await self.operate(runtime)
            ended = self.ended()
            if ended >= runs:
                return True
            due = len(actions) * min(1.0, ended / (runs * ACTIONS_BY)) + lead
            if done < len(actions) and done < due and self.act(actions[done]):
                done += 1
            await asyncio.sleep(TICK_S)
        return False

    def stop(self) -> None:
        """SIGCONT, then SIGTERM every worker; SIGKILL one that does not stop in time."""
        for w in self.live:
            if w.paused_until is not None:
                w.signal(signal.SIGCONT)
                w.paused_until = None
            if w.proc.poll() is None:
                w.signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        for w in self.live:
            try:
                w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"worker {w.app} did not stop within {STOP_WAIT_S:g}s of SIGTERM: killed")
                w.killed_at = time.time()
                w.signal(signal.SIGKILL)
                w.proc.kill()
                w.proc.wait()
        self.db.close()


def tail(path: Path, lines: int = 3) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(text[-lines:])


# -- the checks ------------------------------------------------------------------------------
@dataclass(slots=True)
class Execution:
    label: str
    nonce: str
    times: list[float]


def read_evidence(path: Path) -> list[Execution]:
    found: dict[tuple[str, str], Execution] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if not parts or parts[0] not in (EFFECT, SLOW):
            continue
        key = (parts[0], parts[1])
        found.setdefault(key, Execution(parts[0], parts[1], [])).times.append(float(parts[-1]))
    return list(found.values())


def evidence_by_run(root: Path) -> dict[str, list[Execution]]:
    """Each run's executions, from ``<root>/**/invocations/<run_id>/work/evidence.log``."""
    return {p.parent.parent.name: read_evidence(p)
            for p in root.glob("**/invocations/*/work/evidence.log")}


def overlapping(executions: list[Execution]) -> list[tuple[str, str]]:
    """Pairs of executions whose spans (first to last evidence line) overlap: each execution
    that starts before the latest-ending one before it has ended, with that one."""
    pairs = []
    latest: tuple[float, str] | None = None
    for start, end, nonce in sorted((min(e.times), max(e.times), e.nonce) for e in executions):
        if latest is not None and start < latest[0]:
            pairs.append((latest[1], nonce))
        if latest is None or end > latest[0]:
            latest = (end, nonce)
    return pairs


def call_label(row: dict[str, Any]) -> str | None:
    request = json.dumps(row["data"].get("request"))
    return EFFECT if EFFECT in request else SLOW if SLOW in request else None


def check_effects(ops: list[dict[str, Any]], evidence: dict[str, list[Execution]]
                  ) -> tuple[dict[str, int], list[str]]:
    """Side effects against their operations: duplicates, overlaps, missing, rejected runs."""
    counts = Counter[str]()
    problems: list[str] = []
    outcome = {(o["run_id"], call_label(o)): o["outcome"] for o in ops if o["event_type"] == "tool"}
    for run_id, executions in evidence.items():
        per_call = Counter(e.label for e in executions)
        counts["executions"] += len(executions)
        counts["executions_cut_short"] += sum(e.label == SLOW and len(e.times) < 6
                                              for e in executions)
        for label, n in per_call.items():
            if n > 1:
                counts["effects_twice"] += 1
                saved = outcome.get((run_id, label)) == "succeeded"
                counts["effects_twice_after_raw_saved"] += saved
                problems.append(f"run {run_id}: {label} executed {n} times "
                                f"(operation {outcome.get((run_id, label))})")
        for a, b in overlapping(executions):
            counts["overlapping_executions"] += 1
            problems.append(f"run {run_id}: executions {a} and {b} ran at the same time")
    for (run_id, call), out in outcome.items():
        ran = Counter(e.label for e in evidence.get(run_id, []))[call] if call else 0
        if out == "succeeded" and ran == 0:
            counts["succeeded_without_effect"] += 1
            problems.append(f"run {run_id}: {call} succeeded but never ran")
        if out == "denied_before_execution" and ran:
            counts["rejected_but_ran"] += 1
            problems.append(f"run {run_id}: {call} was rejected but ran")
    return dict(counts), problems


def claims(run_log: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """(run, epoch) -> the log row of the claim that raised the run to that epoch."""
    return {(r["run_id"], r["epoch"]): r for r in run_log
            if r["epoch"] and r["epoch"] != r["old_epoch"]}


def check_holders(run_log: list[dict[str, Any]], revocations: list[dict[str, Any]],
                  killed_at: dict[str, float | None]) -> tuple[int, list[str]]:
    """Claims of epoch E+1 while the claimer of E lived on without a confirmed receipt and
    without having handed the run back itself (``pending`` or ``waiting`` at epoch E: it let
    go at a step boundary; its receipt is committed right after, and a worker may claim the
    run in between)."""
    claimed = claims(run_log)
    receipts = {(r["run_id"], r["lease_epoch"]): r["created_at"] for r in revocations
                if r["confirmed"]}
    for r in run_log:  # a hand-back by the holder of that epoch counts as its receipt
        holder = claimed.get((r["run_id"], r["epoch"]))
        if r.get("status") in ("pending", "waiting") \
                and r.get("old_status") in ("running", "suspended") \
                and r["epoch"] == r["old_epoch"] and holder is not None \
                and holder["app"] == r["app"]:
            key = (r["run_id"], r["epoch"])
            receipts[key] = min(receipts.get(key, r["at"]), r["at"])
    problems = []
    for (run_id, epoch), row in claimed.items():
        before = claimed.get((run_id, epoch - 1))
        if before is None or before["app"] == row["app"]:
            continue
        gone = killed_at.get(before["app"])
        receipt = receipts.get((run_id, epoch - 1))
        if (gone is not None and gone <= row["at"]) or (receipt is not None
                                                        and receipt <= row["at"]):
            continue
        problems.append(f"run {run_id}: {row['app']} claimed epoch {epoch} at {row['at']:.3f} "
                        f"while {before['app']} (epoch {epoch - 1}) was alive, without a "
                        "confirmed revocation receipt")
    return len(problems), problems


def check_suspensions(run_log: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """Suspensions of a healthy run: before its lease had expired, by the store's clock, for
    ``TAKEOVER_GRACE_S`` (a worker whose own clock is ahead sees every lease expired). A
    holder that is paused, or too slow to renew within the lease, is not healthy: its
    suspension is the design (and its next renewal makes the run ``running`` again)."""
    problems = []
    for row in run_log:
        if row["status"] != "suspended" or row["old_status"] == "suspended":
            continue
        expired_for = row["at"] - float(row["lease_expires_at"] or 0.0)
        if expired_for < TAKEOVER_GRACE_S - CLOCK_TOLERANCE_S:
            problems.append(f"run {row['run_id']} suspended by {row['app']} when its lease "
                            f"(epoch {row['epoch']}) had expired {expired_for:.2f}s before by "
                            f"the store's clock, under the grace of {TAKEOVER_GRACE_S:g}s: "
                            f"{row['reason']}")
    return len(problems), problems


def check_writes(writes: list[dict[str, Any]], run_log: list[dict[str, Any]],
                 workers: set[str]) -> tuple[dict[str, int], list[str]]:
    """Every operation / attempt write came from the holder of the epoch current in its
    transaction; no operation was delivered by two processes."""
    claimed = claims(run_log)
    counts = Counter[str]()
    problems = []
    delivered_by: dict[str, set[str]] = defaultdict(set)
    for w in writes:
        counts["writes"] += 1
        holder = claimed.get((w["run_id"], w["epoch"]))
        if w["app"] not in workers:
            counts["writes_by_others"] += 1
        elif holder is None or holder["app"] != w["app"]:
            counts["stale_commits"] += 1
            problems.append(f"{w['tbl']} row of {w['operation_id']} (run {w['run_id']}) "
                            f"written by {w['app']} under epoch {w['epoch']}, held by "
                            f"{holder and holder['app']}")
        if w["tbl"] == "operations" and w["phase"] == "delivered":
            delivered_by[w["operation_id"]].add(w["app"])
    for op_id, apps in delivered_by.items():
        if len(apps) > 1:
            counts["delivered_twice"] += 1
            problems.append(f"operation {op_id} delivered by {sorted(apps)}")
    return dict(counts), problems


def lease_lost_lines(every: list[Incarnation]) -> int:
    pattern = re.compile(r"LEASE_LOST|FencedOut|lost the lease")
    return sum(len(pattern.findall(w.err.read_text(encoding="utf-8", errors="replace")))
               for w in every)


def query(url: str, sql: str) -> list[dict[str, Any]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url.split("?")[0], autocommit=True, row_factory=dict_row) as conn:
        conn.execute(f'SET search_path TO "{schema_of(url)}"')
        return list(conn.execute(sql).fetchall())


def verify(url: str, root: Path, run_ids: list[str], chaos: Chaos) -> dict[str, Any]:
    """Every count and every violation, from the store, its audit and the evidence."""
    from agentloom.store import open_store

    store = open_store(url)
    try:
        rows = {r["run_id"]: r for r in store.query("runs")}
        ops = store.query("operations")
    finally:
        store.close()
    statuses = Counter(rows[r]["status"] if r in rows else "missing" for r in run_ids)
    lost = [r for r in run_ids if r not in rows or rows[r]["status"] not in ENDED | {"waiting"}]
    run_log = query(url, "SELECT * FROM chaos_run_log ORDER BY seq")
    writes = query(url, "SELECT * FROM chaos_write_log ORDER BY seq")
    revocations = query(url, "SELECT * FROM revocations")
    effects, effect_problems = check_effects(ops, evidence_by_run(root))
    holders, holder_problems = check_holders(run_log, revocations,
                                             {w.app: w.killed_at for w in chaos.every})
    written, write_problems = check_writes(writes, run_log, {w.app for w in chaos.every})
    suspensions = [r for r in run_log if r["status"] == "suspended"]
    healthy_suspended, suspension_problems = check_suspensions(run_log)
    crashed = [f"worker {w.app} exited by itself with {w.exited_by_itself}: {tail(w.err)}"
               for w in chaos.every if w.exited_by_itself is not None]
    failed = {r: (rows[r]["data"] or {}).get("error") or {} for r in run_ids
              if r in rows and rows[r]["status"] == "failed"}
    violations = [*(f"run {r} lost: {rows[r]['status'] if r in rows else 'missing'}"
                    for r in lost),
                  *(f"run {r} failed: {e.get('code')}: {e.get('message')}"
                    for r, e in failed.items()),
                  *effect_problems, *holder_problems, *write_problems,
                  *suspension_problems, *crashed]
    if effects.get("executions", 0) == 0:
        violations.append("no execution left any evidence: does exec work here?")
    return {
        "statuses": dict(statuses), "lost": len(lost),
        "stale_commits": written.get("stale_commits", 0),
        "refused_commits_lease_lost": lease_lost_lines(chaos.every),
        "audited_writes": written.get("writes", 0),
        "two_live_holders": holders + effects.get("overlapping_executions", 0)
        + written.get("delivered_twice", 0),
        "claims_while_holder_alive": holders,
        "overlapping_executions": effects.get("overlapping_executions", 0),
        "delivered_twice": written.get("delivered_twice", 0),
        "effects_twice": effects.get("effects_twice", 0),
        "effects_twice_after_raw_saved": effects.get("effects_twice_after_raw_saved", 0),
        "executions": effects.get("executions", 0),
        "executions_cut_short": effects.get("executions_cut_short", 0),
        "claims": len(claims(run_log)),
        "suspensions": len(suspensions),
        "suspension_reasons": sorted({str(r["reason"]) for r in suspensions})[:5],
        "suspended_at_end": statuses.get("suspended", 0),
        "healthy_runs_suspended": healthy_suspended,
        "failed_runs": len(failed),
        "workers_exited_by_themselves": len(crashed),
        "violations": violations,
    }


# -- the bench -------------------------------------------------------------------------------
async def submit_all(runtime: Any, runs: int) -> list[str]:
    ids = []
    for i in range(runs):
        agent = "gated" if i % GATED_EVERY == 1 else "main"
        ids.append(await runtime.submit(f"chaos run {i}", agent=agent))
    return ids


async def _run(config: Path, url: str, *, workers: int, concurrency: int, runs: int,
               kills: int, pauses: int, timeout_s: float, rng: random.Random, shape: Shape
               ) -> tuple[list[str], Chaos, bool, float]:
    from agentloom.assembly import runtime_from_config
    from agentloom.config import load_config

    runtime = runtime_from_config(load_config(config), store=url)
    try:
        run_ids = await submit_all(runtime, runs)
        started = time.perf_counter()
        chaos = Chaos(config, url, workers=workers, concurrency=concurrency, rng=rng,
                      shape=shape)
        try:
            finished = await chaos.drive(runtime, runs=runs, kills=kills, pauses=pauses,
                                         timeout_s=timeout_s)
        finally:
            chaos.stop()
        return run_ids, chaos, finished, time.perf_counter() - started
    finally:
        await runtime.aclose()


def chaos_workers(*, workers: int, runs: int, kills: int, pauses: int, store_base: str,
                  concurrency: int = 4, seed: int = 1, timeout_s: float = 900.0,
                  keep: bool = False, shape: Shape = Shape()) -> dict[str, Any]:
    """Run the bench once in a fresh schema of ``store_base`` and a temporary folder, both
    removed after unless ``keep`` (to look into a violation); the report."""
    rng = random.Random(seed)
    url = fresh_url(store_base)
    tmp = tempfile.mkdtemp(prefix="agentloom-chaos-workers-")
    try:
        config = write_project(Path(tmp))
        create_store(url)
        try:
            run_ids, chaos, finished, elapsed = asyncio.run(_run(
                config, url, workers=workers, concurrency=concurrency, runs=runs, kills=kills,
                pauses=pauses, timeout_s=timeout_s, rng=rng, shape=shape))
            report = verify(url, Path(tmp) / "ws", run_ids, chaos)
        finally:
            if not keep:
                drop_schema(url)
    finally:
        if keep:
            log(f"kept: the store {url} and the folder {tmp} (worker logs: chaos-w*.err)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if not finished:
        report["violations"].insert(0, f"the runs did not all end within {timeout_s:g}s")
    tally = chaos.tally
    return {"workers": workers, "concurrency": concurrency, "runs": runs, "seed": seed,
            "pid_namespaces": shape.pid_namespaces, "skew_s": shape.skew_s,
            "schema": schema_of(url), "elapsed_s": round(elapsed, 1), "finished": finished,
            "kills": tally.kills, "kills_requested": kills, "kills_mid_run": tally.kills_mid_run,
            "runs_held_at_kill": tally.runs_held_at_kill, "pauses": tally.pauses,
            "pauses_requested": pauses, "pauses_mid_run": tally.pauses_mid_run,
            "restarts": tally.restarts, "forced": tally.forced, "approved": tally.approved,
            "rejected": tally.rejected, "answers_refused": tally.answer_refused,
            **report}


def print_report(r: dict[str, Any]) -> None:
    print(f"chaos on {r['workers']} workers x {r['concurrency']}: {r['runs']} runs in "
          f"{r['elapsed_s']} s, seed {r['seed']}"
          + (", each worker in its own PID namespace" if r["pid_namespaces"] else "")
          + (f", worker 0's clock {r['skew_s']:+g} s" if r["skew_s"] else ""))
    print(f"  kills {r['kills']}/{r['kills_requested']} ({r['kills_mid_run']} mid-run, "
          f"{r['runs_held_at_kill']} runs held), pauses {r['pauses']}/{r['pauses_requested']} "
          f"({r['pauses_mid_run']} mid-run), restarts {r['restarts']}, suspended runs of a "
          f"killed holder resumed with --force {r['forced']}")
    print(f"  approvals: {r['approved']} approved, {r['rejected']} rejected, "
          f"{len(r['answers_refused'])} answers refused")
    print(f"  runs by status: {r['statuses']}; lost: {r['lost']}")
    print(f"  commits under a stale epoch: {r['stale_commits']} of {r['audited_writes']} "
          f"audited writes; refused (LEASE_LOST on stderr): {r['refused_commits_lease_lost']}")
    print(f"  two live holders: {r['two_live_holders']} (over {r['claims']} claims: "
          f"{r['claims_while_holder_alive']} claims while the old holder lived unconfirmed, "
          f"{r['overlapping_executions']} overlapping executions, {r['delivered_twice']} "
          "operations delivered twice)")
    print(f"  side effects executed twice: {r['effects_twice']} (after raw_saved: "
          f"{r['effects_twice_after_raw_saved']}); executions {r['executions']}, "
          f"{r['executions_cut_short']} cut short by a kill")
    print(f"  suspended: {r['suspensions']} times ({r['healthy_runs_suspended']} healthy runs), "
          f"{r['suspended_at_end']} at the end"
          + "".join(f"\n    reason: {why}" for why in r["suspension_reasons"]))
    print(f"  failed runs (the scripted agent never fails by itself): {r['failed_runs']}")
    print(f"  workers that exited by themselves: {r['workers_exited_by_themselves']}")
    print(f"violations: {len(r['violations'])}")
    for problem in r["violations"]:
        print(f"  VIOLATION {problem}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="runs per worker at once")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--pauses", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds until the runs must all have ended")
    parser.add_argument("--store-base", default=os.environ.get("AGENTLOOM_TEST_PG", DEFAULT_PG),
                        help="a PostgreSQL URL; the bench uses a fresh schema, dropped after")
    parser.add_argument("--pid-namespaces", action="store_true",
                        help="run each worker in its own PID namespace (unshare -p -f "
                        "--mount-proc, same hostname; needs root or CAP_SYS_ADMIN)")
    parser.add_argument("--skew-s", type=float, default=0.0,
                        help="worker 0's clock reads this many seconds ahead (negative: behind)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true",
                        help="keep the schema and the folder (worker logs, workspaces)")
    args = parser.parse_args()
    if args.workers < 2 or args.runs < 1 or min(args.kills, args.pauses) < 0:
        parser.error("--workers must be at least 2, --runs at least 1, --kills and --pauses "
                     "at least 0")
    unreachable = pg_unreachable(args.store_base)
    if unreachable:
        print(unreachable, file=sys.stderr)
        return 2
    if args.pid_namespaces and (refused := namespaces_refused()):
        print(refused, file=sys.stderr)
        return 2
    os.environ["PGAPPNAME"] = "chaos-bench"
    report = chaos_workers(workers=args.workers, runs=args.runs, kills=args.kills,
                           pauses=args.pauses, store_base=args.store_base,
                           concurrency=args.concurrency, seed=args.seed, timeout_s=args.timeout,
                           keep=args.keep,
                           shape=Shape(pid_namespaces=args.pid_namespaces, skew_s=args.skew_s))
    if args.json:
        print(json.dumps(report))
    else:
        print_report(report)
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
