"""Issue 11, "read-only commands open stores read-only": ``runs list|show|events`` read a store
and never create, migrate or write one.

- a SQLite store in a folder the reader cannot write still lists, shows and replays its runs,
  and no file beside it is created or changed;
- a SQLite file that is missing or holds no store, and a PostgreSQL schema that does not exist,
  are ``STORE_NOT_FOUND`` (exit 2) and nothing is created;
- a store at another schema version is ``STORE_VERSION_MISMATCH``, never migrated;
- ``?schema=`` never names a PostgreSQL system schema (``information_schema``, ``pg_*``);
- a PostgreSQL role that may only ``SELECT`` reads a real store.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from tests.conftest import PG_BASE, require_pg

from agentloom.store.schema import MIGRATIONS, TABLES

from .support import SUBPROCESS_TIMEOUT_S, Cli, agentloom, write_project

ERROR_LINE = re.compile(r"^error: [A-Z][A-Z0-9_]*: \S.*", re.MULTILINE)
NOBODY = 65534
PASSWORD = "pw-i11-ro-Hq2"
READ_COMMANDS = ("list", "show", "events")


def _read(cli: Cli, command: str, url: str, run_id: str, *, exit_code: int = 0) -> Any:
    """``runs COMMAND [RUN_ID] --store URL --json``: its JSON value, after checking the exit
    code and, for a failure, the ``error: CODE: message`` line."""
    args = ["runs", command, *([] if command == "list" else [run_id]), "--store", url]
    result = cli(*args, "--json")
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    if exit_code:
        assert ERROR_LINE.search(result.stderr), result.stderr
    return json.loads(result.stdout)


def _error(cli: Cli, command: str, url: str, *, exit_code: int) -> dict[str, Any]:
    error: dict[str, Any] = _read(cli, command, url, "r-0", exit_code=exit_code)["error"]
    assert error["exit_code"] == exit_code
    return error


def _make_run(tmp_path: Path, url: str) -> str:
    """One finished run in the store at ``url``, made by a real ``agentloom run`` process (so
    SQLite's ``-wal`` / ``-shm`` are gone when it returns)."""
    config = write_project(tmp_path / "proj", "  - text: done\n", tools=[])
    made = agentloom("run", str(config), "a task", "--store", url, "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["run_id"])


def _assert_reads_the_run(read: Any, run_id: str) -> None:
    """``read(command)`` gives the JSON of ``runs COMMAND``: each shows the one run."""
    assert [r["run_id"] for r in read("list")] == [run_id]
    shown = read("show")
    assert shown["run_id"] == run_id and shown["status"] == "succeeded"
    assert [o["kind"] for o in shown["operations"]] == ["model"]
    events = [e["type"] for e in read("events")]
    assert events[0] == "run.started" and events[-1] == "run.finished"


# -- SQLite ------------------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int, str]]:
    """Every entry of ``folder`` (and the folder itself): mode, size, mtime and a digest."""
    entries = {".": folder.stat()}
    entries.update({p.name: p.stat() for p in folder.iterdir()})
    return {name: (st.st_mode, st.st_size, st.st_mtime_ns,
                   hashlib.sha256((folder / name).read_bytes()).hexdigest() if name != "." else "")
            for name, st in entries.items()}


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Path]:
    """A store folder every user can reach: ``/tmp/agentloom-i11-*/shared`` (pytest's own
    folders are ``0700``, and SQLite checks a ``-wal`` file's existence with ``access()``,
    which ignores the capabilities of a process that is not root)."""
    top = Path(tempfile.mkdtemp(prefix="agentloom-i11-"))
    top.chmod(0o755)
    yield top / "shared"
    for folder in (top, *top.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o755)
    shutil.rmtree(top)


def _without_write_access(folder: Path, db: Path) -> list[str]:
    """A command prefix that runs the CLI unable to write ``folder`` or ``db``.

    As root (which ignores permission bits): the folder stays root's ``0755``, the file
    ``0644``, and the CLI runs as uid/gid 65534 keeping only ``CAP_DAC_READ_SEARCH``, so it
    can still reach this interpreter (under root's ``0700`` home) and read, but writes only
    what the mode bits give "others": nothing here. As another user: the owner's write bits go.
    """
    if os.geteuid() != 0:
        folder.chmod(0o555)
        db.chmod(0o444)
        return []
    folder.chmod(0o755)
    db.chmod(0o644)
    prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
              "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    try:
        subprocess.run([*prefix, "true"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("root that cannot switch to uid 65534 with CAP_DAC_READ_SEARCH (no setpriv "
                    "or no ambient capabilities): a folder it cannot write cannot be made")
    return prefix


def _python_as(prefix: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` run under ``prefix``."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}
    return subprocess.run([*prefix, sys.executable, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)


CRASH_AFTER_A_COMMIT = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("UPDATE runs SET data = json_set(data, '$.task', 'only in the log')")
os._exit(0)
"""


def _checkpointed(db: Path) -> None:
    """Fold any write-ahead log into the file: the last connection to close removes the
    ``-wal`` / ``-shm`` files, as when every writer has finished."""
    conn = sqlite3.connect(db)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    conn.close()
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]


def _crash_after_a_commit(db: Path) -> None:
    """A writer that dies after a commit: the commit is only in ``-wal``, beside a ``-shm``."""
    crashed = subprocess.run([sys.executable, "-c", CRASH_AFTER_A_COMMIT, str(db)],
                             capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert crashed.returncode == 0, crashed.stderr
    assert (db.parent / f"{db.name}-wal").stat().st_size > 0
    for side in ("-wal", "-shm"):
        (db.parent / f"{db.name}{side}").chmod(0o644)


@pytest.mark.parametrize("writer_left", ["nothing", "its_log"])
def test_i11_runs_list_show_events_on_a_read_only_store_folder_read_without_writing(
    writer_left: str, tmp_path: Path, shared: Path
) -> None:
    folder = shared
    db = folder / "agentloom.db"
    url = f"sqlite:///{db}"
    run_id = _make_run(tmp_path, url)
    _checkpointed(db)
    if writer_left == "its_log":
        _crash_after_a_commit(db)
    prefix = _without_write_access(folder, db)
    try:
        denied = _python_as(prefix, "-c", f"open({str(folder / 'probe')!r}, 'w')", cwd=tmp_path)
        assert denied.returncode != 0 and "Permission denied" in denied.stderr  # the premise
        before = _snapshot(folder)

        def read(command: str) -> Any:
            args = ["runs", command, *([] if command == "list" else [run_id])]
            done = _python_as(prefix, "-m", "agentloom", *args, "--store", url, "--json",
                              cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)

        _assert_reads_the_run(read, run_id)
        task = "only in the log" if writer_left == "its_log" else "a task"
        assert read("list")[0]["task"] == task  # the log's commits are read
        assert _snapshot(folder) == before
    finally:
        folder.chmod(0o755)


def test_i11_runs_list_on_a_read_only_folder_whose_wal_holds_commits_and_no_shm_is_a_clear_error(
    tmp_path: Path, shared: Path
) -> None:
    folder = shared
    db = folder / "agentloom.db"
    url = f"sqlite:///{db}"
    _make_run(tmp_path, url)
    _checkpointed(db)
    _crash_after_a_commit(db)
    (folder / "agentloom.db-shm").unlink()
    prefix = _without_write_access(folder, db)
    try:
        before = _snapshot(folder)
        done = _python_as(prefix, "-m", "agentloom", "runs", "list", "--store", url, "--json",
                          cwd=tmp_path)

        assert done.returncode == 1 and ERROR_LINE.search(done.stderr), done.stderr
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "STORE_FAILED", error
        assert "write-ahead log agentloom.db-wal holds commits" in error["message"]
        assert "open the store once with write access" in error["message"]
        assert _snapshot(folder) == before
    finally:
        folder.chmod(0o755)


def _another_database(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('not an AgentLoom store')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["missing", "empty_file", "another_database"])
def test_i11_runs_reads_of_a_sqlite_file_missing_or_holding_no_store_are_store_not_found_and_write_nothing(
    kind: str, tmp_path: Path
) -> None:
    folder = tmp_path / "nowhere" if kind == "missing" else tmp_path / "data"
    db = folder / "agentloom.db"
    if kind != "missing":
        folder.mkdir()
        db.touch() if kind == "empty_file" else _another_database(db)
    before = _snapshot(folder) if folder.exists() else None
    cli = Cli(f"sqlite:///{db}")

    for command in READ_COMMANDS:
        error = _error(cli, command, cli.store, exit_code=2)

        assert error["code"] == "STORE_NOT_FOUND", error
        assert str(db) in error["message"]
    if kind == "missing":
        assert not folder.exists()
    else:
        assert _snapshot(folder) == before


@pytest.mark.parametrize("version", ["older", "newer"])
def test_i11_runs_reads_of_a_store_at_another_schema_version_are_a_clear_error_and_migrate_nothing(
    version: str, tmp_path: Path
) -> None:
    db = tmp_path / "store" / "agentloom.db"
    _make_run(tmp_path, f"sqlite:///{db}")
    latest = len(MIGRATIONS)
    with sqlite3.connect(db) as conn:
        if version == "older":
            conn.execute("DELETE FROM schema_migrations WHERE version = ?", (latest,))
        else:
            conn.execute("INSERT INTO schema_migrations VALUES (?, 'from the future', 0)",
                         (latest + 1,))
        recorded = conn.execute("SELECT * FROM schema_migrations ORDER BY version").fetchall()
    conn.close()
    stored = latest - 1 if version == "older" else latest + 1
    cli = Cli(f"sqlite:///{db}")

    for command in READ_COMMANDS:
        error = _error(cli, command, cli.store, exit_code=1)

        assert error["code"] == "STORE_VERSION_MISMATCH", error
        assert f"schema version {stored} is {version} than this AgentLoom ({latest})" \
            in error["message"]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT * FROM schema_migrations ORDER BY version").fetchall() == recorded
    conn.close()


# -- PostgreSQL --------------------------------------------------------------------------------


def _admin() -> Any:
    import psycopg

    return psycopg.connect(PG_BASE, autocommit=True)


def _with(base: str, *, user: str | None = None, password: str | None = None,
          schema: str | None = None) -> str:
    """``base`` with another user and password, and ``?schema=``."""
    parts = urlsplit(base)
    host = parts.netloc.rsplit("@", 1)[-1]
    name = user or (parts.username or "postgres")
    netloc = f"{name}:{password}@{host}" if password else f"{name}@{host}"
    query = f"schema={schema}" if schema is not None else parts.query
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _schema_exists(name: str) -> bool:
    with _admin() as conn:
        row = conn.execute("SELECT count(*) FROM information_schema.schemata "
                           "WHERE schema_name = %s", (name,)).fetchone()
    return bool(row and row[0])


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A schema name nobody uses; dropped afterwards if anything created it."""
    require_pg()
    name = f"t_ro_{uuid.uuid4().hex[:12]}"
    yield name
    with _admin() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.mark.parametrize("command", READ_COMMANDS)
def test_i11_runs_reads_of_a_missing_postgresql_schema_are_store_not_found_and_create_no_schema(
    command: str, pg_schema: str
) -> None:
    url = _with(PG_BASE, password=PASSWORD, schema=pg_schema)
    cli = Cli(url)

    error = _error(cli, command, url, exit_code=2)

    assert error["code"] == "STORE_NOT_FOUND", error
    assert f'schema "{pg_schema}" does not exist' in error["message"]
    assert PASSWORD not in json.dumps(error)
    assert not _schema_exists(pg_schema)


@pytest.fixture
def system_schema_untouched() -> Iterator[None]:
    """Drops any AgentLoom table a regression would leave in a system schema."""
    require_pg()
    yield
    with _admin() as conn:
        for schema in ("information_schema", "pg_catalog"):
            for name in ("schema_migrations", *TABLES):
                conn.execute(f'DROP TABLE IF EXISTS "{schema}"."{name}" CASCADE')


@pytest.mark.usefixtures("system_schema_untouched")
@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "pg_toast", "pg_agentloom"])
def test_i11_runs_list_refuses_a_postgresql_system_schema_with_a_config_error(schema: str) -> None:
    url = _with(PG_BASE, schema=schema)

    error = _error(Cli(url), "list", url, exit_code=2)

    assert error["code"] == "CONFIG_INVALID", error
    assert f"store URL schema {schema!r} is a PostgreSQL system schema" in error["message"]
    assert not _schema_exists("pg_agentloom")


@pytest.fixture
def select_only_role(pg_schema: str) -> Iterator[str]:
    """A login role that may only read the tables of ``pg_schema`` (granted by the test)."""
    name = f"ro_{uuid.uuid4().hex[:12]}"
    with _admin() as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN')
    yield name
    with _admin() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{pg_schema}" CASCADE')
        conn.execute(f'DROP OWNED BY "{name}"')
        conn.execute(f'DROP ROLE "{name}"')


def _rows(schema: str) -> list[Any]:
    with _admin() as conn:
        return [conn.execute(f'SELECT * FROM "{schema}".schema_migrations ORDER BY version')
                .fetchall(),
                conn.execute(f'SELECT run_id, status, lease_epoch, lease_owner, lease_expires_at, '
                             f'updated_at FROM "{schema}".runs').fetchall()]


def test_i11_runs_list_show_events_read_a_postgresql_store_as_a_select_only_role(
    tmp_path: Path, pg_schema: str, select_only_role: str
) -> None:
    run_id = _make_run(tmp_path, _with(PG_BASE, schema=pg_schema))
    with _admin() as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{pg_schema}" TO "{select_only_role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{pg_schema}" TO "{select_only_role}"')
    before = _rows(pg_schema)
    url = _with(PG_BASE, user=select_only_role, schema=pg_schema)
    cli = Cli(url)

    _assert_reads_the_run(lambda command: _read(cli, command, url, run_id), run_id)
    assert _rows(pg_schema) == before
