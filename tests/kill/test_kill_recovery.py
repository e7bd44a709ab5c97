"""Crash-point sweep (reliability plan §7 A1) with real processes and SIGKILL.

Each case starts ``python -m agentloom.testing.killharness`` with
``AGENTLOOM_CRASH_AT=<point>[@n]``, checks that it died by SIGKILL right after that
phase boundary's commit, runs it again with ``--recover`` and then checks, against
the store *and* the independent side-effect ledger, the invariants of DESIGN §3:
no lost operation (I2), no duplicated side effect (I1), an Attempt without a raw
result is ``unknown`` and never re-run (I3), no success without a raw result (I4),
a lost hook decision is ``indeterminate`` + fail-open and a committed one is never
re-run or rewritten (I5). Every store runs on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from agentloom.pipeline import crashpoints
from agentloom.testing.killharness import (
    HOOK_OFFSET,
    Observed,
    envelope_dict,
    logical_key,
    observe,
    violations,
)

pytestmark = pytest.mark.kill

CALLS = 3
TIMEOUT_S = 60
RUN_ID = "kill-run"


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    crash_at: str
    hooks: tuple[str, ...]
    crashed: int
    """Index of the call the process died in."""
    phase_at_kill: str
    """The crashed operation's committed phase when the process died."""
    outcome: str
    """The crashed operation's outcome after recovery."""
    effects: int
    """Ledger lines for the crashed operation after recovery."""
    lost_hook: str | None = None
    """The hook whose ``started`` row had no decision at the kill (→ ``indeterminate``)."""
    die_in_hook: str | None = None
    """Instead of a crash point, this hook kills the process after taking effect."""
    recovery_crash: str | None = None
    """The first recovering process dies here too; a second one finishes the run."""
    sweep: bool = True
    """``False``: skip ``Kernel.recover``; re-issuing each logical call resumes it."""

    @property
    def id(self) -> str:
        parts = [self.crash_at or f"die-in-{self.die_in_hook}-hook",
                 "+".join(self.hooks) or "nohooks"]
        if self.recovery_crash:
            parts.append(f"then-{self.recovery_crash}")
        if not self.sweep:
            parts.append("no-sweep")
        return "-".join(parts)


BOTH = ("before", "after")
CASES = [
    # Without before-hooks the intent and the Attempt start share one commit.
    Case(crash_at="intent_saved", hooks=(), crashed=0, phase_at_kill="attempt_started",
         outcome="unknown", effects=0),
    Case(crash_at="intent_saved", hooks=("before",), crashed=0, phase_at_kill="hooks_before",
         outcome="succeeded", effects=1, lost_hook="before"),
    Case(crash_at="intent_saved@2", hooks=BOTH, crashed=1, phase_at_kill="hooks_before",
         outcome="succeeded", effects=1, lost_hook="before"),
    Case(crash_at="hook_committed", hooks=("before",), crashed=0, phase_at_kill="hooks_before",
         outcome="succeeded", effects=1),
    Case(crash_at="hook_committed", hooks=("after",), crashed=0, phase_at_kill="hooks_after",
         outcome="succeeded", effects=1),
    Case(crash_at="hook_committed@2", hooks=BOTH, crashed=0, phase_at_kill="hooks_after",
         outcome="succeeded", effects=1),
    Case(crash_at="hook_committed@3", hooks=BOTH, crashed=1, phase_at_kill="hooks_before",
         outcome="succeeded", effects=1),
    Case(crash_at="attempt_started", hooks=(), crashed=0, phase_at_kill="attempt_started",
         outcome="unknown", effects=0),
    Case(crash_at="attempt_started", hooks=BOTH, crashed=0, phase_at_kill="attempt_started",
         outcome="unknown", effects=0),
    Case(crash_at="attempt_started@2", hooks=(), crashed=1, phase_at_kill="attempt_started",
         outcome="unknown", effects=0),
    Case(crash_at="effect_done", hooks=(), crashed=0, phase_at_kill="attempt_started",
         outcome="unknown", effects=1),
    Case(crash_at="effect_done", hooks=BOTH, crashed=0, phase_at_kill="attempt_started",
         outcome="unknown", effects=1),
    Case(crash_at="effect_done@2", hooks=("before",), crashed=1, phase_at_kill="attempt_started",
         outcome="unknown", effects=1),
    # Without after-hooks the raw and the effective result share one (terminal) commit.
    Case(crash_at="raw_saved", hooks=(), crashed=0, phase_at_kill="delivered",
         outcome="succeeded", effects=1),
    Case(crash_at="raw_saved", hooks=("after",), crashed=0, phase_at_kill="hooks_after",
         outcome="succeeded", effects=1, lost_hook="after"),
    Case(crash_at="raw_saved", hooks=BOTH, crashed=0, phase_at_kill="hooks_after",
         outcome="succeeded", effects=1, lost_hook="after"),
    Case(crash_at="raw_saved@2", hooks=("after",), crashed=1, phase_at_kill="hooks_after",
         outcome="succeeded", effects=1, lost_hook="after"),
    Case(crash_at="effective_saved", hooks=(), crashed=0, phase_at_kill="delivered",
         outcome="succeeded", effects=1),
    Case(crash_at="effective_saved", hooks=BOTH, crashed=0, phase_at_kill="delivered",
         outcome="succeeded", effects=1),
    Case(crash_at="delivered", hooks=(), crashed=0, phase_at_kill="delivered",
         outcome="succeeded", effects=1),
    Case(crash_at="delivered", hooks=BOTH, crashed=0, phase_at_kill="delivered",
         outcome="succeeded", effects=1),
    Case(crash_at="delivered@2", hooks=("after",), crashed=1, phase_at_kill="delivered",
         outcome="succeeded", effects=1),
]


