"""Table definitions shared by every backend, and the append-only migration list.

Durable formats carry a schema version: ``MIGRATIONS[i]`` moves a database from
version ``i`` to ``i + 1``; its position is its version. Never edit a shipped
entry — append a new one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Table:
    """One table of the store: its columns, primary key, and which columns hold JSON or bytes.
    The SQL stores and the memory store are built from the same ``TABLES``."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    json_columns: frozenset[str] = frozenset()
    blob_columns: frozenset[str] = frozenset()


TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "runs",
            ("run_id", "status", "lease_epoch", "lease_owner", "lease_expires_at",
             "created_at", "updated_at", "data", "agent", "priority", "release_id", "actor",
             "project"),
            ("run_id",),
            frozenset({"data"}),
        ),
        Table(
            "operations",
            ("operation_id", "run_id", "logical_key", "capability_key", "event_type", "phase",
             "outcome", "created_at", "updated_at", "data"),
            ("operation_id",),
            frozenset({"data"}),
        ),
        Table(
            "attempts",
            ("operation_id", "attempt_no", "status", "started_at", "finished_at", "data"),
            ("operation_id", "attempt_no"),
            frozenset({"data"}),
        ),
        Table(
            "hook_invocations",
            ("operation_id", "timing", "position", "hook_id", "status", "decision",
             "created_at", "data"),
            ("operation_id", "timing", "position"),
            frozenset({"data"}),
        ),
        Table(
            "context_records",
            ("scope_id", "record_id", "revision", "run_id", "position", "kind", "created_at",
             "data"),
            ("scope_id", "record_id", "revision"),
            frozenset({"data"}),
        ),
        Table(
            "blobs",
            ("digest", "size", "created_at", "content", "chunk_size"),
            ("digest",),
            blob_columns=frozenset({"content"}),
        ),
        Table(
            "blob_chunks",
            ("digest", "seq", "content"),
            ("digest", "seq"),
            blob_columns=frozenset({"content"}),
        ),
        Table(
            "results",
            ("result_ref", "operation_id", "run_id", "role", "scope_id", "digest", "size",
             "created_at", "location"),
            ("result_ref",),
        ),
        Table(
            "file_roots",
            ("owner_kind", "owner_id", "space_id", "file_root_id", "created_at"),
            ("owner_kind", "owner_id"),
        ),
        Table(
            "workspace_scopes",
            ("workspace_scope_id", "owner_kind", "owner_id", "space_id", "file_root_id",
             "partition_kind", "partition_id", "run_id", "invocation_id", "persistent", "state",
             "created_at", "updated_at", "data"),
            ("workspace_scope_id",),
            frozenset({"data"}),
        ),
        Table(
            "cleanup_jobs",
            ("job_id", "run_id", "state", "attempts", "created_at", "updated_at", "data"),
            ("job_id",),
            frozenset({"data"}),
        ),
        Table(
            "sessions",
            ("session_id", "owner_kind", "owner_id", "space_id", "created_at", "data"),
            ("session_id",),
            frozenset({"data"}),
        ),
        Table(
            "session_turns",
            ("session_id", "seq", "run_id", "created_at", "data"),
            ("session_id", "seq"),
            frozenset({"data"}),
        ),
        Table(  # a run control (``control.stop`` / ``control.supplement``), agent/controls.py
            "run_controls",
            ("event_id", "run_id", "type", "created_at", "data"),
            ("event_id",),
            frozenset({"data"}),
        ),
        Table(  # an owner's tombstone (000 §7.4): no new run; store/owners.py
            "deleted_owners",
            ("owner_kind", "owner_id", "space_id", "state", "created_at", "updated_at", "data"),
            ("owner_kind", "owner_id"),
            frozenset({"data"}),
        ),
        Table(  # a credential kept for a connection (MCP OAuth tokens): mcp/oauth.py
            "secrets",
            ("binding", "kind", "server", "url", "resource", "created_at", "updated_at", "data"),
            ("binding",),
            frozenset({"data"}),
        ),
        Table(  # the current version of each imported Skill: skills/versions.py
            "skills",
            ("name", "digest", "updated_at", "data"),
            ("name",),
            frozenset({"data"}),
        ),
        Table(  # an immutable, content-addressed Skill version (files in blobs)
            "skill_versions",
            ("digest", "name", "created_at", "data"),
            ("digest",),
            frozenset({"data"}),
        ),
        Table(  # an API key of the host (issue 18): only its digest, never the key
            "api_keys",
            ("key_id", "digest", "actor", "project", "created_at", "revoked_at", "data"),
            ("key_id",),
            frozenset({"data"}),
        ),
        Table(  # a worker process (``agentloom worker``): its heartbeat and what it holds
            "workers",
            ("worker_id", "host", "pid", "state", "started_at", "heartbeat_at", "data"),
            ("worker_id",),
            frozenset({"data"}),
        ),
        Table(  # a call waiting for a person (a hook answered ``ask``), and the answer
            "approvals",
            ("operation_id", "run_id", "status", "created_at", "deadline", "answered_at",
             "data"),
            ("operation_id",),
            frozenset({"data"}),
        ),
        Table(  # a holder's receipt: its sandbox processes of (run, epoch) are gone (or not)
            "revocations",
            ("run_id", "lease_epoch", "worker_id", "confirmed", "created_at", "data"),
            ("run_id", "lease_epoch"),
            frozenset({"data"}),
        ),
        Table(  # a command's receipt (issue 21): agent/command_receipts.py
            "command_receipts",
            ("operation_id", "actor", "project", "command", "state", "created_at",
             "updated_at", "data"),
            ("operation_id",),
            frozenset({"data"}),
        ),
        Table(  # a command's confirmation, consumed once (its row is the consumption)
            "command_confirmations",
            ("operation_id", "created_at"),
            ("operation_id",),
        ),
        Table(  # one activation of a workflow node (issue 20): the workflow driver writes it
            "workflow_nodes",
            ("run_id", "node", "attempt", "status", "operation_id", "created_at", "updated_at",
             "data"),
            ("run_id", "node", "attempt"),
            frozenset({"data"}),
        ),
        Table(  # a message between the nodes of a workflow run (spec 003 F11): squad/collab.py
            "mailbox",
            ("run_id", "message_id", "recipient", "sender", "created_at", "read_at", "data"),
            ("run_id", "message_id"),
            frozenset({"data"}),
        ),
        Table(  # work handed from one node to another, and how far it got
            "handoffs",
            ("run_id", "handoff_id", "from_node", "to_node", "status", "created_at",
             "updated_at", "data"),
            ("run_id", "handoff_id"),
            frozenset({"data"}),
        ),
        Table(  # a task on a run's board, written by compare-and-set on its revision
            "task_board",
            ("run_id", "task_id", "status", "assignee", "revision", "updated_at", "data"),
            ("run_id", "task_id"),
            frozenset({"data"}),
        ),
        Table(  # one entry of a run's blackboard: a plain string key, a JSON value
            "blackboard",
            ("run_id", "entry_key", "revision", "updated_at", "data"),
            ("run_id", "entry_key"),
            frozenset({"data"}),
        ),
        Table(  # a revision taken of a collaboration item: its insert is the compare-and-set
            "collab_revisions",
            ("run_id", "kind", "item", "revision", "created_at"),
            ("run_id", "kind", "item", "revision"),
        ),
    )
}


