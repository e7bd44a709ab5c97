"""Issue 11, points 8 and 9 and the CLI's errors: what the CLI prints when the data, the store
URL or the store itself is hostile or broken.

- a password in a store URL is never printed (hints, errors, warnings, log lines);
- terminal control characters in run data (the answer, the task, tool output, run ids and agent
  names read from the store) are escaped in every human view; ``--json`` keeps the exact text;
- every failure reaches the user as ``error: CODE: message`` (and a JSON error object with
  ``--json``), never as a traceback unless ``--debug`` asks for one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import PG_BASE, require_pg

from .support import SUBPROCESS_TIMEOUT_S, Cli, agentloom, write_project

PASSWORD = "pw-i11-Zq8xT4"
QUERY_PASSWORD = "qpw-i11-Lm3vB7"

# Clear the screen, set the window title, CSI as one C1 character, rich markup (a stray closing
# tag makes rich raise), then a carriage return that would let the next text overwrite the line
# with a fake verdict.
MARKUP = "[/] [bold]b[/bold]"
HOSTILE = (f"\x1b[2J\x1b]0;pwned\x07 \x9b31m red \x7f {MARKUP}"
           "\rrun 00000000 succeeded after 1 step(s)")
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
ERROR_LINE = re.compile(r"^error: [A-Z][A-Z0-9_]*: \S.*", re.MULTILINE)


def _url_with_password(base: str, schema: str) -> str:
    scheme, rest = base.split("://", 1)
    userinfo, host = rest.split("@", 1) if "@" in rest else ("postgres", rest)
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:{PASSWORD}@{host}?schema={schema}&password={QUERY_PASSWORD}"


def _assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and QUERY_PASSWORD not in text, text


# -- point 8: store passwords ------------------------------------------------------------------


@pytest.fixture
def pg_url_with_password() -> Iterator[str]:
    require_pg()
    from agentloom.store import open_store

    url = _url_with_password(PG_BASE, f"t_{uuid.uuid4().hex[:12]}")
    yield url
    store = open_store(url)
    store.drop_schema()  # type: ignore[attr-defined]
    store.close()


LEAKY_HOOK = '''
import logging


def tell(event):
    logging.getLogger("cli_leaky_hooks").warning("connecting to %s", "{url}")
    return {{"decision": "allow"}}
'''


def test_i11_8_a_store_password_is_never_printed(tmp_path: Path, pg_url_with_password: str) -> None:
    url = pg_url_with_password
    config = write_project(
        tmp_path / "p", "  - tool_calls:\n      - name: fs_write\n"
        "        arguments: {path: a.txt, content: a}\n  - text: done\n", tools=["fs.write"],
        extra="    hooks:\n      - {hook_id: tell, timing: before, match: {capability: fs.write}, "
              "handler: {ref: \"cli_leaky_hooks:tell\"}}\n")
    (tmp_path / "p" / "cli_leaky_hooks.py").write_text(LEAKY_HOOK.format(url=url), encoding="utf-8")

    ran = agentloom("run", str(config), "write a", "--store", url, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    _assert_no_secret(ran.stdout, ran.stderr)
    assert f"postgres:***@{url.split('@', 1)[1].split('?')[0]}" in ran.stdout  # the hint
    assert "agentloom: WARNING: connecting to postgresql://postgres:***@" in ran.stderr  # a log line
    run_id = json.loads(agentloom("runs", "list", "--store", url, "--json", cwd=tmp_path).stdout
                        )[0]["run_id"]

    outputs = [agentloom(*args, cwd=tmp_path) for args in (
        ("run", str(config), "again", "--store", url, "--json"),
        ("runs", "list", "--store", url), ("runs", "show", run_id, "--store", url),
        ("runs", "events", run_id, "--store", url), ("runs", "show", "no-such-run", "--store", url),
        ("worker", str(config), "--once", "--store", url))]
    for done in outputs:
        _assert_no_secret(done.stdout, done.stderr)
    assert "postgres:***@" in outputs[-1].stderr  # "worker on <url>"

    unreachable = f"postgresql://nobody:{PASSWORD}@127.0.0.1:1/x?password={QUERY_PASSWORD}"
    for args in (("runs", "list", "--store", unreachable),
                 ("run", str(config), "x", "--store", unreachable, "--json")):
        failed = agentloom(*args, cwd=tmp_path)
        assert failed.returncode >= 1
        _assert_no_secret(failed.stdout, failed.stderr)


# -- point 9: terminal control characters ------------------------------------------------------


def _hostile_project(folder: Path) -> Path:
    hostile = json.dumps(HOSTILE)  # a JSON string is a YAML double-quoted scalar
    return write_project(folder, (
        "  - tool_calls:\n      - name: fs_write\n"
        f"        arguments: {{path: evil.txt, content: {hostile}}}\n"
        "  - expect: {role: tool}\n    tool_calls:\n      - name: fs_read\n"
        "        arguments: {path: evil.txt}\n"
        f"  - expect: {{role: tool}}\n    text: {hostile}\n"), tools=["fs.read", "fs.write"])


def _assert_escaped(text: str) -> None:
    assert not RAW_CONTROLS.search(text), repr(text)
    assert "\\x1b[2J" in text, text


def _tamper(store: str, run_id: str) -> str:
    """Copy the run under a hostile run id with a hostile agent name and status, as a
    damaged or hostile database would hold them."""
    evil_id = "evil\x1b[2J\x9b" + run_id[4:]
    with sqlite3.connect(store.removeprefix("sqlite:///")) as db:
        (data,) = db.execute("SELECT data FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        row = json.loads(data)
        row["agent"] = HOSTILE
        db.execute("INSERT INTO runs (run_id, status, lease_epoch, lease_owner, "
                   "lease_expires_at, created_at, updated_at, data, agent) SELECT ?, ?, "
                   "lease_epoch, lease_owner, lease_expires_at, created_at + 1, updated_at, ?, ? "
                   "FROM runs WHERE run_id = ?",
                   (evil_id, "succeeded\x1b]0;x\x07", json.dumps(row), HOSTILE, run_id))
    return evil_id


def test_i11_9_terminal_control_characters_are_escaped_in_human_output(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = str(_hostile_project(tmp_path / "p"))
    task = "task " + HOSTILE

    ran = cli("run", config, task, "--store", cli.store)  # a pipe: one line per call
    assert ran.exit_code == 0, ran.stderr
    _assert_escaped(ran.stdout)
    assert not RAW_CONTROLS.search(ran.stderr)
    assert "\\x9b31m" not in ran.stdout and "\\u009b31m" in ran.stdout
    assert "\\x0drun 00000000 succeeded" in ran.stdout  # the spoofed verdict is visibly data
    assert MARKUP in ran.stdout  # markup in data is text

    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # the live table, redrawn in place
    live = cli("run", config, task, "--store", cli.store)
    monkeypatch.delenv("TTY_COMPATIBLE")
    assert live.exit_code == 0, live.stderr
    for raw in ("\x1b[2J", "\x1b]0;pwned", "\x07", "\x9b", "\x7f", "\rrun 0000"):
        assert raw not in live.stdout, (raw, live.stdout)
    assert "\\x1b[2J" in live.stdout

    out = cli.json("run", config, task, "--store", cli.store)
    assert out["output"] == HOSTILE  # --json keeps the exact text
    run_id = out["run_id"]
    evil_id = _tamper(cli.store, run_id)

    for args in (("runs", "show", run_id), ("runs", "show", evil_id), ("runs", "list"),
                 ("runs", "events", run_id)):
        human = cli(*args, "--store", cli.store)
        assert human.exit_code == 0, (args, human.stderr)
        assert not RAW_CONTROLS.search(human.stdout + human.stderr), (args, human.stdout)
        assert "\\x1b" in human.stdout, (args, human.stdout)
    unknown = cli("runs", "show", "nope\x1b[2J", "--store", cli.store)
    assert unknown.exit_code == 2 and "nope\\x1b[2J" in unknown.stderr
    assert not RAW_CONTROLS.search(unknown.stderr)

    shown = cli.json("runs", "show", run_id, "--store", cli.store)
    assert shown["task"] == task and shown["output"] == HOSTILE
    read = next(op for op in shown["operations"] if op["capability"] == "fs.read")
    assert json.loads(read["raw_result"])["content"] == HOSTILE
    assert cli.json("runs", "show", evil_id, "--store", cli.store)["agent"] == HOSTILE
    listed = {r["run_id"]: r for r in cli.json("runs", "list", "--store", cli.store)}
    assert listed[evil_id]["agent"] == HOSTILE and listed[evil_id]["status"] == "succeeded\x1b]0;x\x07"
    events = cli.json("runs", "events", run_id, "--store", cli.store)
    assert [e["output"] for e in events if e["type"] == "run.finished"] == [HOSTILE]


# -- errors ------------------------------------------------------------------------------------


def _drop_write_access(folder: Path) -> list[str]:
    """A command prefix that runs the CLI without write access to ``folder``: its mode says
    read-only, and a root process also gives up the capabilities that would override it."""
    folder.chmod(0o555)
    if os.geteuid() != 0:
        return []
    prefix = [shutil.which("setpriv") or "setpriv", "--bounding-set",
              "-dac_override,-dac_read_search,-fowner"]
    try:
        subprocess.run([*prefix, "true"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("root that cannot drop its capabilities (no setpriv, no CAP_SETPCAP): "
                    "a read-only folder cannot be simulated")
    return prefix


def _store_failure(kind: str, tmp_path: Path) -> tuple[list[str], str]:
    """The command prefix and the ``--store`` URL of one broken store."""
    if kind == "postgresql_unreachable":
        return [], "postgresql://nobody@127.0.0.1:1/x"
    if kind == "sqlite_corrupt":
        path = tmp_path / "corrupt.db"
        path.write_bytes(os.urandom(8192))
        return [], f"sqlite:///{path}"
    folder = tmp_path / "ro"
    url = f"sqlite:///{folder / 'agentloom.db'}"
    config = write_project(tmp_path / "p", "  - text: done\n", tools=[])
    made = agentloom("run", str(config), "x", "--store", url, "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    return _drop_write_access(folder), url


def _cli(prefix: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    return subprocess.run([*prefix, sys.executable, "-m", "agentloom", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)


@pytest.mark.parametrize("kind", ["postgresql_unreachable", "sqlite_corrupt", "sqlite_read_only_folder"])
def test_i11_errors_reach_the_cli_as_code_and_message_never_a_traceback(
    kind: str, tmp_path: Path
) -> None:
    prefix, url = _store_failure(kind, tmp_path)
    try:
        human = _cli(prefix, "runs", "list", "--store", url, cwd=tmp_path)
        as_json = _cli(prefix, "runs", "list", "--store", url, "--json", cwd=tmp_path)
        debug = _cli(prefix, "--debug", "runs", "list", "--store", url, cwd=tmp_path)
    finally:
        if (tmp_path / "ro").exists():
            (tmp_path / "ro").chmod(0o755)

    for done in (human, as_json, debug):
        assert "Traceback" not in done.stderr or done is debug, done.stderr
    if kind == "sqlite_read_only_folder" and human.returncode == 0:
        # A store that opens read-only may list its runs: then there is no failure to report.
        assert len(json.loads(as_json.stdout)) == 1
        return
    assert human.returncode >= 1 and human.stdout == "", (human.stdout, human.stderr)
    assert ERROR_LINE.search(human.stderr), human.stderr
    assert as_json.returncode == human.returncode and ERROR_LINE.search(as_json.stderr)
    error = json.loads(as_json.stdout)["error"]  # stdout: exactly one JSON object
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", error["code"]) and error["message"]
    assert error["exit_code"] == human.returncode
    assert debug.returncode == human.returncode
    assert "Traceback (most recent call last)" in debug.stderr and ERROR_LINE.search(debug.stderr)


def test_i11_errors_a_bad_option_is_a_usage_error_with_json(tmp_path: Path) -> None:
    done = agentloom("runs", "list", "--bogus", "--json", cwd=tmp_path)

    assert done.returncode == 2
    assert ERROR_LINE.search(done.stderr) and "--bogus" in done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "USAGE_ERROR"
