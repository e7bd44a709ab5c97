"""Which store a ``runs`` command reads, and opening it without creating one by mistake.

Resolution order: ``--store URL`` > ``$AGENTLOOM_STORE`` > the store of ``--config CONFIG``
(SQLite in ``.agentloom/`` beside that file) > ``sqlite:///.agentloom/agentloom.db`` in the
current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloom.assembly import STORE_ENV, store_url_for
from agentloom.cli.errors import CliFailure, UsageFailure, is_store_driver_error
from agentloom.config import load_config
from agentloom.errors import StoreError, redact_secrets
from agentloom.store import Store, open_store

__all__ = ["DEFAULT_STORE_URL", "open_existing_store", "resolve_store_url", "sqlite_path"]

DEFAULT_STORE_URL = "sqlite:///.agentloom/agentloom.db"


def resolve_store_url(store: str | None, config: Path | None) -> str:
    """The store URL for a ``runs`` command (see the module docstring for the order).

    Raises:
        ConfigError: ``config`` is needed and does not load.
    """
    if store:
        return store
    if os.environ.get(STORE_ENV):
        return os.environ[STORE_ENV]
    if config is not None:
        return store_url_for(load_config(config))
    return DEFAULT_STORE_URL


def sqlite_path(url: str) -> Path | None:
    """The database file of a ``sqlite:///`` URL, else None."""
    return Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None


def open_existing_store(url: str, *, read_only: bool = False) -> Store:
    """Open a store to read or control runs in; a missing SQLite file is an error, not a new
    empty database. ``read_only`` (``runs list|show|events``) also creates no PostgreSQL
    schema, migrates nothing and writes nothing: a store in a folder or database the user
    may only read still opens.

    Raises:
        UsageFailure: there is no store at ``url`` (``STORE_NOT_FOUND``): the SQLite file does
            not exist or, read only, holds no store, or the PostgreSQL schema does not exist.
        CliFailure: the database cannot be opened: unreachable, not a database, not writable
            (``STORE_FAILED``, naming the URL without its password).
        ConfigError: the URL is not supported or names a schema AgentLoom may not use.
        StoreError: the store's schema version is not this code's
            (``STORE_VERSION_MISMATCH``).
    """
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        raise UsageFailure(
            f"no store at {str(path.absolute())!r} ({redact_secrets(url)}); nothing has run there "
            f"yet. {_ELSEWHERE}", code="STORE_NOT_FOUND")
    try:
        return open_store(url, read_only=read_only)
    except StoreError as exc:
        if exc.code != "STORE_NOT_FOUND":
            raise
        raise UsageFailure(f"{exc.error.message}. {_ELSEWHERE}", code=exc.code) from exc
    except Exception as exc:
        if not is_store_driver_error(exc):
            raise
        raise CliFailure(f"cannot open the store {redact_secrets(url)}: {exc}",
                         code="STORE_FAILED") from exc


_ELSEWHERE = (f"Pass --store URL, set {STORE_ENV}, or --config CONFIG to read the store beside a "
              "config file")
