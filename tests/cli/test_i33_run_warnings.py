"""Issue 33 point 4, "no silent failure": ``agentloom run`` lists every hook failure of the run
again at the end of its output (``warnings`` with ``--json``), and a command that exited
non-zero is shown by its exit code and the tail of its stderr — live and in ``runs show`` —
not by the head of its JSON result.

Real runs through the CLI on the offline script model; ``exec`` runs ``sh`` in the sandbox
(Landlock on a host without bubblewrap).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .support import SUBPROCESS_TIMEOUT_S, Cli, write_project

GUARDS = '''
def raises(event):
    raise RuntimeError("the policy service is down")
'''

# 40 lines of noise on stderr, then the line that says why: far past a 200-character head
FAILING = "for i in $(seq 1 40); do echo noise $i >&2; done; echo out; echo boom: disk full >&2; exit 3"

TURNS = f"""\
  - tool_calls:
      - {{id: c-1, name: exec, arguments: {{argv: ["sh", "-c", "{FAILING}"]}}}}
      - {{id: w-1, name: fs_write, arguments: {{path: a.txt, content: hi}}}}
  - text: done
"""

HOOK = ("    hooks:\n      - {hook_id: guard, timing: before, match: {capability: fs.write}, "
        "handler: {ref: \"i33_guards:raises\"}}\n")

WARNING = ("warning: hook guard (before fs.write): HOOK_FAILED: hook 'guard' raised RuntimeError: "
           "the policy service is down (the call went on)")


def _project(tmp_path: Path, *, hook: bool = True) -> Path:
    """An exec that exits 3 and a write whose before-hook raises (when ``hook``)."""
    config = write_project(tmp_path / "p", TURNS, extra=HOOK if hook else "")
    (tmp_path / "p" / "i33_guards.py").write_text(GUARDS, encoding="utf-8")
    return config


def test_i33_4_hook_failures_are_listed_again_at_the_very_end_of_the_human_output(
    tmp_path: Path, cli: Cli,
) -> None:
    config = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    # stderr into stdout, as a terminal or a CI log shows them: the order is what is tested
    done = subprocess.run([sys.executable, "-m", "agentloom", "run", str(config), "do it",
                           "--store", cli.store], cwd=tmp_path, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=SUBPROCESS_TIMEOUT_S, check=False)

    assert done.returncode == 0, done.stdout
    lines = done.stdout.rstrip("\n").splitlines()
    assert lines[-2:] == ["1 hook warning(s) in this run:", "  " + WARNING]
    assert WARNING in lines[:-2]  # the line printed when it happened stays
    assert lines.index("1 hook warning(s) in this run:") > max(
        i for i, line in enumerate(lines) if line.startswith(("run ", "  agentloom runs events")))


def test_i33_4_runs_resume_of_a_finished_run_lists_its_hook_failures_at_the_end(
    tmp_path: Path, cli: Cli,
) -> None:
    run_id = cli.json("run", str(_project(tmp_path)), "do it", "--store", cli.store)["run_id"]

    resumed = cli("runs", "resume", run_id, "--store", cli.store)

    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.stderr.rstrip("\n").splitlines()[-2:] == [
        "1 hook warning(s) in this run:", "  " + WARNING]


def test_i33_4_run_json_has_the_hook_failures_in_warnings_and_no_summary_block(
    tmp_path: Path, cli: Cli,
) -> None:
    result = cli("run", str(_project(tmp_path)), "do it", "--store", cli.store, "--json")

    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)  # stdout is exactly the one object
    (warning,) = out["warnings"]
    assert set(warning) == {"operation_id", "capability", "hook_id", "timing", "status", "code",
                            "message", "denied"}
    assert (warning["hook_id"], warning["timing"], warning["capability"], warning["status"],
            warning["code"], warning["denied"]) == (
        "guard", "before", "fs.write", "failed", "HOOK_FAILED", False)
    assert "RuntimeError: the policy service is down" in warning["message"]
    assert result.stderr.splitlines().count(WARNING) == 1  # as it happened; no end block
    assert "hook warning(s)" not in result.stderr
    clean = cli.json("run", str(_project(tmp_path / "clean", hook=False)), "do it", "--store",
                     cli.store)
    assert clean["warnings"] == []


def test_i33_4_the_live_view_shows_a_failed_exec_by_its_exit_code_and_stderr_tail(
    tmp_path: Path, cli: Cli,
) -> None:
    result = cli("run", str(_project(tmp_path, hook=False)), "do it", "--store", cli.store)

    assert result.exit_code == 0, result.stderr
    (line,) = [x for x in result.stdout.splitlines() if "exec [c-1]" in x]
    assert line.split("exec [c-1] ", 1)[1] == (
        "succeeded: exit 3: … noise 37 ⏎ noise 38 ⏎ noise 39 ⏎ noise 40 ⏎ boom: disk full")
    assert "hook warning" not in result.stderr  # none failed: no block


def test_i33_4_runs_show_prints_a_failed_exec_exit_code_and_stderr_tail(
    tmp_path: Path, cli: Cli,
) -> None:
    run_id = cli.json("run", str(_project(tmp_path, hook=False)), "do it", "--store",
                      cli.store)["run_id"]

    shown = cli("runs", "show", run_id, "--store", cli.store)

    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = next(i for i, x in enumerate(lines) if "tool exec [c-1]" in x)
    block = lines[at:next(i for i in range(at + 1, len(lines)) if "tool fs.write" in lines[i])]
    assert ("     exit 3: … noise 37 ⏎ noise 38 ⏎ noise 39 ⏎ noise 40 ⏎ boom: disk full"
            in block), block
    events = cli.json("runs", "events", run_id, "--store", cli.store)
    (done,) = [e for e in events if e["type"] == "tool.call.completed" and e["call_id"] == "c-1"]
    assert done["summary"].startswith("exit 3: ") and done["summary"].endswith("boom: disk full")
