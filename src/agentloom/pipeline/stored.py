"""How an operation's large parts are stored: each encoded once, a large result block once.

An operation's row is written at every phase, and its large parts — the request (with the
proposed arguments), the payload, the raw and the effective result — are the same objects
from one phase to the next: they are *replaced*, never changed in place. So each is
encoded once: a row's ``data`` is an ``EncodedJson``, a plain dict that also carries the
text the SQL stores write for it, composed from the parts' cached texts (``PartCache``).

A result is also in the Attempt row, and its text in the context's ``result_ref``. So a
content block larger than the context's preview limit — a text block by its UTF-8 bytes, a
JSON block by its rendering (``results.rendered_json``: what ``ToolResult.text`` shows and
``result_read`` reads) — is stored once, as a blob (``context.blobs``), and the rows hold
``{"type": "text" | "json", "blob": {"digest", "size"}}`` in its place. The effective
result of a block a hook left alone and the ``result_ref`` of a one-block result name that
same blob::

    live part (whole text) ── prepare ──► stored form (blob refs) ──► rows
           ▲                                   │ blobs not committed yet ──► with the rows
           └────────── loaded_part (store) ◄───┘

The live objects (``OperationState.raw`` / ``result``, what hooks see and patch) always hold
the whole text; only what is written differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentloom.canonical import canonical_json
from agentloom.context.blobs import BlobText, load_blob
from agentloom.errors import StoreError
from agentloom.results import JsonBlock, TextBlock, ToolResult, rendered_json
from agentloom.store.ports import Op, Store

_encode = canonical_json
# The parts of an operation that are replaced, never changed in place (see above).
ENCODED_ONCE = frozenset({"request", "payload", "raw", "result"})
RESULT_PARTS = ("raw", "result")  # the parts whose large blocks are stored as blobs

Form = tuple[Any, Any, tuple[BlobText, ...]]  # (the live part, its stored form, its blobs)


class PartCache:
    """One operation's parts as its rows store them; shared by its state and its rows."""

    __slots__ = ("blobs", "forms", "renders", "texts", "written")

    def __init__(self) -> None:
        self.texts: dict[str, tuple[Any, str]] = {}  # part -> (the object encoded, its text)
        self.forms: dict[str, Form] = {}  # result part -> its stored form, while current
        self.blobs: dict[int, BlobText] = {}  # id(text) -> its blob (the text kept alive)
        self.renders: dict[int, tuple[Any, str]] = {}  # id(JSON data) -> (the data, its text)
        self.written: set[str] = set()  # digests of blobs known to be committed

    def text_of(self, result: ToolResult) -> str | None:
        """``result.text()`` when this cache already has it (a one-block result whose JSON
        block it rendered, or a text block), else None."""
        if len(result.content) != 1:
            return None
        block = result.content[0]
        if isinstance(block, TextBlock):
            return block.text
        if isinstance(block, JsonBlock):
            known = self.renders.get(id(block.data))
            return known[1] if known is not None and known[0] is block.data else None
        return None

    def stored(self, key: str, value: Any) -> Any:
        """What a row holds for part ``key`` = ``value``: its stored form once prepared."""
        form = self.forms.get(key)
        return form[1] if form is not None and form[0] is value else value

    def prepare(self, key: str, value: Any, limit: int) -> tuple[Any, tuple[BlobText, ...]]:
        """The stored form of result part ``key`` = ``value`` and the blobs it names (made
        once per part object; a text already hashed for this operation is not hashed again)."""
        form = self.forms.get(key)
        if form is not None and form[0] is value:
            return form[1], form[2]
        stored, blobs = self._stored_result(value, limit)
        self.forms[key] = (value, stored, blobs)
        return stored, blobs

    def _stored_result(self, result: Any, limit: int) -> tuple[Any, tuple[BlobText, ...]]:
        content = result.get("content") if isinstance(result, Mapping) else None
        if not isinstance(content, list):
            return result, ()
        blocks: list[Any] = []
        blobs: list[BlobText] = []
        for block in content:
            blob = self._blob_of(block, limit)
            if blob is None:
                blocks.append(block)
                continue
            blobs.append(blob)
            blocks.append({"type": block["type"],
                           "blob": {"digest": blob.digest, "size": blob.size}})
        if not blobs:
            return result, ()
        return {**result, "content": blocks}, tuple(blobs)

    def _blob_of(self, block: Any, limit: int) -> BlobText | None:
        """The blob of a content block larger than ``limit`` bytes, else None."""
        if not isinstance(block, Mapping):
            return None
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text: str = block["text"]
            known = self.blobs.get(id(text))
            if known is not None and known.text is text:
                return known
        elif kind == "json" and "data" in block:
            data = block["data"]
            render = self.renders.get(id(data))
            if render is None or render[0] is not data:
                render = self.renders[id(data)] = (data, rendered_json(data))
            text = render[1]
        else:
            return None
        if len(text) * 4 <= limit or (len(text) <= limit and len(text.encode()) <= limit):
            return None  # (a character is at most four UTF-8 bytes)
        blob = BlobText.of(text)
        if kind == "text":
            self.blobs[id(text)] = blob
        return blob

    def loaded(self, key: str, stored: Any, store: Store | None, texts: dict[str, str]) -> Any:
        """The live part of a stored result part (blocks read back from their blobs, each
        blob once per ``texts``); the blobs it names count as written."""
        content = stored.get("content") if isinstance(stored, Mapping) else None
        if not isinstance(content, list) \
                or not any(isinstance(b, Mapping) and "blob" in b for b in content):
            return stored
        blocks: list[Any] = []
        blobs: list[BlobText] = []
        for block in content:
            ref = block.get("blob") if isinstance(block, Mapping) else None
            if ref is None:
                blocks.append(block)
                continue
            digest = ref["digest"]
            text = texts.get(digest)
            if text is None:
                if store is None:
                    raise StoreError("this operation's result is stored as a blob; pass the "
                                     "store to read it")
                text = load_blob(store, digest)
                if text is None:
                    raise StoreError(f"the blob {digest} of an operation's result is not "
                                     "stored", code="RESULT_BLOB_MISSING")
                texts[digest] = text
            blob = BlobText(digest, int(ref["size"]), text)
            blobs.append(blob)
            if block["type"] == "text":
                blocks.append({"type": "text", "text": text})
                self.blobs[id(text)] = blob
            else:
                blocks.append({"type": "json", "data": json.loads(text)})
        live = {**stored, "content": blocks}
        self.forms[key] = (live, stored, tuple(blobs))
        self.written.update(b.digest for b in blobs)
        return live


