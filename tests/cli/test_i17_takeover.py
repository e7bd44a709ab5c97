"""Issue 17 acceptance 4 (000 §7.2): a run whose lease expired is taken over only once its old
holder's processes are confirmed gone — the holder is a dead process of this machine, or it
recorded a confirmed revocation receipt. A holder that may be alive (here: SIGSTOPped past its
lease) gets ``workers.takeover_grace_s``; then the run is reported ``suspended`` with the reason,
visible in ``runs show``, and only ``runs resume --force`` goes on, saying what may run twice."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from agentloom.agent.leases import takeover_verdict
from agentloom.kernel import Kernel
from agentloom.store import Insert, Put, WriteSet, open_store
from agentloom.store.holders import holder_id
from agentloom.store.records import get_run

from .support import SUBPROCESS_TIMEOUT_S, Cli, agentloom, spawn, write_project

SLEEPY = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [sleep, "60"], timeout_s: 120}
  - text: went on
"""
FAST_LEASES = "workers: {lease_ttl_s: 2, takeover_grace_s: 1, poll_s: 0.5}\n"
WAIT_S = 60.0


def _show(cli: Cli, run_id: str) -> dict[str, Any]:
    return dict(cli.json("runs", "show", run_id, "--store", cli.store))


def test_i17_takeover_without_confirmation_suspends_and_only_force_goes_on(
        tmp_path: Path, cli: Cli) -> None:
    config = write_project(tmp_path / "p", SLEEPY, tools=["exec"], extra=FAST_LEASES)
    run_id = cli.json("submit", str(config), "sleep", "--store", cli.store)["run_id"]
    holder = spawn("worker", str(config), "--store", cli.store, cwd=tmp_path)
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert holder.poll() is None and time.monotonic() < deadline, "exec never started"
            ops = [o for o in _show(cli, run_id)["operations"] if o["capability"] == "exec"]
            if ops and ops[0]["attempts"]["items"]:
                break
            time.sleep(0.1)
        holder.send_signal(signal.SIGSTOP)  # alive, holding the run, renewing nothing
        expires = _show(cli, run_id)["lease_expires_at"]
        time.sleep(max(0.0, expires + 1.0 - time.time()) + 0.5)  # lease + takeover grace

        swept = agentloom("worker", str(config), "--once", "--store", cli.store, "--json",
                          cwd=tmp_path)
        assert swept.returncode == 0, swept.stderr
        assert json.loads(swept.stdout)["left"] == [{"run_id": run_id,
                                                      "reason": "RUN_SUSPENDED"}]
        shown = _show(cli, run_id)
        assert shown["status"] == "suspended"
        diagnosis = shown["diagnosis"]
        assert diagnosis["state"] == "suspended"
        assert "left no revocation receipt" in diagnosis["waiting_for"]["detail"]
        assert str(holder.pid) in diagnosis["waiting_for"]["detail"]
        assert [c["capability"] for c in diagnosis["unknown_calls"]] == ["exec"]
        assert "--force" in diagnosis["next_step"] and "exec may then run twice" in \
            diagnosis["next_step"]
        assert shown["lease_epoch"] == 1  # nobody took it: the holder was not fenced out

        refused = cli("runs", "resume", run_id, "--store", cli.store)
        assert refused.exit_code != 0 and "RUN_SUSPENDED" in refused.stderr
        assert f"agentloom runs resume {run_id} --force" in refused.stderr

        forced = agentloom("runs", "resume", run_id, "--force", "--store", cli.store,
                           "--config", str(config), "--json", cwd=tmp_path)
        assert forced.returncode == 0, forced.stderr
        assert "exec" in forced.stderr and "may run twice" in forced.stderr
        assert json.loads(forced.stdout)["status"] == "succeeded"
        ended = _show(cli, run_id)
        assert ended["lease_epoch"] == 2
        (op,) = [o for o in ended["operations"] if o["capability"] == "exec"]
        assert op["status"] == "unknown" and op["attempts"]["count"] == 1  # never re-sent
    finally:
        holder.kill()
        holder.communicate(timeout=SUBPROCESS_TIMEOUT_S)


async def test_i17_takeover_verdict_needs_a_dead_holder_or_a_confirmed_receipt(
        tmp_path: Path, durable_store_url: str) -> None:
    kernel = Kernel(durable_store_url, workspace_root=tmp_path / "ws", sandbox_backend="none")
    store = kernel.store
    try:
        dead = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
        await dead.wait()
        now = time.time()

        async def run_held_by(run_id: str, owner: str | None, expired_s: float) -> Any:
            await kernel.coordinator.commit(WriteSet((Insert("runs", {
                "run_id": run_id, "status": "running", "lease_epoch": 3, "lease_owner": owner,
                "lease_expires_at": now - expired_s, "created_at": now, "updated_at": now,
                "data": {}}),)))
            return get_run(store, run_id)

        dead_holder = holder_id(dead.pid)
        assert takeover_verdict(store, await run_held_by("r0", None, 5), 30, now)[0] == "take"
        gone = await run_held_by("r1", dead_holder, 1)
        assert takeover_verdict(store, gone, 30, now) == ("take", f"its holder {dead_holder} is gone")
        far = await run_held_by("r2", "elsewhere:42", 5)
        verdict, why = takeover_verdict(store, far, 30, now)
        assert verdict == "wait" and "25s more" in why
        verdict, why = takeover_verdict(store, far, 3, now)
        assert verdict == "suspend" and "elsewhere:42 (epoch 3)" in why
        await kernel.coordinator.commit(WriteSet((Put("revocations", {
            "run_id": "r2", "lease_epoch": 3, "worker_id": "elsewhere:42", "confirmed": 0,
            "created_at": now, "data": {}}),)))
        assert takeover_verdict(store, far, 3, now)[0] == "suspend"  # unconfirmed: no proof
        await kernel.coordinator.commit(WriteSet((Put("revocations", {
            "run_id": "r2", "lease_epoch": 3, "worker_id": "elsewhere:42", "confirmed": 1,
            "created_at": now, "data": {}}),)))
        assert takeover_verdict(store, far, 3, now)[0] == "take"
        old_epoch = await run_held_by("r3", "elsewhere:42", 5)
        await kernel.coordinator.commit(WriteSet((Put("revocations", {
            "run_id": "r3", "lease_epoch": 2, "worker_id": "elsewhere:42", "confirmed": 1,
            "created_at": now, "data": {}}),)))
        assert takeover_verdict(store, old_epoch, 3, now)[0] == "suspend"  # another epoch's
    finally:
        kernel.close()


async def test_i17_a_holder_letting_a_run_go_records_its_revocation_receipt(
        tmp_path: Path, durable_store_url: str) -> None:
    kernel = Kernel(durable_store_url, workspace_root=tmp_path / "ws", sandbox_backend="none")
    try:
        lease = await kernel.start_run(workspace=False)
        await kernel.release_run(lease)
        row = kernel.store.get("revocations", {"run_id": lease.run_id,
                                               "lease_epoch": lease.lease_epoch})
        assert row is not None and row["worker_id"] == kernel.worker_id
        assert row["confirmed"] == 1  # nothing ever ran: nothing is left
        store = open_store(durable_store_url)
        try:
            run = get_run(store, lease.run_id)
            assert run is not None
            run = type(run).from_row({**store.get("runs", {"run_id": lease.run_id}),
                                      "lease_owner": "elsewhere:1"})
            assert takeover_verdict(store, run, 3600)[0] == "take"
        finally:
            store.close()
    finally:
        kernel.close()
