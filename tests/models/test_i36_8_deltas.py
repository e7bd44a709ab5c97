"""Issue 36, point 8 in the model layer: a watched model call tells its text and reasoning pieces
as they arrive (``gateway.watch_deltas``), beside the pipeline — never stored, never seen by a
hook — and an observer that fails changes nothing of the call or its record.

Real parts: a kernel on a SQLite file, the offline ``script`` model and the scripted
OpenAI-compatible server on 127.0.0.1 (for a cut stream that is retried).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.models_gateway.support import API_KEY, Gateway, gateway, model_hook, request

from agentloom.models.gateway import watch_deltas
from agentloom.models.offline import ScriptModel, parse_script
from agentloom.models.ports import Connection, OutputPiece
from agentloom.pipeline.retry import RetryPolicy
from agentloom.testing.openai_server import (
    Disconnect,
    ScriptedOpenAIServer,
    chat_role,
    chat_text,
    chat_turn,
)

REASONING = "Weather questions want a tool; none is needed here."
TEXT = "It is sunny in Paris, twenty-two degrees, a light wind from the west."


def _script(chunk: int = 8) -> ScriptModel:
    turn = {"reasoning": REASONING, "text": TEXT}
    return ScriptModel(parse_script({"turns": [turn, turn]}, source="test"), chunk_size=chunk)


@pytest.fixture
async def make(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    made: list[Gateway] = []

    async def factory(models: dict[str, Any], **kwargs: Any) -> Gateway:
        g = await gateway(f"sqlite:///{tmp_path / f's{len(made)}.db'}", tmp_path, models,
                          **kwargs)
        made.append(g)
        return g

    yield factory
    watch_deltas(None)
    for g in made:
        await g.kernel.models.aclose()
        g.kernel.close()


def _stored(g: Gateway) -> list[tuple[Any, ...]]:
    """The call's record, without ids and times."""
    return [(op["capability_key"], op["outcome"], op["data"]["attempts"],
             json.dumps(op["data"]["result"], sort_keys=True))
            for op in g.operations()]


async def test_i36_8_a_watched_call_tells_its_text_and_reasoning_in_pieces_as_they_arrive(
    make: Callable[..., Any],
) -> None:
    pieces: list[OutputPiece] = []
    g = await make({"main": _script()})
    watch_deltas(pieces.append)

    response = await g.generate()

    assert response.text == TEXT and response.reasoning == REASONING
    texts = [p.text for p in pieces if p.kind == "text"]
    thoughts = [p.text for p in pieces if p.kind == "reasoning"]
    assert len(texts) > 1 and "".join(texts) == TEXT
    assert len(thoughts) > 1 and "".join(thoughts) == REASONING
    (op,) = g.operations()
    assert {(p.role, p.capability, p.operation_id, p.attempt) for p in pieces} == \
        {(g.ctx.role, "model.main", op["operation_id"], 1)}
    # never a record: the store has the call, its Attempt and nothing per piece
    assert len(g.attempts(op["operation_id"])) == 1
    assert "model.delta" not in g.kinds()


async def test_i36_8_a_failing_observer_is_told_once_and_the_call_and_its_record_are_unchanged(
    make: Callable[..., Any],
) -> None:
    told: list[OutputPiece] = []

    def broken(piece: OutputPiece) -> None:
        told.append(piece)
        raise RuntimeError("the terminal went away")

    unwatched = await make({"main": _script()})
    watch_deltas(None)
    expected = await unwatched.generate()
    watched = await make({"main": _script()})
    watch_deltas(broken)

    response = await watched.generate()

    assert len(told) == 1  # dropped for the rest of the Attempt after its failure
    assert response == expected
    assert _stored(watched) == _stored(unwatched)


async def test_i36_8_hooks_see_the_complete_response_once_never_a_piece(
    make: Callable[..., Any],
) -> None:
    seen: list[tuple[str, Any]] = []

    def before(event: Any) -> dict[str, Any]:
        seen.append(("before", None))
        return {"decision": "allow"}

    def after(event: Any) -> dict[str, Any]:
        (block,) = event["result"]["content"]
        seen.append(("after", block["data"]["text"]))
        return {"decision": "allow"}

    pieces: list[OutputPiece] = []
    g = await make({"main": _script()}, hooks=[model_hook("b", before),
                                                model_hook("a", after, timing="after")])
    watch_deltas(pieces.append)

    await g.generate()

    assert len(pieces) > 2
    assert [kind for kind, _ in seen] == ["before", "after"]  # one each, not one per piece
    assert seen[1][1] == TEXT  # the whole text, as the after-hook's result


async def test_i36_8_a_retried_call_numbers_its_attempts_and_records_only_the_complete_answer(
    make: Callable[..., Any],
) -> None:
    pieces: list[OutputPiece] = []
    with ScriptedOpenAIServer() as server:
        server.script([chat_role(), chat_text("Half an "), chat_text("answ"), Disconnect()])
        server.script(chat_turn(["Fresh ", "answer."]))
        g = await make({"main": Connection(base_url=server.base_url, api_key=API_KEY,
                                           model="test-model")},
                       retry=RetryPolicy(enabled=True, max_attempts=2, interval_s=0.01))
        watch_deltas(pieces.append)

        response = await g.generate(request())

    assert [(p.attempt, p.text) for p in pieces] == \
        [(1, "Half an "), (1, "answ"), (2, "Fresh "), (2, "answer.")]
    assert response.text == "Fresh answer."
    (op,) = g.operations()
    assert op["data"]["raw"]["content"][0]["data"]["text"] == "Fresh answer."
