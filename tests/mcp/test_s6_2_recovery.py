"""000 §6.2 / §3.3: an MCP call is never sent again after a crash. A real ``agentloom run``
process SIGKILLs itself (``AGENTLOOM_CRASH_AT``) after the server carried the call out but
before its raw result was saved — the call is ``unknown`` on resume and the server's side
effect happened once — or just after the raw result was saved — the result is delivered once,
the effect still happened once. SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_support import LAB

TIMEOUT_S = 120
TURNS = """\
turns:
  - tool_calls:
      - {{id: m, name: mcp__lab__mark, arguments: {{path: {ledger}}}}}
  - text: done
"""


def agentloom(*args: str, cwd: Path, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTLOOM_STORE", "AGENTLOOM_CRASH_AT")}
    if crash_at:
        env["AGENTLOOM_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.mark.kill
# the model call before it passes effect_done (@1) but no raw_saved of its own
@pytest.mark.parametrize(("crash_at", "outcome"), [("effect_done@2", "unknown"),
                                                   ("raw_saved@1", "succeeded")])
def test_s6_2_an_mcp_call_cut_off_by_a_crash_is_never_sent_again(
    crash_at: str, outcome: str, tmp_path: Path, durable_store_url: str,
) -> None:
    ledger = tmp_path / "ledger.txt"
    (tmp_path / "turns.yaml").write_text(TURNS.format(ledger=json.dumps(str(ledger))), encoding="utf-8")
    config = tmp_path / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        "    tools: [mcp.lab.mark]\n"
        f"mcp_servers:\n  lab: {{transport: stdio, command: {json.dumps(sys.executable)}, "
        f"args: [{json.dumps(str(LAB))}]}}\nsandbox: {{backend: none}}\n", encoding="utf-8")

    crashed = agentloom("run", str(config), "mark once", "--store", durable_store_url, "--json",
                        cwd=tmp_path, crash_at=crash_at)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert ledger.read_text(encoding="utf-8") == "marked\n"  # the server carried it out
    (run,) = json.loads(agentloom("runs", "list", "--store", durable_store_url, "--json",
                                  cwd=tmp_path).stdout)
    resumed = agentloom("runs", "resume", run["run_id"], "--store", durable_store_url, "--json",
                        cwd=tmp_path)

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "succeeded"
    shown = json.loads(agentloom("runs", "show", run["run_id"], "--store", durable_store_url,
                                 "--json", cwd=tmp_path).stdout)
    (mark,) = [o for o in shown["operations"] if o["capability"] == "mcp.lab.mark"]
    assert mark["outcome"] == outcome and mark["attempts"]["count"] == 1
    assert ledger.read_text(encoding="utf-8") == "marked\n"  # carried out once, never again
