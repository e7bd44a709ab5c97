"""``open_store(url)``: the store named by a URL (``--store`` / ``AGENTLOOM_STORE``).

The URL's scheme picks the backend from ``BACKENDS`` (scheme -> opener); each opener imports
its backend module only when it is used, so a backend's driver is never loaded for a store
of another scheme. A new backend is one module in ``store/`` and one line here::

    open_store("sqlite:///a.db") ─► BACKENDS["sqlite"] ─► _sqlite ─► SqliteStore(…)

Owns: the scheme registry and the error for a URL no backend takes. Does not own: a
backend's own URL parts (``?schema=`` is ``store.postgres``'s) nor migrating (``store._sql``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentloom.errors import ConfigError
from agentloom.extras import require
from agentloom.store.ports import Store

__all__ = ["BACKENDS", "Opener", "open_store"]

Opener = Callable[[str, bool], Store]
"""Opens the store of a URL of its scheme: ``opener(url, read_only)``."""


def _unsupported(url: str) -> ConfigError:
    return ConfigError(
        f"unsupported store URL {url!r}: use sqlite:///path.db, postgresql://host/db or memory://"
    )


def _memory(url: str, read_only: bool) -> Store:
    from agentloom.store.memory import MemoryStore

    return MemoryStore(url)


def _sqlite(url: str, read_only: bool) -> Store:
    if not url.startswith("sqlite:///"):
        raise _unsupported(url)
    from agentloom.store.sqlite import SqliteStore

    path = url[len("sqlite:///"):]
    if not path:
        raise ConfigError("sqlite store URL needs a file path: sqlite:///path/to/agentloom.db")
    return SqliteStore(path, url=url, read_only=read_only)


def _postgres(url: str, read_only: bool) -> Store:
    require("postgres", "a postgresql:// store")
    from agentloom.store.postgres import PostgresStore

    return PostgresStore(url, read_only=read_only)


BACKENDS: Mapping[str, Opener] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "postgresql": _postgres,
    "postgres": _postgres,
}
"""URL scheme -> the opener of its backend."""


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
        MissingExtra: a ``postgresql://`` URL without the ``postgres`` extra installed.
        StoreError: ``STORE_VERSION_MISMATCH``: the store is newer than this code (or, read
            only, older); read only, ``STORE_NOT_FOUND``: there is no store at the URL.
    """
    scheme, separator, _ = url.partition("://")
    opener = BACKENDS.get(scheme) if separator else None
    if opener is None:
        raise _unsupported(url)
    return opener(url, read_only)
