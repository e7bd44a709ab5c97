"""Issue 38 point 1: ``agentloom hooks replay CONFIG`` runs a config's hooks, as they are now,
on the recorded calls of past runs — executing nothing, writing nothing — and reports exactly
the calls whose decision or payload would change (exit 1), or none (exit 0).

Twenty runs are recorded with a permissive policy (an allow-all python hook on ``exec``): the
model (the scripted OpenAI server on 127.0.0.1) calls ``exec`` with and without ``rm`` and a
canary SDK tool that writes a file in a folder the test watches, with and without a secret in
its argument. The new policy adds a ``command`` hook (run in the sandbox) denying an ``exec``
whose argv holds ``rm`` and a python hook redacting the secret. The expected changes are
computed from ``runs show --json`` of the recorded runs; the canary folder and the row count of
every table are compared before and after. SQLite and PostgreSQL, the CLI with ``--store``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.support import SERVER_KEY_ENV, Cli
from tests.conftest import drop_store, fresh_store_url

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.store import open_store
from agentloom.store.schema import TABLES
from agentloom.testing.openai_server import ScriptedOpenAIServer, chat_turn

RUNS = 20
SECRET = "SECRET-TOKEN"

CANARY = '''
from pathlib import Path

from agentloom import StrictInput, Tool

FOLDER = Path({folder!r})


class NoteInput(StrictInput):
    text: str


class Canary(Tool[NoteInput]):
    name = "canary"
    description = "Keep a note."

    async def execute(self, args: NoteInput, ctx) -> dict[str, bool]:
        (FOLDER / f"{{ctx.operation_id}}.txt").write_text(args.text, encoding="utf-8")
        return {{"kept": True}}


canary = Canary()
'''

POLICY = f'''
def allow_all(event):
    return {{"decision": "allow"}}


def redact(event):
    text = event.payload.get("text", "")
    if "{SECRET}" not in text:
        return {{"decision": "allow"}}
    return {{"decision": "allow", "payload_patch": [
        {{"op": "replace", "path": "/payload/text", "value": text.replace("{SECRET}", "[redacted]")}}]}}
'''

POLICY += '''

def ask(event):
    return {"decision": "ask", "reason": "Keep this note?"}


def scrub(event):
    return {"decision": "allow", "payload_patch": [
        {"op": "replace", "path": "/result/content", "value": [{"type": "text", "text": "scrubbed"}]}]}
'''

NO_RM = """if grep -q '"rm"'; then echo "rm is not allowed" >&2; exit 2; fi"""


def _config(folder: Path, name: str, base_url: str, mods: dict[str, str], *, new: bool) -> Path:
    hooks = [f'{{hook_id: audit, timing: before, match: {{capability: exec}}, '
             f'handler: {{ref: "{mods["policy"]}:allow_all"}}}}']
    if new:
        hooks += [f"{{hook_id: no-rm, timing: before, match: {{capability: exec}}, "
                  f"handler: {{kind: command, command: {json.dumps(NO_RM)}}}}}",
                  f'{{hook_id: redact, timing: before, match: {{capability: canary}}, '
                  f'handler: {{ref: "{mods["policy"]}:redact"}}}}']
    path = folder / name
    path.write_text(
        "version: 1\n"
        f"connections:\n  local: {{preset: openai, base_url: \"{base_url}\", "
        f"api_key_env: {SERVER_KEY_ENV}}}\n"
        "agents:\n  main:\n    model: {connection: local, name: scripted-model}\n"
        f"    tools: [exec, '{mods['canary']}:canary']\n"
        "    hooks:\n" + "".join(f"      - {h}\n" for h in hooks), encoding="utf-8")
    return path


def _argv(i: int) -> list[str]:
    return ["rm", "-f", f"old-{i}.txt"] if i % 3 == 0 else ["echo", f"run {i}"]


def _text(i: int) -> str:
    return f"note {i} {SECRET}" if i % 2 == 0 else f"note {i}"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path_factory.mktemp(request.param))
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, store_url: str
             ) -> Iterator[dict[str, Any]]:
    """Twenty runs recorded under the permissive policy (once per store); the old and new
    configs. ``exec`` and the command hook run in the sandbox: bubblewrap, else Landlock."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv(SERVER_KEY_ENV, "sk-test")
        tmp_path = tmp_path_factory.mktemp("replay")
        monkeypatch.chdir(tmp_path)
        yield from _record(tmp_path, store_url)


