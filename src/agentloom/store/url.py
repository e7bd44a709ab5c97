"""``open_store(url)``: the store named by a URL (``--store`` / ``AGENTLOOM_STORE``)."""

from __future__ import annotations

from agentloom.errors import ConfigError
from agentloom.store.ports import Store


def open_store(url: str) -> Store:
    """Open (and migrate) the store a URL names.

    ``memory://``, ``sqlite:///relative/or/absolute.db`` (``sqlite:////abs`` also
    accepted), ``postgresql://user@host:port/db[?schema=name]``.
    """
    if url.startswith("memory://"):
        from agentloom.store.memory import MemoryStore

        return MemoryStore(url)
    if url.startswith("sqlite:///"):
        from agentloom.store.sqlite import SqliteStore

        path = url[len("sqlite:///"):]
        if not path:
            raise ConfigError("sqlite store URL needs a file path: sqlite:///path/to/agentloom.db")
        return SqliteStore(path, url=url)
    if url.startswith(("postgresql://", "postgres://")):
        from agentloom.store.postgres import PostgresStore

        return PostgresStore(url)
    raise ConfigError(
        f"unsupported store URL {url!r}: use sqlite:///path.db, postgresql://host/db or memory://"
    )