class EncodedJson(dict[str, Any]):
    """A row's JSON object whose ``json_text`` is exactly what the SQL stores write for it
    (sorted keys, compact separators, non-ASCII kept; a result part in its stored form),
    made when first asked for, with the operation's parts taken from its ``PartCache``.
    To anything else (the memory store) it is a plain dict."""

    __slots__ = ("_cache", "_text")
    _cache: PartCache
    _text: str

    @property
    def json_text(self) -> str:
        try:
            return self._text
        except AttributeError:
            pass
        cache = getattr(self, "_cache", None)
        out: list[str] = []
        run: dict[str, Any] = {}  # consecutive other keys, encoded together
        for key in sorted(self):
            value = self[key]
            if key not in ENCODED_ONCE:
                run[key] = value
                continue
            if run:
                out.append(_encode(run)[1:-1])
                run = {}
            if value is None:
                out.append(f'"{key}":null')
                continue
            if cache is None:
                out.append(f'"{key}":{_encode(value)}')
                continue
            target = cache.stored(key, value) if key in RESULT_PARTS else value
            cached = cache.texts.get(key)
            if cached is None or cached[0] is not target:
                cached = cache.texts[key] = (target, _encode(target))
            out.append(f'"{key}":{cached[1]}')
        if run:
            out.append(_encode(run)[1:-1])
        self._text = "{" + ",".join(out) + "}"
        return self._text


def encoded_over(data: dict[str, Any], cache: PartCache) -> EncodedJson:
    """``data`` (a row's JSON column) as an ``EncodedJson`` over ``cache``."""
    out = EncodedJson(data)
    out._cache = cache
    return out


Written = list[tuple[PartCache, set[str]]]  # per row cache: the digests its rows name


def blobs_to_write(ops: Iterable[Op], limit: int) -> tuple[list[BlobText], Written]:
    """The blobs the rows of ``ops`` name that are not known to be committed (each once),
    and what to mark ``committed`` once ``ops`` are. Prepares the stored form of every
    result part on the way."""
    pending: dict[str, BlobText] = {}
    named: Written = []
    for op in ops:
        data = op.row.get("data")
        cache = getattr(data, "_cache", None) if isinstance(data, EncodedJson) else None
        if cache is None:
            continue
        assert isinstance(data, EncodedJson)
        digests: set[str] = set()
        for key in RESULT_PARTS:
            value = data.get(key)
            if value is None:
                continue
            for blob in cache.prepare(key, value, limit)[1]:
                digests.add(blob.digest)
                if blob.digest not in cache.written:
                    pending.setdefault(blob.digest, blob)
        if digests:
            named.append((cache, digests))
    return list(pending.values()), named


def committed(named: Written) -> None:
    """The rows ``blobs_to_write`` looked at committed: the blobs they name are stored."""
    for cache, digests in named:
        cache.written.update(digests)
