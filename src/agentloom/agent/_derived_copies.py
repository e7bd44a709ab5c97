"""The copies of a deleted agent's content inside another owner's run, found and replaced
(``agent.derived`` says where they are looked for and what the rows become).

- its texts: what its nodes answered, its delegations' results and its model calls' answers,
  and what its nodes wrote to the run's collaboration state (``posted_texts``: the messages
  they sent, the work they handed off, the results of handoffs they accepted, the task board
  revisions they wrote);
- a copy: a JSON string holding one of them (the whole string, or — for a text of at least
  ``MIN_COPY`` characters — a part of it), or a blob whose text holds one;
- replaced: the text by the marker in the string; a blob reference by a text block of the
  marker (the blob goes when no other row names it).

Owns: finding and replacing copies in one JSON value. Does not own: which rows are read or
written (``agent.derived``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentloom.context.blobs import load_blob
from agentloom.kernel import Kernel
from agentloom.store.artifacts import TABLE as ARTIFACTS_TABLE
from agentloom.store.schema import table

__all__ = ["MIN_COPY", "answered_texts", "blobs_of", "holds", "posted_texts", "scrub"]

MIN_COPY = 16
"""A shorter text is replaced only where it is a whole string: a short answer such as ``ok``
would otherwise rewrite unrelated text."""
_TEXT_COLUMNS = ("results", ARTIFACTS_TABLE)  # a digest column, not a JSON reference


def blobs_of(table_name: str, row: Mapping[str, Any]) -> set[str]:
    """The digests a row refers to: a result's or artifact's column, JSON ``{"blob": …}``."""
    if table_name in _TEXT_COLUMNS:
        return {str(row["digest"])} if row.get("digest") and not row.get("location") else set()
    out: set[str] = set()
    for column in table(table_name).json_columns:
        todo = [row.get(column)]
        while todo:
            item = todo.pop()
            if isinstance(item, Mapping):
                ref = item.get("blob")
                if isinstance(ref, Mapping) and isinstance(ref.get("digest"), str):
                    out.add(ref["digest"])
                todo.extend(item.values())
            elif isinstance(item, list | tuple):
                todo.extend(item)
    return out


def posted_texts(rows: Mapping[str, list[dict[str, Any]]], nodes: set[str],
                 marker: str) -> set[str]:
    """The strings the agent's ``nodes`` wrote to the run's collaboration state through the
    collaboration tools: a message's body (its ``sender``), a handoff's payload (its
    ``from_node``) or result (its acceptor, ``accepted_by.node``), a task board revision's
    data (its writer, ``by.node``)."""
    if not nodes:
        return set()
    values: list[Any] = []
    for row in rows["mailbox"]:
        if row.get("sender") in nodes:
            values.append((row.get("data") or {}).get("body"))
    for row in rows["handoffs"]:
        data = row.get("data") or {}
        if row.get("from_node") in nodes:
            values.append(data.get("payload"))
        if (data.get("accepted_by") or {}).get("node") in nodes:
            values.append(data.get("result"))
    for row in rows["task_board"]:
        data = row.get("data") or {}
        if isinstance(data.get("by"), Mapping) and data["by"].get("node") in nodes:
            values.append(data.get("data"))
    found: set[str] = set()
    while values:
        item = values.pop()
        if isinstance(item, str) and item and marker not in item:
            found.add(item)
        elif isinstance(item, Mapping):
            values.extend(item.values())
        elif isinstance(item, list | tuple):
            values.extend(item)
    return found


def answered_texts(kernel: Kernel, delegations: list[dict[str, Any]], nodes: list[dict[str, Any]],
           answers: list[dict[str, Any]], marker: str) -> set[str]:
    """What the agent answered in this run: its node records' outputs, the content of its
    delegations' results (a blob's text loaded) and the text of its model calls' answers
    (found even once the workflow's own rows are gone)."""
    found = {str((n.get("data") or {}).get("output") or "") for n in nodes}
    for op in [*delegations, *answers]:
        data = op.get("data") or {}
        for part in ("raw", "result"):
            for block in ((data.get(part) or {}).get("content") or ()):
                if not isinstance(block, Mapping):
                    continue
                inner = block.get("data")
                for text in (block.get("text"),
                             inner.get("text") if isinstance(inner, Mapping) else None):
                    if isinstance(text, str):
                        found.add(text)
                ref = block.get("blob")
                if isinstance(ref, Mapping) and isinstance(ref.get("digest"), str):
                    loaded = load_blob(kernel.store, ref["digest"]) or ""
                    found.add(_answer_text(loaded) if op in answers else loaded)
    return {t for t in found if t.strip() and t != marker}


def _answer_text(loaded: str) -> str:
    """The answer's text of a model call's result stored as a blob (a JSON rendering)."""
    try:
        value = json.loads(loaded)
    except ValueError:
        return loaded
    return str(value.get("text") or "") if isinstance(value, Mapping) else loaded


def holds(value: str, texts: set[str]) -> bool:
    return any(t == value or (len(t) >= MIN_COPY and t in value) for t in texts)


def scrub(value: Any, texts: set[str], marker: str, tainted: set[str]) -> Any:
    """``value`` with every copy of ``texts`` and every blob of ``tainted`` replaced by the
    marker (the same object when nothing changed)."""
    if isinstance(value, str):
        if not holds(value, texts):
            return value
        for t in sorted(texts, key=len, reverse=True):
            value = marker if value == t else (value.replace(t, marker) if len(t) >= MIN_COPY
                                               else value)
        return value
    if isinstance(value, Mapping):
        ref = value.get("blob")
        if isinstance(ref, Mapping) and ref.get("digest") in tainted:
            return {"type": "text", "text": marker}
        items = {k: scrub(v, texts, marker, tainted) for k, v in value.items()}
        changed = any(items[k] is not v for k, v in value.items())
        return items if changed else value
    if isinstance(value, list | tuple):
        scrubbed = [scrub(v, texts, marker, tainted) for v in value]
        return scrubbed if any(a is not b for a, b in zip(scrubbed, value, strict=True)) \
            else value
    return value
