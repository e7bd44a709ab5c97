"""Reasoning channels: reasoning_content, reasoning_details and <think> spans in content. The
incremental splitter gives the same split for any chunking of the same content."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from agentloom.models.presets import load_preset
from agentloom.models.reasoning import DeltaExtractor, ThinkTagSplitter, extractor_for, split_think_tags

OPEN, CLOSE = "<think>", "</think>"


def reference_split(content: str) -> tuple[str, str]:
    """An independent whole-string split: tokens by regex, a two-state machine over them."""
    text: list[str] = []
    reasoning: list[str] = []
    inside = False
    for token in re.split(r"(<think>|</think>)", content):
        if not inside and token == OPEN:
            inside = True
        elif inside and token == CLOSE:
            inside = False
        else:
            (reasoning if inside else text).append(token)
    return "".join(text), "".join(reasoning)


def feed_chunks(content: str, cuts: list[int]) -> tuple[str, str]:
    splitter = ThinkTagSplitter()
    text, reasoning = "", ""
    bounds = [0, *sorted({c % (len(content) + 1) for c in cuts}), len(content)]
    for start, end in itertools.pairwise(bounds):
        t, r = splitter.feed(content[start:end])
        text, reasoning = text + t, reasoning + r
    t, r = splitter.flush()
    return text + t, reasoning + r


ATOMS = st.sampled_from(
    [OPEN, CLOSE, "<", ">", "/", "<th", "ink>", "</", "think", "a", "b c", "\n", "é", "<<"]
)
CONTENT = st.lists(st.one_of(ATOMS, st.text(max_size=4)), max_size=30).map("".join)


@given(CONTENT, st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_any_chunking_splits_like_the_whole_string(content: str, cuts: list[int]) -> None:
    assert feed_chunks(content, cuts) == split_think_tags(content) == reference_split(content)


@given(CONTENT)
def test_one_character_at_a_time_splits_like_the_whole_string(content: str) -> None:
    assert feed_chunks(content, list(range(len(content)))) == reference_split(content)


def test_a_possible_partial_tag_is_held_back_until_decided_and_released_by_flush() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("Hi <th") == ("Hi ", "")
    assert splitter.feed("ought") == ("<thought", "")
    assert splitter.feed("<") == ("", "")
    assert splitter.flush() == ("<", "")


def test_an_unclosed_span_is_reasoning_to_the_end() -> None:
    assert split_think_tags("<think>still going </thi") == ("", "still going </thi")


def test_custom_tags_are_honoured() -> None:
    assert split_think_tags("<mm:think>r</mm:think>t", "<mm:think>", "</mm:think>") == ("t", "r")


def test_reasoning_content_channel_leaves_content_untouched() -> None:
    extract = extractor_for(load_preset("deepseek"))
    assert extract({"content": "<think>x</think>", "reasoning_content": "r"}) == (
        "<think>x</think>",
        "r",
        None,
    )
    assert extract({"content": None, "reasoning_content": None}) == ("", "", None)
    assert extract.flush() == ("", "", None)


def test_reasoning_details_channel_returns_the_items_and_their_text() -> None:
    extract = extractor_for(load_preset("minimax"))
    items = [
        {"type": "reasoning.text", "index": 0, "text": "a"},
        {"type": "reasoning.text", "index": 1, "text": "b"},
    ]
    text, reasoning, details = extract({"content": "", "reasoning_details": items})
    assert (text, reasoning) == ("", "ab")
    assert details == tuple(items)
    assert extract({"reasoning_details": []}) == ("", "", None)


def test_each_attempt_gets_a_fresh_stateful_extractor() -> None:
    preset = load_preset("minimax")
    first, second = extractor_for(preset), extractor_for(preset)
    assert first is not second
    assert first({"content": "<think>half"}) == ("", "half", None)
    assert second({"content": "plain"}) == ("plain", "", None)


def test_unknown_channels_are_refused() -> None:
    try:
        DeltaExtractor(["reasoning"])
    except ValueError as exc:
        assert "unknown reasoning channels" in str(exc)
    else:
        raise AssertionError("expected ValueError")
