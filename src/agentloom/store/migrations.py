"""The append-only migration list: each schema version's summary and its SQL by dialect.

Durable formats carry a schema version: ``MIGRATIONS[i]`` moves a database from version ``i``
to ``i + 1``; its position is its version. Never edit a shipped entry — append a new one.

A migration is a summary and its SQL *by dialect* (``Migration.sql``: ``"sqlite"``,
``"postgresql"``). Most are one template written once (``_each``) with each dialect's column
types (``_TYPES``); the few that differ name their SQL per dialect. A new dialect adds its
``_TYPES`` entry and its SQL to the migrations that differ — the shape of a shipped migration
never changes, and neither does the summary ``schema_migrations`` records for it.

Owns: ``MIGRATIONS``, ``Migration``, ``DIALECTS``. Does not own: the tables' columns as the
stores read and write them (``store.schema.TABLES``), applying a migration
(``store._sql.SqlStore._migrate``) or choosing a backend (``store.url``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["DIALECTS", "MIGRATIONS", "Migration", "column_type"]

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

# artifacts (issue 37): a file a workflow node handed on, by (run, node, attempt, path); its
# bytes are a content-addressed blob (``digest``); ``source_owner`` is whose content it is
_V13_COMMON = """
CREATE TABLE workflow_artifacts (
  run_id TEXT NOT NULL, node TEXT NOT NULL, attempt INTEGER NOT NULL, path TEXT NOT NULL,
  digest TEXT NOT NULL, size INTEGER NOT NULL, source_owner TEXT NOT NULL,
  invocation TEXT NOT NULL, created_at {real} NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY (run_id, node, attempt, path));
CREATE INDEX workflow_artifacts_owner ON workflow_artifacts (source_owner);
"""

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

_TYPES: Mapping[str, Mapping[str, str]] = {
    "sqlite": {"real": "REAL", "blob": "BLOB", "without_rowid": " WITHOUT ROWID"},
    "postgresql": {"real": "DOUBLE PRECISION", "blob": "BYTEA", "without_rowid": ""},
}
"""Each dialect's spelling of the templates' placeholders (``{real}``, ``{blob}``, …)."""

DIALECTS: tuple[str, ...] = tuple(_TYPES)
"""The SQL dialects every migration has SQL for."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema version: its one-line ``summary`` (recorded in ``schema_migrations``) and
    the SQL that applies it, by dialect (statements separated by ``;``)."""

    summary: str
    sql: Mapping[str, str]

    def ddl(self, dialect: str) -> str:
        """The SQL of this migration in ``dialect``.

        Raises:
            ValueError: the migration has no SQL for ``dialect``.
        """
        try:
            return self.sql[dialect]
        except KeyError:
            raise ValueError(f"migration {self.summary.split(':', 1)[0]} has no SQL for "
                             f"dialect {dialect!r}; it has {sorted(self.sql)}") from None


def column_type(dialect: str, kind: str) -> str:
    """``dialect``'s column type for ``kind`` (``real``, ``blob``)."""
    return _TYPES[dialect][kind]


def _each(template: str, **per_dialect: Mapping[str, str]) -> dict[str, str]:
    """``template`` in every dialect: its types, and ``per_dialect``'s values for the rest."""
    return {d: template.format(**types, **{k: v[d] for k, v in per_dialect.items()})
            for d, types in _TYPES.items()}


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "v1: runs, operations, attempts, hook invocations, context records, blobs, results, events",
        _each(_V1_COMMON),
    ),
    Migration("v2: file roots, workspace scopes, cleanup jobs", _each(_V2_COMMON)),
    Migration(
        "v3: results may live in the file blob store (location below the shared root)",
        _each("ALTER TABLE results ADD COLUMN location TEXT"),
    ),
    Migration("v4: agent sessions bound to their scope, and their turns", _each(_V4_COMMON)),
    Migration(
        "v5: a large blob is stored in chunks (blobs.chunk_size, blob_chunks)",
        _each(_V5_COMMON),
    ),
    Migration(
        "v6: the events table is run_controls (it holds run controls, not run events)",
        {"sqlite": _V6_SQLITE, "postgresql": _V6_POSTGRES},
    ),
    Migration(
        "v7: deleted owners (a tombstone refuses new runs of a deleted agent or workflow)",
        _each(_V7_COMMON),
    ),
    Migration(
        "v8: the secret table (credentials of a connection: MCP OAuth tokens, by binding)",
        _each(_V8_COMMON),
    ),
    Migration(
        "v9: imported Skills (skills: the current version; skill_versions: every version)",
        _each(_V9_COMMON),
    ),
    Migration(
        "v10: the run queue (runs.agent, priority, release_id), workers, approvals, revocation "
        "receipts; the host's principals (runs.actor, runs.project) and API keys",
        _each(_V10_COMMON,
              agent_of_data={"sqlite": "json_extract(data, '$.agent')",
                             "postgresql": "data::jsonb ->> 'agent'"},
              release_of_data={"sqlite": "json_extract(data, '$.release_id')",
                               "postgresql": "data::jsonb ->> 'release_id'"}),
    ),
    Migration(
        "v11: command receipts (command_receipts) and consumed confirmations "
        "(command_confirmations)",
        _each(_V11_COMMON),
    ),
    Migration(
        "v12: workflows (workflow_nodes) and their collaboration state (mailbox, handoffs, "
        "task_board, blackboard, collab_revisions)",
        _each(_V12_COMMON),
    ),
    Migration(
        "v13: workflow_artifacts (files a workflow node hands on: run, node, attempt, path, blob digest, "
        "source owner)",
        _each(_V13_COMMON),
    ),
)
