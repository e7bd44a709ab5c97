"""Issue 36, point 8 through the Python API: ``RunHandle.events(deltas=True)`` gives the model's
text as ``model.delta`` events while the model writes; ``events()`` never does; a reader that
falls ``DELTA_BACKLOG`` events behind misses pieces — counted in the next piece it gets — and
the run and its record are unchanged.

Real parts: a ``Runtime`` on a SQLite file and the offline ``script`` model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import agentloom
from agentloom.agent.events import RunEvent
from agentloom.agent.handles import DELTA_BACKLOG
from agentloom.models.offline import ScriptModel, parse_script

ANSWER = "Paris is sunny today, with a light wind from the west."


def _runtime(tmp_path: Path, turns: list[dict[str, Any]], *, chunk: int,
             tools: tuple[Any, ...] = ()) -> agentloom.Runtime:
    model = ScriptModel(parse_script({"turns": turns}, source="test"), chunk_size=chunk)
    return agentloom.Runtime([agentloom.AgentSpec(name="main", model=model, instructions="x",
                                                  tools=tools)],
                             store=f"sqlite:///{tmp_path / 'store.db'}", sandbox_backend="none",
                             workspace_root=tmp_path / "ws")


async def _all(events: Any) -> list[RunEvent]:
    return [event async for event in events]


async def test_i36_8_events_with_deltas_give_the_answer_in_pieces_and_plain_events_none(
    tmp_path: Path,
) -> None:
    runtime = _runtime(tmp_path, [{"text": ANSWER}], chunk=8)
    try:
        handle = await runtime.start("weather?")
        with_deltas, plain = handle.events(deltas=True), handle.events()
        watched, unwatched = await asyncio.gather(_all(with_deltas), _all(plain))
        result = await handle.result()
    finally:
        await runtime.aclose()

    types = [e.type for e in watched]
    deltas = [e.data for e in watched if e.type == "model.delta"]
    assert len(deltas) > 1 and "".join(d["text"] for d in deltas) == ANSWER == result.output
    assert {(d["kind"], d["role"], d["attempt"], d["dropped"]) for d in deltas} == \
        {("text", "main", 1, 0)}
    first, last = types.index("model.delta"), len(types) - 1 - types[::-1].index("model.delta")
    assert types.index("model.call.started") < first and last < types.index("model.call.completed")
    assert [e.type for e in unwatched] == [t for t in types if t != "model.delta"]


async def test_i36_8_a_reader_that_falls_behind_misses_pieces_counted_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    long_text = "x" * (DELTA_BACKLOG + 100)  # one piece a character: more than the backlog
    entered, release = asyncio.Event(), asyncio.Event()

    @agentloom.tool
    async def gate() -> dict[str, Any]:
        """Wait until the test lets the run go on."""
        entered.set()
        await release.wait()
        return {"ok": True}

    runtime = _runtime(tmp_path, [{"text": long_text, "tool_calls": [{"name": "gate"}]},
                                  {"text": "done"}], chunk=1, tools=(gate,))
    try:
        handle = await runtime.start("go")
        events = handle.events(deltas=True).__aiter__()
        await asyncio.wait_for(entered.wait(), 60)  # turn 1 written while nobody read
        first_turn: list[RunEvent] = []
        while not first_turn or first_turn[-1].type != "tool.call.started":
            first_turn.append(await asyncio.wait_for(events.__anext__(), 30))
        release.set()
        rest = [event async for event in events]
        result = await handle.result()
    finally:
        await runtime.aclose()

    kept = [e.data["text"] for e in first_turn if e.type == "model.delta"]
    before = [e for e in first_turn[:first_turn.index(next(
        e for e in first_turn if e.type == "model.delta"))]]
    assert len(kept) == DELTA_BACKLOG - len(before)  # the backlog filled, the rest was missed
    (resumed, *_) = [e.data for e in rest if e.type == "model.delta"]
    assert resumed["dropped"] == len(long_text) - len(kept)
    assert "model.call.completed" in [e.type for e in first_turn]  # other events never dropped
    assert (result.status, result.output) == ("succeeded", "done")
