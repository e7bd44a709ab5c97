"""Issue #34 (2): holder liveness never rests on a PID another namespace sees differently, and
leases are judged in the store's time, so a worker whose clock is off suspends no healthy run.

Real processes: a judge in its own PID namespace (``unshare -p -f --mount-proc``, the same
hostname), and a worker whose clock reads one hour ahead (``agentloom.testing.skewed_clock``)
passing over a run that another worker drives, on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloom.agent.leases import holder_gone, rebased, takeover_verdict
from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.store import open_store
from agentloom.store.holders import holder_id, parse_holder, this_space
from agentloom.store.records import get_run

HOUR = 3600.0
JUDGE = """
import json, sys
from agentloom.agent.leases import holder_gone
from agentloom.store.holders import holder_id
print(json.dumps({"gone": holder_gone(sys.argv[1]), "legacy": holder_gone(sys.argv[2]),
                  "me": holder_id()}))
"""


def _namespaces_refused() -> str | None:
    try:
        done = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare cannot run here: {exc}"
    return None if done.returncode == 0 else \
        f"PID namespaces are refused here (no CAP_SYS_ADMIN): {done.stderr.strip()}"


def test_i34_2_a_holder_in_another_pid_namespace_is_never_judged_gone() -> None:
    refused = _namespaces_refused()
    if refused:
        pytest.skip(refused)
    mine = holder_id()
    legacy = f"{socket.gethostname()}:{os.getpid()}"  # the id this process had before
    done = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c",
                           JUDGE, mine, legacy], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # this process is alive; in the judge's namespace its pid names nothing (or another)
    assert seen["gone"] is False and seen["legacy"] is False
    theirs = parse_holder(seen["me"])
    assert theirs.host == socket.gethostname() and theirs.space != this_space()
    assert theirs.pid == 1  # the judge was its namespace's first process
    assert holder_gone(seen["me"]) is False  # not judged from here either (it has exited)


def test_i34_2_a_dead_holder_of_this_namespace_is_still_judged_gone() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert holder_gone(holder_id(dead.pid)) is True
    assert holder_gone(holder_id()) is False
    assert holder_gone(f"{socket.gethostname()}:{dead.pid}") is False  # no space: not judged
    parent = holder_id(os.getppid())
    assert holder_gone(parent) is False
    reused = parent.rpartition("/")[0] + "/1"  # that pid, but a process that started at boot
    assert holder_gone(reused) is True


def test_i34_2_run_times_follow_the_clock_of_the_process_that_reads_them() -> None:
    written = {"deadline": 1000.0, "waiting": {"since": 900.0}, "clock_offset_s": 0.0}
    ahead = rebased(written, -HOUR)  # this process reads an hour ahead of the store
    assert ahead["deadline"] == 1000.0 + HOUR and ahead["waiting"]["since"] == 900.0 + HOUR
    assert rebased(ahead, 0.0)["deadline"] == 1000.0
    assert rebased({"deadline": 5.0}, -HOUR)["deadline"] == 5.0  # written before: as is


def _project(folder: Path) -> Path:
    turns = [{"tool_calls": [{"name": "exec", "arguments": {
                 "argv": ["python3", "-c", "import time; time.sleep(90)"], "timeout_s": 120}}]},
             {"text": "done"}]
    (folder / "turns.yaml").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        "    tools: [exec]\n"
        "workers: {lease_ttl_s: 2, takeover_grace_s: 1, poll_s: 0.5}\n", encoding="utf-8")
    return config


def _agentloom(*argv: str, skew_s: float = 0.0) -> list[str]:
    if skew_s:
        return [sys.executable, "-m", "agentloom.testing.skewed_clock", "--offset-s",
                str(skew_s), "--", *argv]
    return [sys.executable, "-m", "agentloom", *argv]


def _wait_for(store_url: str, run_id: str, predicate: str, timeout_s: float = 60) -> str:
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        store = open_store(store_url)
        try:
            run = get_run(store, run_id)
            ops = store.query("operations", {"run_id": run_id})
        finally:
            store.close()
        status = run.status if run is not None else "missing"
        if predicate == "calling" and status == "running" and \
                any(o["capability_key"].endswith("exec") for o in ops):
            return status
        if predicate == "ended" and run is not None and run.ended is not None:
            return status
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never got {predicate}")


async def _submit(config: Path, store_url: str) -> str:
    runtime = runtime_from_config(load_config(config), store=store_url)
    try:
        return await runtime.submit("wait a while")
    finally:
        await runtime.aclose()


@pytest.mark.kill
def test_i34_2_a_worker_an_hour_ahead_suspends_no_healthy_run(
        tmp_path: Path, durable_store_url: str) -> None:
    config = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    run_id = asyncio.run(_submit(config, durable_store_url))
    holder = subprocess.Popen(_agentloom("worker", str(config), "--store", durable_store_url,
                                         "--once"),
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(durable_store_url, run_id, "calling")
        ahead = subprocess.run(_agentloom("worker", str(config), "--store", durable_store_url,
                                          "--once", skew_s=HOUR),
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert ahead.returncode == 0, ahead.stderr
        assert "left run" not in ahead.stderr, ahead.stderr  # it judged the run healthy
        store = open_store(durable_store_url)
        try:
            run = get_run(store, run_id)
            assert run is not None and run.status == "running" and run.lease_epoch == 1
            assert takeover_verdict(store, run, 1.0)[0] == "wait"  # in the store's time
            workers = json.loads(subprocess.run(
                _agentloom("workers", "list", "--all", "--json", "--store", durable_store_url),
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60).stdout)
        finally:
            store.close()
        skews = sorted(w["clock_skew_s"] or 0.0 for w in workers)
        assert skews[0] == 0.0 and abs(skews[-1] - HOUR) < 5  # the one ahead is named
        stopped = subprocess.run(_agentloom("runs", "stop", run_id, "--store", durable_store_url),
                                 cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert stopped.returncode == 0, stopped.stderr
        assert _wait_for(durable_store_url, run_id, "ended") == "cancelled"  # by its holder
    finally:
        holder.kill()
        holder.communicate()
