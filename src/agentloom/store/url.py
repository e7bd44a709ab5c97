"""``open_store(url)``: the store named by a URL (``--store`` / ``AGENTLOOM_STORE``)."""

from __future__ import annotations

from agentloom.errors import ConfigError
from agentloom.store.ports import Store


def open_store(url: str, *, read_only: bool = False) -> Store:
    """Open (and migrate) the store a URL names.

    ``memory://``, ``sqlite:///relative/or/absolute.db`` (``sqlite:////abs`` also
    accepted), ``postgresql://user@host:port/db[?schema=name]``.

    ``read_only`` opens an existing store to read it: no file, folder, schema or table is
    created, nothing is migrated, and every write is refused (``StoreError``
    ``STORE_READ_ONLY``). ``memory://`` has nothing to protect and opens as usual.

    Raises:
        ConfigError: the URL is not supported, or ``?schema=`` names no schema AgentLoom
            may use (not an identifier, or a system schema).
        StoreError: ``STORE_VERSION_MISMATCH``: the store is newer than this code (or, read
            only, older); read only, ``STORE_NOT_FOUND``: there is no store at the URL.
    """
    if url.startswith("memory://"):
        from agentloom.store.memory import MemoryStore

        return MemoryStore(url)
    if url.startswith("sqlite:///"):
        from agentloom.store.sqlite import SqliteStore

        path = url[len("sqlite:///"):]
        if not path:
            raise ConfigError("sqlite store URL needs a file path: sqlite:///path/to/agentloom.db")
        return SqliteStore(path, url=url, read_only=read_only)
    if url.startswith(("postgresql://", "postgres://")):
        from agentloom.store.postgres import PostgresStore

        return PostgresStore(url, read_only=read_only)
    raise ConfigError(
        f"unsupported store URL {url!r}: use sqlite:///path.db, postgresql://host/db or memory://"
    )
