"""Reasoning: split one Chat Completions delta into text and reasoning, per the preset's channels.

Channels (``reasoning.channels`` in the preset data):

- ``reasoning_content``: a string sibling of ``content`` (DeepSeek, GLM, DashScope);
- ``reasoning_details``: a list of ``{type, text, ...}`` items (MiniMax with ``reasoning_split``);
- ``think_tags``: ``<think>…</think>`` spans inside ``content``, split incrementally so that a tag
  cut across chunks at any character is still recognised (``ThinkTagSplitter``).

``extractor_for(preset)`` returns a fresh, stateful ``DeltaExtractor`` — one per Attempt. Call it
with each ``choices[i].delta`` and call ``flush()`` once when the stream ends, so characters held
back as a possible partial tag are delivered. Responses-protocol reasoning arrives as typed
events and is read by that adapter, not here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloom.models.presets import Preset

__all__ = [
    "DeltaExtractor",
    "Extracted",
    "ThinkTagSplitter",
    "extractor_for",
    "split_think_tags",
]

Extracted = tuple[str, str, tuple[Mapping[str, Any], ...] | None]
"""``(text_piece, reasoning_piece, reasoning_details or None)`` for one delta."""


class ThinkTagSplitter:
    """Incremental ``open…close`` splitter: ``feed`` chunks, then ``flush`` once.

    Outside a span only ``open`` is a tag; inside only ``close`` is. Any chunking of a string
    yields the same concatenated ``(text, reasoning)`` as feeding it whole: a suffix that could
    still become the awaited tag is held back until the next chunk decides it. An unclosed span
    runs to the end of the stream.
    """

    __slots__ = ("_close", "_inside", "_open", "_pending")

    def __init__(self, open_tag: str = "<think>", close_tag: str = "</think>") -> None:
        if not open_tag or not close_tag:
            raise ValueError("think tags must be non-empty")
        self._open = open_tag
        self._close = close_tag
        self._inside = False
        self._pending = ""

    @property
    def inside(self) -> bool:
        return self._inside

    def feed(self, chunk: str) -> tuple[str, str]:
        buf = self._pending + chunk
        text: list[str] = []
        reasoning: list[str] = []
        while True:
            tag = self._close if self._inside else self._open
            at = buf.find(tag)
            if at < 0:
                break
            (reasoning if self._inside else text).append(buf[:at])
            buf = buf[at + len(tag) :]
            self._inside = not self._inside
        held = _partial_tag_suffix(buf, tag)
        self._pending = buf[len(buf) - held :] if held else ""
        (reasoning if self._inside else text).append(buf[: len(buf) - held])
        return "".join(text), "".join(reasoning)

    def flush(self) -> tuple[str, str]:
        rest, self._pending = self._pending, ""
        return ("", rest) if self._inside else (rest, "")


def _partial_tag_suffix(buf: str, tag: str) -> int:
    """Length of the longest proper prefix of ``tag`` that ``buf`` ends with."""
    for n in range(min(len(tag) - 1, len(buf)), 0, -1):
        if buf.endswith(tag[:n]):
            return n
    return 0


def split_think_tags(content: str, open_tag: str = "<think>", close_tag: str = "</think>") -> tuple[str, str]:
    """Split a whole ``content`` string into ``(text, reasoning)``."""
    splitter = ThinkTagSplitter(open_tag, close_tag)
    text, reasoning = splitter.feed(content)
    tail_text, tail_reasoning = splitter.flush()
    return text + tail_text, reasoning + tail_reasoning


class DeltaExtractor:
    """Stateful per-Attempt extractor: ``extractor(delta) -> (text, reasoning, details)``."""

    __slots__ = ("_channels", "_splitter")

    def __init__(
        self, channels: Iterable[str], *, open_tag: str = "<think>", close_tag: str = "</think>"
    ) -> None:
        self._channels = frozenset(channels)
        unknown = self._channels - {"reasoning_content", "reasoning_details", "think_tags"}
        if unknown:
            raise ValueError(f"unknown reasoning channels {sorted(unknown)}")
        self._splitter = ThinkTagSplitter(open_tag, close_tag) if "think_tags" in self._channels else None

    def __call__(self, delta: Mapping[str, Any]) -> Extracted:
        reasoning = ""
        details: tuple[Mapping[str, Any], ...] | None = None
        if "reasoning_content" in self._channels:
            piece = delta.get("reasoning_content")
            if isinstance(piece, str):
                reasoning += piece
        if "reasoning_details" in self._channels:
            items = delta.get("reasoning_details")
            if isinstance(items, list):
                kept = tuple(dict(item) for item in items if isinstance(item, Mapping))
                if kept:
                    details = kept
                    reasoning += "".join(t for item in kept if isinstance(t := item.get("text"), str))
        text = ""
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._splitter is None:
                text = content
            else:
                text, in_tags = self._splitter.feed(content)
                reasoning += in_tags
        return text, reasoning, details

    def flush(self) -> Extracted:
        """Deliver what was held back as a possible partial tag; call once at end of stream."""
        if self._splitter is None:
            return "", "", None
        text, reasoning = self._splitter.flush()
        return text, reasoning, None


def extractor_for(preset: Preset) -> DeltaExtractor:
    """A fresh extractor for ``preset``'s reasoning channels (use ``preset.for_model(model)``)."""
    tags = preset.reasoning.think_tags
    return DeltaExtractor(preset.reasoning.channels, open_tag=tags.open, close_tag=tags.close)
