"""Runs the MCP conformance suite's client scenarios against AgentLoom's client (the adapter
``client.py``) and compares the outcome with the expected-failures baseline ``baseline.yml``.

::

    python tests/mcp/conformance/run.py [--scenario NAME ...] [--json]

Every client scenario of the pinned suite whose spec version is a dated one (not ``draft`` or
``extension``) runs, two at a time (``--jobs``; each starts its own test servers on 127.0.0.1,
at ports of their own, and runs ``client.py`` with their URL). A scenario *fails* when one of
its checks is a failure or a warning — the suite's own rule for a baseline
(``--expected-failures``). Exit 0 when exactly
the baseline's scenarios failed; 1 when a scenario outside it failed or one inside it passed
(the baseline is stale), naming them.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from install import ConformanceUnavailable, Suite, install  # noqa: E402

__all__ = ["BASELINE", "ConformanceUnavailable", "Outcome", "Report", "Suite", "install",
           "load_baseline", "run", "scenarios"]

BASELINE = HERE / "baseline.yml"
CLIENT = HERE / "client.py"
SCENARIO_TIMEOUT_MS = 180_000
"""The suite's limit for one client run (the adapter starts the CLI two to four times)."""
SKIPPED_TAGS = frozenset({"draft", "extension"})


@dataclass
class Outcome:
    scenario: str
    passed: int = 0
    failed: list[str] = field(default_factory=list)
    """``check id: description`` of each failed or warned check."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


@dataclass
class Report:
    outcomes: list[Outcome]
    expected: dict[str, str]
    """The baseline: scenario -> the rule that makes AgentLoom refuse it."""

    @property
    def unexpected(self) -> list[str]:
        return [o.scenario for o in self.outcomes if not o.ok and o.scenario not in self.expected]

    @property
    def stale(self) -> list[str]:
        return [o.scenario for o in self.outcomes if o.ok and o.scenario in self.expected]

    def figures(self) -> dict[str, Any]:
        ran = {o.scenario for o in self.outcomes}
        return {"scenarios": len(self.outcomes),
                "passed": sum(o.ok for o in self.outcomes),
                "baseline": sum(not o.ok and o.scenario in self.expected for o in self.outcomes),
                "failed": len(self.unexpected), "stale": len(self.stale),
                "baseline_not_run": sorted(set(self.expected) - ran)}


def load_baseline(path: Path = BASELINE) -> dict[str, str]:
    """The baseline's scenarios, each with its reason (``reasons``); a scenario without one is
    an error: every expected failure names the rule behind it."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    client = [str(name) for name in data.get("client") or []]
    reasons = data.get("reasons") or {}
    missing = [name for name in client if not str(reasons.get(name) or "").strip()]
    if missing:
        raise ValueError(f"{path}: no reason given for {', '.join(missing)} (add it under reasons:)")
    return {name: str(reasons[name]).strip() for name in client}


def scenarios(suite: Suite) -> list[str]:
    """The suite's client scenarios of a dated spec version, in its order."""
    listed = subprocess.run([str(suite.node), str(suite.cli), "list", "--client"],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    found = []
    for line in listed.splitlines():
        match = re.match(r"\s+- (\S+) \[([^\]]*)\]", line)
        if match and not set(match.group(2).split(",")) <= SKIPPED_TAGS:
            found.append(match.group(1))
    return found


def run_one(suite: Suite, scenario: str, out: Path) -> Outcome:
    started = time.monotonic()
    folder = out / re.sub(r"[^A-Za-z0-9_.-]", "_", scenario)
    subprocess.run(
        [str(suite.node), str(suite.cli), "client", "--command", f"{sys.executable} {CLIENT}",
         "--scenario", scenario, "--timeout", str(SCENARIO_TIMEOUT_MS), "-o", str(folder)],
        capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_MS / 1000 + 60, check=False)
    outcome = Outcome(scenario, seconds=time.monotonic() - started)
    found = sorted(folder.rglob("checks.json"))
    if not found:
        outcome.failed.append("no checks.json: the suite did not run the scenario")
        return outcome
    for check in json.loads(found[-1].read_text(encoding="utf-8")):
        if check.get("status") == "SUCCESS":
            outcome.passed += 1
        elif check.get("status") in ("FAILURE", "WARNING"):
            outcome.failed.append(f"{check.get('id')} ({check['status'].lower()}): "
                                  f"{check.get('errorMessage') or check.get('description')}")
    return outcome


def run(selected: list[str] | None = None, *, out: Path | None = None, jobs: int = 2,
        echo: bool = False, baseline: Path = BASELINE) -> Report:
    """Run the scenarios, ``jobs`` at a time (each on ports of its own), in the suite's order."""
    suite = install()
    names = selected or scenarios(suite)

    def one(name: str, folder: Path) -> Outcome:
        outcome = run_one(suite, name, folder)
        if echo:
            mark = "ok  " if outcome.ok else "FAIL"
            print(f"{mark} {name}  ({outcome.passed} checks passed, {outcome.seconds:.0f} s)"
                  + "".join(f"\n       {line}" for line in outcome.failed), flush=True)
        return outcome

    with (tempfile.TemporaryDirectory(prefix="mcp-conformance-") as tmp,
          ThreadPoolExecutor(max_workers=max(1, jobs)) as pool):
        outcomes = list(pool.map(lambda name: one(name, out or Path(tmp)), names))
    return Report(outcomes, load_baseline(baseline))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", help="Run only this scenario (repeat).")
    parser.add_argument("--out", type=Path, help="Keep the suite's results in this folder.")
    parser.add_argument("--jobs", type=int, default=2, help="Scenarios run at once (default 2).")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    started = time.monotonic()
    report = run(args.scenario, out=args.out, jobs=args.jobs, echo=not args.json)
    figures = {**report.figures(), "seconds": round(time.monotonic() - started)}
    if args.json:
        print(json.dumps({**figures, "unexpected": report.unexpected, "stale": report.stale}))
    else:
        print(f"{figures['passed']} passed, {figures['baseline']} failed as the baseline expects, "
              f"{figures['failed']} failed outside it, {figures['stale']} baseline entries now "
              f"pass; {figures['scenarios']} scenarios in {figures['seconds']} s")
        for name in report.unexpected:
            print(f"unexpected failure: {name}")
        for name in report.stale:
            print(f"stale baseline entry (it passes now): {name}")
    return 1 if report.unexpected or report.stale else 0


if __name__ == "__main__":
    sys.exit(main())
