"""Which store a ``runs`` command reads, and opening it without creating one by mistake.

Resolution order: ``--store URL`` > ``$AGENTLOOM_STORE`` > the store of ``--config CONFIG``
(SQLite in ``.agentloom/`` beside that file) > ``sqlite:///.agentloom/agentloom.db`` in the
current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloom.agent.configured import STORE_ENV, store_url_for
from agentloom.cli.errors import UsageFailure
from agentloom.config import load_config
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


def open_existing_store(url: str) -> Store:
    """Open a store to read or control runs in; a missing SQLite file is an error, not a new
    empty database.

    Raises:
        UsageFailure: the SQLite file does not exist.
        ConfigError: the URL is not supported.
    """
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        raise UsageFailure(
            f"no store at {str(path.absolute())!r} ({url}); nothing has run there yet. Pass "
            f"--store URL, set {STORE_ENV}, or --config CONFIG to read the store beside a config file")
    return open_store(url)