def table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise ValueError(f"unknown table {name!r}; known: {sorted(TABLES)}") from None


_V4_COMMON = """
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY, owner_kind TEXT, owner_id TEXT, space_id TEXT,
  created_at {real} NOT NULL, data TEXT NOT NULL);
CREATE TABLE session_turns (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT NOT NULL,
  created_at {real} NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq));
"""

_V5_COMMON = """
ALTER TABLE blobs ADD COLUMN chunk_size INTEGER;
CREATE TABLE blob_chunks (
  digest TEXT NOT NULL, seq INTEGER NOT NULL, content {blob} NOT NULL,
  PRIMARY KEY (digest, seq));
"""

# v6 renames the table and what is named after it; the rows stay. SQLite cannot rename an
# index (drop and create it); PostgreSQL renames the index and the primary key constraint.
_V6_SQLITE = """
ALTER TABLE events RENAME TO run_controls;
DROP INDEX events_run;
CREATE INDEX run_controls_run ON run_controls (run_id, event_id);
"""
_V6_POSTGRES = """
ALTER TABLE events RENAME TO run_controls;
ALTER INDEX events_run RENAME TO run_controls_run;
ALTER TABLE run_controls RENAME CONSTRAINT events_pkey TO run_controls_pkey;
"""

_V7_COMMON = """
CREATE TABLE deleted_owners (
  owner_kind TEXT NOT NULL, owner_id TEXT NOT NULL, space_id TEXT NOT NULL,
  state TEXT NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL,
  data TEXT NOT NULL, PRIMARY KEY (owner_kind, owner_id));
"""

