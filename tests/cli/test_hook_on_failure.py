"""Issue 11 (hooks) and 12 point 5: a hook can fail closed with ``on_failure: deny``, and a
dropped patch is shown in ``runs show``.

A guard that raises, hangs past its timeout or returns garbage denies the call when it says
``on_failure: deny``: the tool never runs. With the default (``allow``, the spec's fail-open)
the same hook lets the call run. Driven through the CLI on the script model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .support import Cli, write_project

GUARDS = '''
import time


def raises(event):
    raise RuntimeError("the policy service is down")


def sleeps(event):
    time.sleep(30)
    return {"decision": "allow"}


def garbage(event):
    return 42


def bad_pointer(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/path", "value": "elsewhere.txt"}]}
'''

WRITE_TURNS = """\
  - tool_calls:
      - name: fs_write
        arguments: {path: a.txt, content: secret}
  - text: done
"""

FAILURES = [("raises", "failed", "RuntimeError"), ("sleeps", "timed_out", "timed out"),
            ("garbage", "invalid", "hook 'guard'")]


def _project(tmp_path: Path, guard: str, on_failure: str | None) -> Path:
    policy = "" if on_failure is None else f", on_failure: {on_failure}"
    config = write_project(
        tmp_path / "p", WRITE_TURNS, tools=["fs.write"],
        extra="    hooks:\n      - {id: guard, at: before, match: {capability: fs.write}, "
              f"timeout_s: 0.5, handler: {{ref: \"guards:{guard}\"}}{policy}}}\n")
    (tmp_path / "p" / "guards.py").write_text(GUARDS, encoding="utf-8")
    return config


def _write_op(cli: Cli, config: Path) -> dict[str, Any]:
    out = cli.json("run", str(config), "write a", "--store", cli.store)
    assert out["status"] == "succeeded"
    shown = cli.json("runs", "show", out["run_id"], "--store", cli.store)
    (op,) = [o for o in shown["operations"] if o["capability"] == "fs.write"]
    return dict(op, run_id=out["run_id"])


@pytest.mark.parametrize(("guard", "status", "said"), FAILURES)
def test_i11_hook_on_failure_deny_a_failing_guard_denies_the_call(
    tmp_path: Path, cli: Cli, guard: str, status: str, said: str,
) -> None:
    op = _write_op(cli, _project(tmp_path, guard, "deny"))

    assert op["status"] == "denied" and op["executed_arguments"] is None
    assert op["attempts"] == {"count": 0, "items": []}  # fs.write never ran
    (row,) = op["hooks"]
    assert row["status"] == status and row["decision"] == "deny"
    assert row["on_failure"] == "deny"
    assert "could not decide" in row["reason"] and "(on_failure: deny)" in row["reason"]
    assert said in row["reason"]
    assert "could not decide" in op["reason"]


@pytest.mark.parametrize(("guard", "status", "said"), FAILURES)
def test_i11_hook_on_failure_default_allow_lets_the_call_run(
    tmp_path: Path, cli: Cli, guard: str, status: str, said: str,
) -> None:
    op = _write_op(cli, _project(tmp_path, guard, None))

    assert op["status"] == "succeeded" and op["executed_arguments"] == {
        "path": "a.txt", "content": "secret"}
    (row,) = op["hooks"]
    assert row["status"] == status and row["decision"] is None and row["on_failure"] is None
    assert said in row["diagnostic"]


def test_i11_hook_on_failure_deny_a_dropped_patch_denies_and_runs_show_names_it(
    tmp_path: Path, cli: Cli,
) -> None:
    op = _write_op(cli, _project(tmp_path, "bad_pointer", "deny"))

    assert op["status"] == "denied" and op["attempts"]["count"] == 0
    (row,) = op["hooks"]
    assert row["status"] == "succeeded" and row["decision"] == "deny"
    assert row["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"  # /path is not writable
    assert "its patch was dropped (HOOK_PATCH_PROTECTED" in row["reason"]

    shown = cli("runs", "show", op["run_id"], "--store", cli.store)
    assert shown.exit_code == 0, shown.stderr
    assert "hook guard (before): succeeded, deny" in shown.stdout
    assert "patch dropped: HOOK_PATCH_PROTECTED" in shown.stdout


def test_i11_patch_error_of_a_fail_open_hook_is_shown_in_runs_show(
    tmp_path: Path, cli: Cli,
) -> None:
    op = _write_op(cli, _project(tmp_path, "bad_pointer", None))

    assert op["status"] == "succeeded"  # fail-open: the patch is dropped, the call runs
    assert op["executed_arguments"] == {"path": "a.txt", "content": "secret"}
    (row,) = op["hooks"]
    assert row["decision"] == "allow" and row["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"
    shown = cli("runs", "show", op["run_id"], "--store", cli.store)
    assert "patch dropped: HOOK_PATCH_PROTECTED" in shown.stdout
    assert "/path" in shown.stdout  # the pointer it could not use


def test_i11_hook_on_failure_rejects_other_values(tmp_path: Path, cli: Cli) -> None:
    config = _project(tmp_path, "raises", "block")

    result = cli("run", str(config), "write a", "--store", cli.store)

    assert result.exit_code == 2
    assert "hooks[0].on_failure" in result.stderr and "'allow'" in result.stderr