def _record(tmp_path: Path, store_url: str) -> Iterator[dict[str, Any]]:
    folder, canary = tmp_path / "project", tmp_path / "canary"
    folder.mkdir()
    canary.mkdir()
    mods = {"canary": f"canary_{uuid.uuid4().hex[:8]}", "policy": f"policy_{uuid.uuid4().hex[:8]}"}
    (folder / f"{mods['canary']}.py").write_text(CANARY.format(folder=str(canary)), "utf-8")
    (folder / f"{mods['policy']}.py").write_text(POLICY, "utf-8")
    with ScriptedOpenAIServer() as server:
        for i in range(RUNS):
            server.script(chat_turn("", tool_calls=[
                (f"e{i}", "exec", json.dumps({"argv": _argv(i)})),
                (f"c{i}", "canary", json.dumps({"text": _text(i)}))]), chat_turn(f"done {i}"))
        old = _config(folder, "agentloom.yaml", server.base_url, mods, new=False)
        new = _config(folder, "new.yaml", server.base_url, mods, new=True)

        async def record() -> list[str]:
            runtime = runtime_from_config(load_config(old), store=store_url)
            try:
                return [(await runtime.run(f"task {i}")).run_id for i in range(RUNS)]
            finally:
                await runtime.aclose()

        run_ids = asyncio.run(record())
    yield {"old": old, "new": new, "canary": canary, "run_ids": run_ids}


def _snapshot(url: str) -> dict[str, int]:
    store = open_store(url)
    try:
        return {name: len(store.query(name, None)) for name in TABLES}
    finally:
        store.close()


def _files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text("utf-8") for p in sorted(folder.iterdir())}


def _expected(cli: Cli, run_ids: list[str]) -> dict[str, str]:
    """operation id -> the change the new policy makes, from the recorded calls."""
    expected: dict[str, str] = {}
    for run_id in run_ids:
        shown = cli.json("runs", "show", run_id, "--store", cli.store)
        assert shown["status"] == "succeeded"
        for op in shown["operations"]:
            args = op["proposed_arguments"]
            if op["capability"] == "exec" and "rm" in args["argv"]:
                assert op["status"] == "succeeded"  # the permissive policy let it run
                expected[op["operation_id"]] = "newly_denied"
            if op["capability"] == "canary" and SECRET in args["text"]:
                expected[op["operation_id"]] = "patched_differently"
    return expected