# the secret table: a connection's credentials by their binding (``data`` holds the secrets;
# no other table ever does). Only ``agentloom mcp login`` and a token refresh write it.
_V8_COMMON = """
CREATE TABLE secrets (
  binding TEXT PRIMARY KEY, kind TEXT NOT NULL, server TEXT NOT NULL, url TEXT NOT NULL,
  resource TEXT NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL,
  data TEXT NOT NULL);
"""

# imported Skills: every version kept by its content digest; ``skills`` names the current one
_V9_COMMON = """
CREATE TABLE skills (
  name TEXT PRIMARY KEY, digest TEXT NOT NULL, updated_at {real} NOT NULL, data TEXT NOT NULL);
CREATE TABLE skill_versions (
  digest TEXT PRIMARY KEY, name TEXT NOT NULL, created_at {real} NOT NULL, data TEXT NOT NULL);
CREATE INDEX skill_versions_name ON skill_versions (name, created_at);
"""

# the run queue and many workers (issue 17): a pending run names its agent, priority and release
# in columns (a claim filters and counts by them: a worker takes only runs of its own release);
# workers, approvals and revocation receipts; whom a run is done for (actor, project: the
# host's identity, issue 18) and the host's API keys (digests only)
_V10_COMMON = """
ALTER TABLE runs ADD COLUMN agent TEXT;
ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN release_id TEXT;
ALTER TABLE runs ADD COLUMN actor TEXT;
ALTER TABLE runs ADD COLUMN project TEXT;
UPDATE runs SET agent = {agent_of_data}, release_id = {release_of_data};
CREATE INDEX runs_queue ON runs (status, priority DESC, created_at);
CREATE INDEX runs_agent ON runs (agent, status);
CREATE INDEX runs_principal ON runs (project, actor, created_at);
CREATE TABLE api_keys (
  key_id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, actor TEXT NOT NULL,
  project TEXT NOT NULL, created_at {real} NOT NULL, revoked_at {real}, data TEXT NOT NULL);
CREATE TABLE workers (
  worker_id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, state TEXT NOT NULL,
  started_at {real} NOT NULL, heartbeat_at {real} NOT NULL, data TEXT NOT NULL);
CREATE TABLE approvals (
  operation_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, status TEXT NOT NULL,
  created_at {real} NOT NULL, deadline {real}, answered_at {real}, data TEXT NOT NULL);
CREATE INDEX approvals_run ON approvals (run_id);
CREATE INDEX approvals_due ON approvals (status, deadline);
CREATE TABLE revocations (
  run_id TEXT NOT NULL, lease_epoch INTEGER NOT NULL, worker_id TEXT NOT NULL,
  confirmed INTEGER NOT NULL, created_at {real} NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (run_id, lease_epoch));
"""

# commands (issue 21): every command's receipt, owner-queryable by (project, actor); a
# confirmation is consumed by inserting its row (a second insert fails: it runs once)
_V11_COMMON = """
CREATE TABLE command_receipts (
  operation_id TEXT PRIMARY KEY, actor TEXT NOT NULL, project TEXT NOT NULL,
  command TEXT NOT NULL, state TEXT NOT NULL, created_at {real} NOT NULL,
  updated_at {real} NOT NULL, data TEXT NOT NULL);
CREATE INDEX command_receipts_principal ON command_receipts (project, actor, created_at);
CREATE TABLE command_confirmations (
  operation_id TEXT PRIMARY KEY, created_at {real} NOT NULL);
"""

