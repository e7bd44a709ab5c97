"""Durable storage: one ``Store`` protocol, three implementations, one contract suite.

The store knows tables and rows, never domain managers. Every run-scoped write is
fenced by the run's ``lease_epoch``: a stale writer fails and changes nothing.
``open_store(url)`` picks the implementation from a URL:

* ``memory://`` — in-process dictionaries (tests, benchmarks; not durable);
* ``sqlite:///path/to/file.db`` — the embedded default (WAL, ``synchronous=FULL``);
* ``postgresql://…`` — for more than one process or machine (needs the ``postgres`` extra).
"""

from agentloom.store.ports import (
    Delete,
    Fence,
    Insert,
    Op,
    Put,
    Store,
    WriteSet,
)
from agentloom.store.url import open_store

__all__ = ["Delete", "Fence", "Insert", "Op", "Put", "Store", "WriteSet", "open_store"]