def test_i38_1_replay_reports_exactly_the_changed_calls_and_executes_and_writes_nothing(
    recorded: dict[str, Any], store_url: str,
) -> None:
    cli = Cli(store_url)
    run_ids = recorded["run_ids"]
    expected = _expected(cli, run_ids)
    assert len(expected) == 7 + 10  # rm in runs 0, 3, …, 18; the secret in the even runs
    files, rows = _files(recorded["canary"]), _snapshot(store_url)
    assert len(files) == RUNS

    report = cli.json("hooks", "replay", str(recorded["new"]), "--store", store_url,
                      exit_code=1)

    assert report["runs"] == run_ids  # the default: the newest 20, oldest first
    changed = {c["operation_id"]: c["change"] for c in report["calls"]
               if c["change"] != "unchanged"}
    assert changed == expected
    by_id = {c["operation_id"]: c for c in report["calls"]}
    for op_id, change in expected.items():
        call = by_id[op_id]
        if change == "newly_denied":
            new = call["before"]["new"]
            assert call["before"]["recorded"]["decision"] == "allow"
            assert new["decision"] == "deny"
            (deny,) = [h for h in new["hooks"] if h["hook_id"] == "no-rm"]
            assert deny["kind"] == "command" and "rm is not allowed" in deny["reason"]
            assert call["after"]["new"] is None  # live, the call would have ended there
        else:
            (diff,) = call["diff"]
            assert diff["path"] == "/payload/text" and SECRET in diff["recorded"]
            assert diff["new"] == diff["recorded"].replace(SECRET, "[redacted]")
            (patched,) = [h for h in call["before"]["new"]["hooks"] if h["hook_id"] == "redact"]
            assert patched["changes"]["ops"] == [
                {"op": "replace", "path": "/payload/text", "value": diff["new"]}]
    totals = report["totals"]
    assert totals["newly_denied"] == 7 and totals["patched_differently"] == 10
    assert totals["newly_allowed"] == totals["newly_asked"] == totals["hooks_failed"] == 0
    # each run: two model calls, exec and canary; every one seen
    assert totals["calls"] == totals["unchanged"] + 17 == len(report["calls"]) == 4 * RUNS
    assert {c["event_type"] for c in report["calls"]} == {"model", "tool"}
    assert report["changed"] is True

    assert _files(recorded["canary"]) == files  # nothing executed
    assert _snapshot(store_url) == rows  # nothing written

    text = cli("hooks", "replay", str(recorded["new"]), "--store", store_url)
    assert text.exit_code == 1, text.stderr
    assert text.stdout.count("newly_denied: run") == 7
    assert text.stdout.count("patched_differently: run") == 10
    assert "newly denied: 7" in text.stdout
    assert text.stdout.count("canary (before-hooks) allow -> allow") == 10
    assert f"/payload/text: 'note 0 {SECRET}' -> 'note 0 [redacted]'" in text.stdout


def test_i38_1_the_unchanged_policy_exits_0(recorded: dict[str, Any], store_url: str) -> None:
    cli = Cli(store_url)
    rows = _snapshot(store_url)

    report = cli.json("hooks", "replay", str(recorded["old"]), "--store", store_url)

    assert report["changed"] is False
    assert report["totals"]["calls"] == report["totals"]["unchanged"] > 2 * RUNS - 1
    assert _snapshot(store_url) == rows
    text = cli("hooks", "replay", str(recorded["old"]), "--store", store_url)
    assert text.exit_code == 0, text.stderr


def test_i38_1_selection_by_run_last_since_and_agent(
    recorded: dict[str, Any], store_url: str,
) -> None:
    cli, new, ids = Cli(store_url), str(recorded["new"]), recorded["run_ids"]

    one = cli.json("hooks", "replay", new, "--store", store_url, "--run", ids[1], "--run", ids[3],
                   exit_code=1)
    assert one["runs"] == [ids[1], ids[3]]
    assert {c["run_id"] for c in one["calls"]} == {ids[1], ids[3]}
    quiet = cli.json("hooks", "replay", new, "--store", store_url, "--run", ids[1])
    assert quiet["changed"] is False  # run 1: echo, no secret
    last = cli.json("hooks", "replay", new, "--store", store_url, "--last", "3", exit_code=1)
    assert last["runs"] == ids[-3:]
    assert cli.json("hooks", "replay", new, "--store", store_url, "--agent", "nobody")[
        "runs"] == []
    future = cli.json("hooks", "replay", new, "--store", store_url, "--since", "2999-01-01")
    assert future["runs"] == [] and future["totals"]["calls"] == 0
    past = cli.json("hooks", "replay", new, "--store", store_url, "--since",
                    "2000-01-01T00:00:00+00:00", "--agent", "main", exit_code=1)
    assert past["runs"] == ids