# durable workflows (issue 20): a row per node activation, and a run's collaboration state
# (spec 003 F11): mailbox, handoffs, task board, blackboard. A write of a board task, a
# blackboard entry or a handoff's status also inserts its next ``collab_revisions`` row: a
# second writer from the same revision finds the key taken (a compare-and-set in every store)
_V12_COMMON = """
CREATE TABLE workflow_nodes (
  run_id TEXT NOT NULL, node TEXT NOT NULL, attempt INTEGER NOT NULL, status TEXT NOT NULL,
  operation_id TEXT, created_at {real} NOT NULL, updated_at {real} NOT NULL,
  data TEXT NOT NULL, PRIMARY KEY (run_id, node, attempt));
CREATE INDEX workflow_nodes_run ON workflow_nodes (run_id, updated_at);
CREATE TABLE mailbox (
  run_id TEXT NOT NULL, message_id TEXT NOT NULL, recipient TEXT NOT NULL,
  sender TEXT NOT NULL, created_at {real} NOT NULL, read_at {real}, data TEXT NOT NULL,
  PRIMARY KEY (run_id, message_id));
CREATE INDEX mailbox_recipient ON mailbox (run_id, recipient, created_at);
CREATE TABLE handoffs (
  run_id TEXT NOT NULL, handoff_id TEXT NOT NULL, from_node TEXT NOT NULL,
  to_node TEXT NOT NULL, status TEXT NOT NULL, created_at {real} NOT NULL,
  updated_at {real} NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, handoff_id));
CREATE TABLE task_board (
  run_id TEXT NOT NULL, task_id TEXT NOT NULL, status TEXT NOT NULL, assignee TEXT,
  revision INTEGER NOT NULL, updated_at {real} NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (run_id, task_id));
CREATE TABLE blackboard (
  run_id TEXT NOT NULL, entry_key TEXT NOT NULL, revision INTEGER NOT NULL,
  updated_at {real} NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, entry_key));
CREATE TABLE collab_revisions (
  run_id TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL, revision INTEGER NOT NULL,
  created_at {real} NOT NULL, PRIMARY KEY (run_id, kind, item, revision));
"""

# (summary, sqlite DDL, postgres DDL)
_V1_COMMON = """
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY, status TEXT NOT NULL, lease_epoch INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT, lease_expires_at {real}, created_at {real} NOT NULL,
  updated_at {real} NOT NULL, data TEXT NOT NULL DEFAULT '{{}}');
CREATE TABLE operations (
  operation_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, logical_key TEXT NOT NULL,
  capability_key TEXT NOT NULL, event_type TEXT NOT NULL, phase TEXT NOT NULL, outcome TEXT,
  created_at {real} NOT NULL, updated_at {real} NOT NULL, data TEXT NOT NULL,
  UNIQUE (run_id, logical_key));
CREATE TABLE attempts (
  operation_id TEXT NOT NULL, attempt_no INTEGER NOT NULL, status TEXT NOT NULL,
  started_at {real}, finished_at {real}, data TEXT NOT NULL,
  PRIMARY KEY (operation_id, attempt_no)){without_rowid};
CREATE TABLE hook_invocations (
  operation_id TEXT NOT NULL, timing TEXT NOT NULL, position INTEGER NOT NULL,
  hook_id TEXT NOT NULL, status TEXT NOT NULL, decision TEXT, created_at {real} NOT NULL,
  data TEXT NOT NULL, PRIMARY KEY (operation_id, timing, position)){without_rowid};
CREATE TABLE context_records (
  scope_id TEXT NOT NULL, record_id TEXT NOT NULL, revision INTEGER NOT NULL,
  run_id TEXT NOT NULL, position TEXT NOT NULL, kind TEXT NOT NULL, created_at {real} NOT NULL,
  data TEXT NOT NULL, PRIMARY KEY (scope_id, record_id, revision)){without_rowid};
CREATE TABLE blobs (
  digest TEXT PRIMARY KEY, size INTEGER NOT NULL, created_at {real} NOT NULL,
  content {blob} NOT NULL);
CREATE TABLE results (
  result_ref TEXT PRIMARY KEY, operation_id TEXT NOT NULL, run_id TEXT NOT NULL, role TEXT,
  scope_id TEXT, digest TEXT NOT NULL, size INTEGER NOT NULL, created_at {real} NOT NULL);
CREATE TABLE events (
  event_id TEXT PRIMARY KEY, run_id TEXT, type TEXT NOT NULL, created_at {real} NOT NULL,
  data TEXT NOT NULL);
CREATE INDEX events_run ON events (run_id, event_id);
"""

