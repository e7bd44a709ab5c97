"""The PostgreSQL store (psycopg 3): for more than one process or machine.

Fencing takes ``FOR SHARE`` on the run row, so a concurrent ``claim_run`` waits
for in-flight commits and every later commit of the old holder sees the new epoch.
An optional ``schema`` query parameter (``postgresql://host/db?schema=name``)
keeps AgentLoom's tables in their own schema, created when missing.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agentloom.errors import ConfigError
from agentloom.store._sql import SqlStore

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "the PostgreSQL store needs psycopg: pip install 'agentloom[postgres]'"
        ) from exc
    return psycopg


class PostgresStore(SqlStore):
    placeholder = "%s"
    fence_sql_suffix = " FOR SHARE"

    def __init__(self, url: str) -> None:
        psycopg = _psycopg()
        self.integrity_errors = (psycopg.errors.UniqueViolation,)
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        self.schema = query.pop("schema", None)
        if self.schema is not None and not _SCHEMA_NAME.match(self.schema):
            raise ConfigError(
                f"store URL schema {self.schema!r} is not a plain lower-case identifier; "
                "use letters, digits and underscores"
            )
        self._dsn = urlunsplit(parts._replace(query=urlencode(query)))
        super().__init__(url)

    def _connect(self) -> Any:
        psycopg = _psycopg()
        conn = psycopg.connect(self._dsn, autocommit=False)
        if self.schema:
            with conn.cursor() as cur:
                cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                cur.execute(f'SET search_path TO "{self.schema}"')
            conn.commit()
        return conn

    def _begin(self, cur: Any) -> None:
        """psycopg opens a transaction implicitly on the first statement."""

    def _migration_lock(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || 'agentloom'))")

    def _ddl(self, sqlite_sql: str, postgres_sql: str) -> str:
        return postgres_sql

    def drop_schema(self) -> None:
        """Remove this store's schema and everything in it (tests only)."""
        if not self.schema:
            raise ConfigError("drop_schema needs a store URL with ?schema=")
        with self._write_lock:
            with self._writer.cursor() as cur:
                cur.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
            self._writer.commit()