# A hook that died mid-run; a crash during recovery; recovery by re-issuing logical calls.
MORE_CASES = [
    Case(crash_at=None, die_in_hook="before", hooks=BOTH, crashed=0,
         phase_at_kill="hooks_before", outcome="succeeded", effects=1, lost_hook="before"),
    Case(crash_at=None, die_in_hook="after", hooks=("after",), crashed=0,
         phase_at_kill="hooks_after", outcome="succeeded", effects=1, lost_hook="after"),
    Case(crash_at="intent_saved", hooks=BOTH, recovery_crash="attempt_started", crashed=0,
         phase_at_kill="hooks_before", outcome="unknown", effects=0, lost_hook="before"),
    Case(crash_at="raw_saved", hooks=BOTH, recovery_crash="effective_saved", crashed=0,
         phase_at_kill="hooks_after", outcome="succeeded", effects=1, lost_hook="after"),
    Case(crash_at="effect_done", hooks=(), recovery_crash="delivered", crashed=0,
         phase_at_kill="attempt_started", outcome="unknown", effects=1),
    Case(crash_at="hook_committed", hooks=("before",), sweep=False, crashed=0,
         phase_at_kill="hooks_before", outcome="succeeded", effects=1),
    Case(crash_at="effect_done@2", hooks=BOTH, sweep=False, crashed=1,
         phase_at_kill="attempt_started", outcome="unknown", effects=1),
    Case(crash_at="raw_saved", hooks=("after",), sweep=False, crashed=0,
         phase_at_kill="hooks_after", outcome="succeeded", effects=1, lost_hook="after"),
]


def harness(store: str, ledger: Path, *, hooks: tuple[str, ...], run_id: str = RUN_ID,
            crash_at: str | None = None, recover: bool = False, sweep: bool = True,
            die_in_hook: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_CRASH_AT"}
    if crash_at is not None:
        env["AGENTLOOM_CRASH_AT"] = crash_at
    argv = [sys.executable, "-m", "agentloom.testing.killharness", "--store", store,
            "--ledger", str(ledger), "--run-id", run_id, "--calls", str(CALLS)]
    if hooks:
        argv += ["--hooks", ",".join(hooks)]
    if recover:
        argv.append("--recover")
    if not sweep:
        argv.append("--no-sweep")
    if die_in_hook:
        argv += ["--die-in-hook", die_in_hook]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)