_V2_COMMON = """
CREATE TABLE file_roots (
  owner_kind TEXT NOT NULL, owner_id TEXT NOT NULL, space_id TEXT NOT NULL,
  file_root_id TEXT NOT NULL UNIQUE, created_at {real} NOT NULL,
  PRIMARY KEY (owner_kind, owner_id));
CREATE TABLE workspace_scopes (
  workspace_scope_id TEXT PRIMARY KEY, owner_kind TEXT NOT NULL, owner_id TEXT NOT NULL,
  space_id TEXT NOT NULL, file_root_id TEXT NOT NULL, partition_kind TEXT NOT NULL,
  partition_id TEXT NOT NULL, run_id TEXT NOT NULL, invocation_id TEXT,
  persistent INTEGER NOT NULL, state TEXT NOT NULL, created_at {real} NOT NULL,
  updated_at {real} NOT NULL, data TEXT NOT NULL,
  UNIQUE (owner_kind, owner_id, partition_kind, partition_id, run_id));
CREATE INDEX workspace_scopes_run ON workspace_scopes (run_id);
CREATE TABLE cleanup_jobs (
  job_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, state TEXT NOT NULL,
  attempts INTEGER NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL,
  data TEXT NOT NULL);
"""

MIGRATIONS: tuple[tuple[str, str, str], ...] = (
    (
        "v1: runs, operations, attempts, hook invocations, context records, blobs, results, events",
        _V1_COMMON.format(real="REAL", blob="BLOB", without_rowid=" WITHOUT ROWID"),
        _V1_COMMON.format(real="DOUBLE PRECISION", blob="BYTEA", without_rowid=""),
    ),
    (
        "v2: file roots, workspace scopes, cleanup jobs",
        _V2_COMMON.format(real="REAL"),
        _V2_COMMON.format(real="DOUBLE PRECISION"),
    ),
    (
        "v3: results may live in the file blob store (location below the shared root)",
        "ALTER TABLE results ADD COLUMN location TEXT",
        "ALTER TABLE results ADD COLUMN location TEXT",
    ),
    (
        "v4: agent sessions bound to their scope, and their turns",
        _V4_COMMON.format(real="REAL"),
        _V4_COMMON.format(real="DOUBLE PRECISION"),
    ),
    (
        "v5: a large blob is stored in chunks (blobs.chunk_size, blob_chunks)",
        _V5_COMMON.format(blob="BLOB"),
        _V5_COMMON.format(blob="BYTEA"),
    ),
    (
        "v6: the events table is run_controls (it holds run controls, not run events)",
        _V6_SQLITE,
        _V6_POSTGRES,
    ),
    (
        "v7: deleted owners (a tombstone refuses new runs of a deleted agent or workflow)",
        _V7_COMMON.format(real="REAL"),
        _V7_COMMON.format(real="DOUBLE PRECISION"),
    ),
    (
        "v8: the secret table (credentials of a connection: MCP OAuth tokens, by binding)",
        _V8_COMMON.format(real="REAL"),
        _V8_COMMON.format(real="DOUBLE PRECISION"),
    ),
    (
        "v9: imported Skills (skills: the current version; skill_versions: every version)",
        _V9_COMMON.format(real="REAL"),
        _V9_COMMON.format(real="DOUBLE PRECISION"),
    ),
    (
        "v10: the run queue (runs.agent, priority, release_id), workers, approvals, revocation "
        "receipts; the host's principals (runs.actor, runs.project) and API keys",
        _V10_COMMON.format(real="REAL", agent_of_data="json_extract(data, '$.agent')",
                           release_of_data="json_extract(data, '$.release_id')"),
        _V10_COMMON.format(real="DOUBLE PRECISION", agent_of_data="data::jsonb ->> 'agent'",
                           release_of_data="data::jsonb ->> 'release_id'"),
    ),
    (
        "v11: command receipts (command_receipts) and consumed confirmations "
        "(command_confirmations)",
        _V11_COMMON.format(real="REAL"),
        _V11_COMMON.format(real="DOUBLE PRECISION"),
    ),
    (
        "v12: workflows (workflow_nodes) and their collaboration state (mailbox, handoffs, "
        "task_board, blackboard, collab_revisions)",
        _V12_COMMON.format(real="REAL"),
        _V12_COMMON.format(real="DOUBLE PRECISION"),
    ),
)
