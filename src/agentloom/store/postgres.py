"""The PostgreSQL store (psycopg 3): for more than one process or machine.

Fencing takes a shared transaction-level advisory lock on the run (``claim_run`` an
exclusive one) before it reads the epoch, so a concurrent claim waits for in-flight
commits and every later commit of the old holder sees the new epoch. (A ``FOR SHARE``
row lock would do the same, but it writes the row — and WAL — on every commit.)
An optional ``schema`` query parameter (``postgresql://host/db?schema=name``)
keeps AgentLoom's tables in their own schema, created when missing; never a system
schema (``information_schema``, ``pg_*``). Read-only (``read_only=True``) nothing is
created or migrated, the session's transactions are read-only, and a schema that does not
exist is ``STORE_NOT_FOUND``.

A batch is first sent as *one query*, ``BEGIN; …; COMMIT`` with the values bound
client-side (psycopg's ``ClientCursor``, which quotes them): one round trip. The
checks run in the server and abort the transaction before its COMMIT. Anything
refused there — a fence that moved, a duplicate key, a ``Put`` of a row that does
not exist — rolls it back and the batch is redone statement by statement by
``SqlStore.commit_many``, which tells exactly which write set was refused and why.

A commit that writes a ``pending`` run also runs ``pg_notify('agentloom_runs', <schema>)``
in its transaction (``store.queue``); ``claim_next`` is ``_claim`` below, and ``listen`` opens
a dedicated connection for ``LISTEN``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agentloom.errors import ConfigError, StoreError
from agentloom.store._readonly import not_found
from agentloom.store._sql import SqlStore, coalesced
from agentloom.store.ports import Claimed, Delete, Fence, Insert, QueueListener, WriteSet
from agentloom.store.queue import RUNS_CHANNEL, ClaimRequest, PostgresListener, queues_a_run
from agentloom.store.schema import table

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_SYSTEM_SCHEMAS = frozenset({"information_schema"})  # and every pg_* name
# A run's lease lock: the two-key advisory lock space, AgentLoom's class 0x414C ("AL").
_RUN_LOCK = "SELECT pg_advisory_xact_lock(16716, hashtext(%s))"
_RUN_LOCK_SHARED = "SELECT pg_advisory_xact_lock_shared(16716, hashtext(%s))"
# ``WriteSet.sync=False``: the commit is complete and visible at once; the WAL reaches the disk
# with the next synchronous commit (of any session: the WAL is flushed in order)
_NO_SYNC = "SET LOCAL synchronous_commit TO OFF"
# Refusals raise in the server (division by zero), aborting the rest of the query.
_FENCE_CHECK = ("SELECT 1 / COALESCE((SELECT (lease_epoch = %s)::int FROM runs "
                "WHERE run_id = %s), 0)")
_CHECKED_UPDATE = "WITH u AS ({sql} RETURNING 1) SELECT 1 / (SELECT (count(*) = 1)::int FROM u)"
_CHECKED_EXISTS = "SELECT 1 / (SELECT count(*)::int FROM ({sql}) AS e)"
# The queue (``_claim``): claimers of one agent / one worker id serialise on these locks, in
# classes of their own (a hash of a name never collides with a run's lock).
_AGENT_LOCK = "SELECT pg_advisory_xact_lock(16717, hashtext(%s))"
_WORKER_LOCK = "SELECT pg_advisory_xact_lock(16718, hashtext(%s))"
_RUN_TRY_LOCK = "SELECT pg_try_advisory_xact_lock(16716, hashtext(%s))"
_COUNT_WORKER = "SELECT count(*) FROM runs WHERE status = 'running' AND lease_owner = %s"
_COUNT_AGENT = "SELECT count(*) FROM runs WHERE status = 'running' AND agent = %s"
_PICK = ("SELECT run_id, agent, priority, created_at FROM runs WHERE status = 'pending' "
         "AND agent = ANY(%s) AND run_id <> ALL(%s) AND (%s::text IS NULL OR release_id = %s) "
         "ORDER BY priority DESC, created_at, run_id LIMIT 1 FOR UPDATE SKIP LOCKED")
_TAKE = ("UPDATE runs SET status = 'running', lease_epoch = lease_epoch + 1, lease_owner = %s, "
         "lease_expires_at = %s, updated_at = %s WHERE run_id = %s RETURNING lease_epoch")
_NOTIFY = f"SELECT pg_notify('{RUNS_CHANNEL}', current_schema())"


def _check_schema_name(name: str) -> None:
    """Refuse a ``?schema=`` that is not a plain identifier or that names a system schema.

    Raises:
        ConfigError: naming the schema, why it is refused and what to use instead.
    """
    if not _SCHEMA_NAME.match(name):
        raise ConfigError(
            f"store URL schema {name!r} is not a plain lower-case identifier; "
            "use letters, digits and underscores"
        )
    if name in _SYSTEM_SCHEMAS or name.startswith("pg_"):
        raise ConfigError(
            f"store URL schema {name!r} is a PostgreSQL system schema (information_schema and "
            "every pg_* name belong to the server); name a schema of AgentLoom's own, e.g. "
            "?schema=agentloom"
        )


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "the PostgreSQL store needs psycopg: pip install 'agentloom[postgres]'"
        ) from exc
    return psycopg


class PostgresStore(SqlStore):
    """The production ``Store`` on PostgreSQL: many processes and machines, runs claimed with
    leases (``FOR UPDATE SKIP LOCKED``), every commit fenced by ``(run_id, lease_epoch)``.
    Needs the ``postgres`` extra (psycopg)."""

    dialect = "postgresql"
    placeholder = "%s"
    now_sql = "SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8"  # the server's clock
    _literal: Any  # the writer's client-side-binding cursor (see _commit_in_one_query)

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        psycopg = _psycopg()
        self.integrity_errors = (psycopg.errors.UniqueViolation,)
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        self.schema = query.pop("schema", None)
        if self.schema is not None:
            _check_schema_name(self.schema)
        self._dsn = urlunsplit(parts._replace(query=urlencode(query)))
        super().__init__(url, read_only=read_only)

    def _connect(self, *, reader: bool = False) -> Any:
        psycopg = _psycopg()
        # Autocommit: a read is its own snapshot without a COMMIT round trip to end it, and
        # a write transaction is opened by an explicit BEGIN (``_begin``), so the fast path
        # can send BEGIN … COMMIT as one query.
        conn = psycopg.connect(self._dsn, autocommit=True)
        try:
            with conn.cursor() as cur:
                if self.read_only:  # the server refuses any write, whatever the code does
                    cur.execute("SET default_transaction_read_only = on")
                if self.schema and self.read_only:
                    cur.execute("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %s",
                                (self.schema,))
                    if cur.fetchone() is None:
                        raise not_found(
                            f'no AgentLoom store at {self._safe_url()}: the schema '
                            f'"{self.schema}" does not exist (nothing has run there yet, or the '
                            "name is misspelt; a read-only command never creates it)")
                elif self.schema:
                    cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                if self.schema:
                    cur.execute(f'SET search_path TO "{self.schema}"')
        except BaseException:
            conn.close()
            raise
        if not reader:
            self._literal = psycopg.ClientCursor(conn)  # binds parameters client-side
        return conn

    def _has_table(self, name: str) -> bool:
        return bool(self._read("SELECT to_regclass(%s) IS NOT NULL", (name,))[0][0])

    def _begin(self, cur: Any, *, sync: bool = True) -> None:
        cur.execute("BEGIN")
        if not sync:  # this transaction's COMMIT does not wait for the WAL flush
            cur.execute(_NO_SYNC)

    def commit_many(self, batch: Sequence[WriteSet]) -> list[BaseException | None]:
        if self.read_only:
            return super().commit_many(batch)  # refused before anything is sent
        with self._write_lock:
            done = self._commit_in_one_query(batch)
        if done:
            return [None] * len(batch)
        return super().commit_many(batch)  # refused: find out which write set, and why

    def _commit_in_one_query(self, batch: Sequence[WriteSet]) -> bool:
        """Commit ``batch`` as one ``BEGIN; …; COMMIT`` query: one round trip.

        The checks run in the server: a fence whose epoch moved (or whose run is gone) and a
        partial ``Put`` that finds no row divide by zero, which aborts the transaction before
        its COMMIT. Returns ``False`` (rolled back) when anything was refused or malformed;
        raises ``StoreError`` when the connection failed, as then the outcome is not known.
        """
        psycopg = _psycopg()
        literal = self._literal.mogrify
        statements = ["BEGIN"] if any(ws.sync for ws in batch) else ["BEGIN", _NO_SYNC]
        try:
            fenced: set[Fence] = set()
            for ws in batch:
                if ws.fence is not None and ws.fence not in fenced:
                    fenced.add(ws.fence)
                    statements.append(literal(_RUN_LOCK_SHARED, (ws.fence.run_id,)))
                    statements.append(literal(_FENCE_CHECK, (ws.fence.lease_epoch,
                                                             ws.fence.run_id)))
                for op in coalesced(ws.ops):
                    if isinstance(op, Delete):
                        statements.append(literal(*self.delete_statement(op)))
                        continue
                    t = table(op.table)
                    columns = list(op.row)
                    values = self._encode(t, op.row)
                    if isinstance(op, Insert):
                        sql = self._insert_sql(t, columns,
                                               "if_absent" if op.if_absent else "insert")
                    elif set(columns) >= set(t.columns):
                        sql = self._insert_sql(t, columns, "put")  # a whole row: upsert
                    else:  # some columns of a row that must exist
                        sql, order, _ = self._update_statement(t, columns)
                        values = [None if i is None else values[i] for i in order]
                        sql = _CHECKED_UPDATE.format(sql=sql) if sql.startswith("UPDATE") \
                            else _CHECKED_EXISTS.format(sql=sql)
                    statements.append(literal(sql, values))
        except Exception:  # e.g. an unknown column: the exact path reports it
            return False
        if any(queues_a_run(ws) for ws in batch):
            statements.append(_NOTIFY)
        statements.append("COMMIT")
        try:
            self._literal.execute(";\n".join(statements))
        except psycopg.OperationalError as exc:  # the connection, not the batch
            self._rollback_quietly()
            raise StoreError(f"commit to {self._safe_url()} failed: {exc}") from exc
        except psycopg.Error:  # refused before COMMIT ran: the exact path says which and why
            self._rollback_quietly()
            return False
        return True

    def _apply(self, cur: Any, ws: WriteSet, fenced: set[Fence] | None) -> None:
        super()._apply(cur, ws, fenced)
        if queues_a_run(ws):  # in the write set's savepoint: a refused one wakes nobody
            cur.execute(_NOTIFY)

    def _claim(self, cur: Any, req: ClaimRequest) -> Claimed | None:
        """Take the first pending run this worker may hold, in READ COMMITTED.

        The candidate is locked with ``FOR UPDATE SKIP LOCKED``: concurrent claimers take
        different runs and never wait for each other's candidates (no global lock). Each cap
        is made atomic by serialising only the claimers it concerns: the worker's id (taken
        first), then the candidate's agent when it has a cap, each an exclusive transaction
        advisory lock; the count runs in a *new statement* after the lock, so it sees every
        claim committed before the lock was granted (a lock is released only after its
        transaction's commit is visible). A candidate whose agent is at its cap, or whose run
        lease lock is held (a fenced commit of its old holder is in flight), is rolled back
        to the savepoint — releasing its row lock and the agent lock — and the next one tried.
        The run's lease lock, taken exclusively as ``claim_run`` does, makes every later
        commit of an older holder see the new epoch.

        No deadlock: a claimer blocks only twice — for the worker lock, holding nothing, then
        for one agent lock, holding the worker lock and one candidate row. Once it holds an
        agent lock it never blocks again: it counts, *tries* the run's lease lock, updates the
        row it already locked, and commits or rolls back to the savepoint. So every wait for
        an agent lock ends, hence every wait for the worker lock does, and so does any other
        writer's wait for a candidate row (other claimers skip it). ``claim_run`` and fenced
        commits wait for a run's lease lock, but this claim only tries it, and a claimer
        holds it only in that last step that never blocks.
        """
        cur.execute(_WORKER_LOCK, (req.worker_id,))
        cur.execute(_COUNT_WORKER, (req.worker_id,))
        if int(cur.fetchone()[0]) >= req.worker_cap:
            return None
        agents, passed = list(req.agents), list[str]()
        while agents:
            cur.execute("SAVEPOINT candidate")
            cur.execute(_PICK, (agents, passed, req.release_id, req.release_id))
            row = cur.fetchone()
            if row is None:
                return None
            run_id, agent, priority, created_at = row
            if _agent_full(cur, req, agent):
                agents.remove(agent)
            elif not _run_lock_free(cur, run_id):
                passed.append(run_id)
            else:
                cur.execute(_TAKE, (req.worker_id, req.expires_at, req.now, run_id))
                return Claimed(run_id=run_id, lease_epoch=int(cur.fetchone()[0]), agent=agent,
                               priority=int(priority), created_at=float(created_at))
            cur.execute("ROLLBACK TO SAVEPOINT candidate")
        return None

    def listen(self) -> QueueListener:
        return PostgresListener(self._connect(reader=True), safe_url=self._safe_url())

    def _migration_lock(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || 'agentloom'))")

    def _lock_run(self, cur: Any, run_id: str, *, exclusive: bool) -> None:
        cur.execute(_RUN_LOCK if exclusive else _RUN_LOCK_SHARED, (run_id,))

    def drop_schema(self) -> None:
        """Remove this store's schema and everything in it (tests only)."""
        if not self.schema:
            raise ConfigError("drop_schema needs a store URL with ?schema=")
        with self._write_lock:
            with self._writer.cursor() as cur:
                cur.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            self._writer.commit()


def _run_lock_free(cur: Any, run_id: str) -> bool:
    """Take the run's lease lock if nobody holds it (a fenced commit of it may be in flight)."""
    cur.execute(_RUN_TRY_LOCK, (run_id,))
    return bool(cur.fetchone()[0])


def _agent_full(cur: Any, req: ClaimRequest, agent: str) -> bool:
    """Whether ``agent`` is at its cap; a capped agent's lock is held from here on."""
    cap = req.cap_of(agent)
    if cap is None:
        return False
    cur.execute(_AGENT_LOCK, (agent,))
    cur.execute(_COUNT_AGENT, (agent,))
    return int(cur.fetchone()[0]) >= cap
