"""Table definitions shared by every backend, and the append-only migration list.

Durable formats carry a schema version: ``MIGRATIONS[i]`` moves a database from
version ``i`` to ``i + 1``; its position is its version. Never edit a shipped
entry — append a new one.

The migrations (each a summary and its SQL by dialect) live in ``store.migrations`` and are
re-exported here.

Owns: ``TABLES``. Does not own: the migrations' SQL (``store.migrations``), applying them
(``store._sql.SqlStore._migrate``) or choosing a backend (``store.url``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentloom.store.migrations import DIALECTS, MIGRATIONS, Migration, column_type

__all__ = ["DIALECTS", "MIGRATIONS", "TABLES", "Migration", "Table", "column_type", "table"]


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
        Table(  # a file a workflow node handed on (issue 37), its bytes a blob: store/artifacts.py
            "workflow_artifacts",
            ("run_id", "node", "attempt", "path", "digest", "size", "source_owner", "invocation",
             "created_at", "data"),
            ("run_id", "node", "attempt", "path"),
            frozenset({"data"}),
        ),
    )
}


def table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise ValueError(f"unknown table {name!r}; known: {sorted(TABLES)}") from None
