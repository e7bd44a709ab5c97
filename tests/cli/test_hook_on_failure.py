"""Issue 11 (hooks) and 12 point 5: a hook can fail closed with ``on_failure: deny``, and a
dropped patch is shown in ``runs show``.

A guard that raises, hangs past its timeout or returns garbage denies the call when it says
``on_failure: deny``: the tool never runs. With the default (``allow``, the spec's fail-open)
the same hook lets the call run. Driven through the CLI, the model on the real OpenAI wire
(the scripted server on 127.0.0.1).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

from .support import SERVER_KEY_ENV, Cli, openai_project

GUARDS = '''
import time


def raises(event):
    raise RuntimeError("the policy service is down")


def sleeps(event):
    time.sleep(30)
    return {"decision": "allow"}


def garbage(event):
    return 42


def allows(event):
    return {"decision": "allow"}


def bad_pointer(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/path", "value": "elsewhere.txt"}]}
'''


FAILURES = [("raises", "failed", "RuntimeError"), ("sleeps", "timed_out", "timed out"),
            ("garbage", "invalid", "hook 'guard'")]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
    with ScriptedOpenAIServer() as srv:
        yield srv


def _project(tmp_path: Path, guard: str, on_failure: str | None,
             server: ScriptedOpenAIServer) -> Path:
    """The model (on the real wire) writes a.txt, then answers; ``guard`` checks the write."""
    server.script(chat_turn("", tool_calls=[
        ("w1", "fs_write", json.dumps({"path": "a.txt", "content": "secret"}))]),
        chat_turn("done"))
    policy = "" if on_failure is None else f", on_failure: {on_failure}"
    config = openai_project(
        tmp_path / "p", server.base_url, tools=["fs.write"],
        extra="    hooks:\n      - {hook_id: guard, timing: before, match: {capability: fs.write}, "
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
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer, guard: str, status: str, said: str,
) -> None:
    op = _write_op(cli, _project(tmp_path, guard, "deny", server))

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
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer, guard: str, status: str, said: str,
) -> None:
    op = _write_op(cli, _project(tmp_path, guard, None, server))

    assert op["status"] == "succeeded" and op["executed_arguments"] == {
        "path": "a.txt", "content": "secret"}
    (row,) = op["hooks"]
    assert row["status"] == status and row["decision"] is None and row["on_failure"] is None
    assert said in row["diagnostic"]


def test_i11_hook_on_failure_deny_a_dropped_patch_denies_and_runs_show_names_it(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    op = _write_op(cli, _project(tmp_path, "bad_pointer", "deny", server))

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
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    op = _write_op(cli, _project(tmp_path, "bad_pointer", None, server))

    assert op["status"] == "succeeded"  # fail-open: the patch is dropped, the call runs
    assert op["executed_arguments"] == {"path": "a.txt", "content": "secret"}
    (row,) = op["hooks"]
    assert row["decision"] == "allow" and row["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"
    shown = cli("runs", "show", op["run_id"], "--store", cli.store)
    assert "patch dropped: HOOK_PATCH_PROTECTED" in shown.stdout
    assert "/path" in shown.stdout  # the pointer it could not use


def test_i11_hook_on_failure_rejects_other_values(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    config = _project(tmp_path, "raises", "block", server)

    result = cli("run", str(config), "write a", "--store", cli.store)

    assert result.exit_code == 2
    assert "hooks[0].on_failure" in result.stderr and "'allow'" in result.stderr


@pytest.mark.parametrize(("guard", "code", "on_failure", "verb"), [
    ("raises", "HOOK_FAILED", None, "the call went on"),
    ("sleeps", "HOOK_TIMED_OUT", None, "the call went on"),
    ("garbage", "HOOK_INVALID", "deny", "denied the call"),
    ("bad_pointer", "HOOK_PATCH_PROTECTED", None, "the call went on"),
])
def test_12_5_a_hook_failure_is_one_warning_on_stderr_in_json_warnings_and_runs_show(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer, guard: str, code: str,
    on_failure: str | None, verb: str,
) -> None:
    result = cli("run", str(_project(tmp_path, guard, on_failure, server)), "write a", "--store",
                 cli.store, "--json")

    assert result.exit_code == 0, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.startswith("warning: hook guard")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"warning: hook guard (before fs.write): {code}: ")
    assert lines[0].endswith(f"({verb})")
    if guard == "bad_pointer":
        assert "did you mean /payload/path?" in lines[0]
    out = json.loads(result.stdout)
    (warning,) = out["warnings"]
    assert (warning["hook_id"], warning["code"], warning["capability"]) == (
        "guard", code, "fs.write")
    assert warning["denied"] is (on_failure == "deny")
    shown = cli("runs", "show", out["run_id"], "--store", cli.store)
    assert f"warning: hook guard (before fs.write): {code}" in shown.stdout
    assert cli.json("runs", "show", out["run_id"], "--store", cli.store)["warnings"] == [warning]


def test_12_5_a_hook_that_succeeds_warns_nothing(
    tmp_path: Path, cli: Cli, server: ScriptedOpenAIServer,
) -> None:
    result = cli("run", str(_project(tmp_path, "allows", None, server)), "write a", "--store",
                 cli.store, "--json")

    assert result.exit_code == 0 and "warning" not in result.stderr
    assert json.loads(result.stdout)["warnings"] == []