def printed(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def crash_and_recover(store: str, tmp_path: Path, case: Case) -> tuple[
        list[Observed], list[dict[str, Any]]]:
    """Kill, (optionally kill the recovery too,) recover; return each snapshot and the
    last process's JSON lines."""
    ledger = tmp_path / "effects.ledger"
    killed = harness(store, ledger, hooks=case.hooks, crash_at=case.crash_at,
                     die_in_hook=case.die_in_hook)
    assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
    assert [line["logical_key"] for line in printed(killed)] == [
        logical_key(i) for i in range(case.crashed)
    ], "the process must die inside the call the crash point names"
    snapshots = [observe(store, RUN_ID, ledger)]
    if case.recovery_crash:
        again = harness(store, ledger, hooks=case.hooks, recover=True, sweep=case.sweep,
                        crash_at=case.recovery_crash)
        assert again.returncode == -9, (again.returncode, again.stderr[-2000:])
        snapshots.append(observe(store, RUN_ID, ledger))
    recovered = harness(store, ledger, hooks=case.hooks, recover=True, sweep=case.sweep)
    assert recovered.returncode == 0, recovered.stderr[-2000:]
    snapshots.append(observe(store, RUN_ID, ledger))
    return snapshots, printed(recovered)


# reached only by a resumable handler (an A2A call), which the harness's tool is not: swept by
# tests/a2a/test_i19_crash.py against a real A2A server
RESUMABLE_POINTS = {"handle_received", "handle_saved"}


def test_the_sweep_covers_every_crash_point() -> None:
    assert {(c.crash_at or "").partition("@")[0] for c in CASES} \
        == set(crashpoints.POINTS) - RESUMABLE_POINTS


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_sigkill_at_a_phase_boundary_then_recovery_keeps_every_invariant(
    case: Case, durable_store_url: str, tmp_path: Path
) -> None:
    check_crash_and_recovery(case, durable_store_url, tmp_path)


@pytest.mark.parametrize("case", MORE_CASES, ids=lambda c: c.id)
def test_sigkill_in_a_hook_or_during_recovery_then_recovery_keeps_every_invariant(
    case: Case, durable_store_url: str, tmp_path: Path
) -> None:
    check_crash_and_recovery(case, durable_store_url, tmp_path)


def check_crash_and_recovery(case: Case, store: str, tmp_path: Path) -> None:
    snapshots, lines = crash_and_recover(store, tmp_path, case)
    at_kill, after = snapshots[0], snapshots[-1]
    crashed_key = logical_key(case.crashed)

    # The boundary fires after its commit: the crashed operation is stored in that phase.
    (killed_op,) = at_kill.by_key()[crashed_key]
    assert killed_op["phase"] == case.phase_at_kill
    # Negative control on the checker: the killed state *is* incomplete where it should be.
    before_recovery = violations(at_kill, CALLS)
    for index in range(case.crashed + 1, CALLS):
        assert f"{logical_key(index)}: 0 operations (want exactly 1)" in before_recovery
    if killed_op["outcome"] is None:
        assert any(v.startswith(f"{crashed_key}: left non-terminal") for v in before_recovery)

    # I1, I2, I4, I6 and "the envelope says what the handler ran", for the whole run.
    assert violations(after, CALLS) == []

    # The recovering process reports the stored truth for every logical call.
    calls = [line for line in lines if line["source"] == "call"]
    ops = {k: rows[0] for k, rows in after.by_key().items()}
    assert [(c["logical_key"], c["operation_id"], c["outcome"]) for c in calls] == [
        (k, ops[k]["operation_id"], ops[k]["outcome"]) for k in map(logical_key, range(CALLS))
    ]

    # Committed facts are never rewritten: terminal envelopes, raw results, hook decisions.
    for earlier, later in pairwise(snapshots):
        assert_committed_facts_unchanged(earlier, later)

    for index in range(CALLS):
        key = logical_key(index)
        op = ops[key]
        crashed = index == case.crashed
        outcome = case.outcome if crashed else "succeeded"
        assert op["outcome"] == outcome, key
        assert after.effect_count(op["operation_id"]) == (case.effects if crashed else 1), key
        envelope = envelope_dict(op)
        if outcome == "unknown":
            assert_unknown_and_not_rerun(after, op)
        lost = case.lost_hook if crashed else None
        assert_hooks(after, op, case.hooks, lost=lost, succeeded=outcome == "succeeded",
                     lost_ran=crashed and case.die_in_hook is not None)
        patched = "before" in case.hooks and lost != "before"
        want_n = index + HOOK_OFFSET if patched else index
        assert envelope["executed_arguments"]["n"] == want_n, key
        assert envelope["proposed_arguments"] == {"n": index}, key
        if after.effect_count(op["operation_id"]):
            assert after.effect_values(op["operation_id"]) == [want_n], key
        if outcome == "succeeded":
            checked = "after" in case.hooks and lost != "after"
            assert envelope["result"]["metadata"].get("checked") is (True if checked else None)


def assert_committed_facts_unchanged(at_kill: Observed, after: Observed) -> None:
    now = {r["operation_id"]: r for r in after.operations}
    for row in at_kill.operations:
        if row["outcome"] is not None:
            assert envelope_dict(now[row["operation_id"]]) == envelope_dict(row)
        for attempt in at_kill.attempts[row["operation_id"]]:
            if attempt["status"] != "started":
                (same,) = [a for a in after.attempts[row["operation_id"]]
                           if a["attempt_no"] == attempt["attempt_no"]]
                assert (same["status"], same["data"]) == (attempt["status"], attempt["data"])
        for hook in at_kill.hook_rows[row["operation_id"]]:
            if hook["status"] != "started":
                (same,) = [h for h in after.hook_rows[row["operation_id"]]
                           if (h["timing"], h["position"]) == (hook["timing"], hook["position"])]
                assert (same["status"], same["decision"], same["data"]) == (
                    hook["status"], hook["decision"], hook["data"])


def assert_unknown_and_not_rerun(obs: Observed, op: dict[str, Any]) -> None:
    envelope = envelope_dict(op)
    assert envelope["error"]["external_outcome"] == "unknown"
    assert envelope["error"]["code"] == "ATTEMPT_OUTCOME_UNKNOWN"
    assert envelope["attempts"] == 1
    assert [a["status"] for a in obs.attempts[op["operation_id"]]] == ["lost"]


def assert_hooks(obs: Observed, op: dict[str, Any], hooks: tuple[str, ...], *,
                 lost: str | None, succeeded: bool, lost_ran: bool) -> None:
    """Each configured hook ran at most once per operation; a lost one is ``indeterminate``
    and was not run again (``lost_ran``: it had run once before the kill); a committed
    decision was not run again either."""
    operation_id = op["operation_id"]
    want: dict[tuple[str, int], tuple[str, str | None]] = {}
    for timing in hooks:
        if timing == "after" and not succeeded:
            continue  # no raw result, so the after-chain never started
        want[(timing, 0)] = ("indeterminate", None) if timing == lost else ("succeeded", "allow")
    rows = {(h["timing"], h["position"]): (h["status"], h["decision"])
            for h in obs.hook_rows[operation_id]}
    assert rows == want, op["logical_key"]
    for timing in ("before", "after"):
        status = want.get((timing, 0), ("",))[0]
        ran = 1 if status == "succeeded" or (status == "indeterminate" and lost_ran) else 0
        assert obs.hook_calls[(operation_id, timing)] == ran, (op["logical_key"], timing)


def test_negative_control_a_new_run_id_re_executes_and_the_checker_reports_it(
    durable_store_url: str, tmp_path: Path
) -> None:
    """Without logical-key reuse on the same run, call-0 runs twice: the checker must say so."""
    ledger = tmp_path / "effects.ledger"
    killed = harness(durable_store_url, ledger, hooks=(), crash_at="effect_done")
    assert killed.returncode == -9, killed.stderr[-2000:]
    fresh = harness(durable_store_url, ledger, hooks=(), run_id="another-run")
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    found = violations(observe(durable_store_url, "another-run", ledger), CALLS)
    assert "call-0: the side effect happened 2 times" in found
    assert any(v.startswith("effect n=0 by ") and "no operation of run another-run" in v
               for v in found)