def test_i38_1_bad_input_exits_2_with_a_clear_message(
    recorded: dict[str, Any], store_url: str,
) -> None:
    cli, new = Cli(store_url), str(recorded["new"])

    missing = cli("hooks", "replay", new, "--store", store_url, "--run", "no-such-run")
    assert missing.exit_code == 2 and "no run 'no-such-run'" in missing.stderr
    since = cli("hooks", "replay", new, "--store", store_url, "--since", "last tuesday")
    assert since.exit_code == 2 and "--since 'last tuesday' is not an ISO time" in since.stderr
    broken = recorded["new"].parent / "broken.yaml"
    broken.write_text(recorded["new"].read_text("utf-8").replace("timing: before", "timing: "
                                                                 "sometime", 1), "utf-8")
    bad = cli("hooks", "replay", str(broken), "--store", store_url)
    assert bad.exit_code == 2 and "timing" in bad.stderr
    absent = cli("hooks", "replay", str(recorded["new"].parent / "absent.yaml"), "--store",
                 store_url)
    assert absent.exit_code == 2
    skill = recorded["new"].parent / "skill.yaml"
    skill.write_text(recorded["new"].read_text("utf-8").replace(
        "    hooks:\n", "    skills: [pdf]\n    hooks:\n      - {skill: pdf}\n", 1), "utf-8")
    skilled = cli("hooks", "replay", str(skill), "--store", store_url)
    assert skilled.exit_code == 2, skilled.stderr
    assert "agents.main.hooks[0]: hooks replay does not run a skill's hooks" in skilled.stderr


def test_i38_1_remote_hooks_are_skipped_with_a_note_unless_include_remote(
    recorded: dict[str, Any], store_url: str,
) -> None:
    cli, old = Cli(store_url), recorded["old"]
    remote = old.parent / "remote.yaml"
    remote.write_text(old.read_text("utf-8") + (
        "      - {hook_id: remote, timing: before, match: {capability: canary}, timeout_s: 2, "
        "on_failure: deny, handler: {kind: http, url: \"http://127.0.0.1:9/hook\", "
        "allow_private: true}}\n"), "utf-8")

    skipped = cli.json("hooks", "replay", str(remote), "--store", store_url)
    assert skipped["changed"] is False and skipped["totals"]["hooks_skipped"] == RUNS
    canary = [c for c in skipped["calls"] if c["capability"] == "canary"]
    assert len(canary) == RUNS and all(
        "http hook 'remote' skipped (pass --include-remote to run it)" in c["notes"][0]
        for c in canary)

    ran = cli.json("hooks", "replay", str(remote), "--store", store_url, "--include-remote",
                   exit_code=1)  # nothing listens on port 9: the hook fails, on_failure: deny
    assert ran["totals"]["hooks_skipped"] == 0 and ran["totals"]["hooks_failed"] == RUNS
    assert {c["operation_id"] for c in ran["calls"] if c["change"] == "newly_denied"} == {
        c["operation_id"] for c in canary}


def test_i38_1_an_ask_is_its_own_decision_and_after_hooks_patch_the_recorded_raw_result(
    recorded: dict[str, Any], store_url: str,
) -> None:
    cli, old = Cli(store_url), recorded["old"]
    policy = old.read_text("utf-8").split('ref: "')[1].split(":")[0]
    config = old.parent / "after.yaml"
    config.write_text(old.read_text("utf-8") + (
        f'      - {{hook_id: ask-canary, timing: before, match: {{capability: canary}}, '
        f'handler: {{ref: "{policy}:ask"}}}}\n'
        f'      - {{hook_id: scrub, timing: after, match: {{capability: exec}}, '
        f'handler: {{ref: "{policy}:scrub"}}}}\n'), "utf-8")
    files = _files(recorded["canary"])

    report = cli.json("hooks", "replay", str(config), "--store", store_url, exit_code=1)

    calls = [c for c in report["calls"] if c["event_type"] == "tool"]
    for call in calls:
        if call["capability"] == "canary":
            assert call["change"] == "newly_asked" and call["changed_at"] == "before"
            (asked,) = call["before"]["new"]["hooks"]
            assert asked["decision"] == "ask" and asked["reason"] == "Keep this note?"
        else:
            assert call["change"] == "patched_differently" and call["changed_at"] == "after"
            assert call["after"]["recorded"]["hooks"] == []
            assert call["after"]["new"]["value"]["content"] == [
                {"type": "text", "text": "scrubbed"}]
            assert call["after"]["new"]["value"]["status"] == "succeeded"
            assert call["diff"] and all(d["path"].startswith("/result/content")
                                        for d in call["diff"])
    assert report["totals"]["newly_asked"] == RUNS
    assert report["totals"]["patched_differently"] == RUNS
    assert _files(recorded["canary"]) == files
