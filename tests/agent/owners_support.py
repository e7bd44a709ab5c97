"""Helpers for the owner-deletion tests (000 §7.4): a raw dump of every table of a SQL store,
which rows of it are an owner's (found here from the rows alone, not by the code under test),
and a hash of every file under a workspace root."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.store.test_contract import raw_sql

from agentloom.store.schema import TABLES

Dump = dict[str, set[tuple[Any, ...]]]


def dump(url: str) -> Dump:
    """Every row of every table, as the database holds it (text as stored, bytes as bytes)."""
    out: Dump = {}
    for name, t in TABLES.items():
        rows = raw_sql(url, f"SELECT {', '.join(t.columns)} FROM {name}")
        out[name] = {tuple(bytes(v) if isinstance(v, memoryview | bytearray) else v for v in r)
                     for r in rows}
    return out


def column(table: str, row: tuple[Any, ...], name: str) -> Any:
    columns = TABLES[table].columns
    return row[columns.index(name)] if name in columns else None


def owner_rows(rows: Dump, kind: str, owner_id: str, *, blob_markers: Iterable[bytes] = ()
               ) -> Dump:
    """The rows of ``kind:owner_id``: its runs (by their recorded owner), every row naming one
    of them or one of their operations, its sessions and their turns, its scopes and file
    root, and the blobs whose content holds one of ``blob_markers``."""
    markers = tuple(blob_markers)
    run_ids = {column("runs", r, "run_id") for r in rows["runs"]
               if (json.loads(column("runs", r, "data")).get("owner") or {}).get("id") == owner_id
               and json.loads(column("runs", r, "data"))["owner"]["kind"] == kind}
    op_ids = {column("operations", r, "operation_id") for r in rows["operations"]
              if column("operations", r, "run_id") in run_ids}
    sessions = {column("sessions", r, "session_id") for r in rows["sessions"]
                if (column("sessions", r, "owner_kind"), column("sessions", r, "owner_id"))
                == (kind, owner_id)}
    digests = {column(t, r, "digest") for t in ("blobs", "blob_chunks") for r in rows[t]
               if any(m in column(t, r, "content") for m in markers)}
    out: Dump = {}
    for name, found in rows.items():
        if name == "deleted_owners":
            out[name] = set()
            continue
        mine = set()
        for r in found:
            if (column(name, r, "run_id") in run_ids
                    or column(name, r, "operation_id") in op_ids
                    or column(name, r, "session_id") in sessions
                    or (name in ("blobs", "blob_chunks") and column(name, r, "digest") in digests)
                    or (column(name, r, "owner_kind"), column(name, r, "owner_id"))
                    == (kind, owner_id)):
                mine.add(r)
        out[name] = mine
    return out


def union(*dumps: Mapping[str, set[tuple[Any, ...]]]) -> Dump:
    return {name: set().union(*(d.get(name, set()) for d in dumps)) for name in TABLES}


def files(root: Path) -> dict[str, str]:
    """``relative path -> sha256`` of every file under ``root`` (a link: ``link:<target>``)."""
    out: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        for name in [*names, *[d for d in dirs if os.path.islink(os.path.join(folder, d))]]:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = f"link:{os.readlink(path)}"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
