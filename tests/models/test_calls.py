"""Tool calls that cannot run in a valid response (000 §4, issue #12 point 4): each gets its
``problem``, the error the model is told so that it can correct itself."""

from __future__ import annotations

import json

import pytest

from agentloom.models.calls import mark_calls
from agentloom.models.types import ModelResponse, ToolCall, ToolDef

WEATHER = ToolDef(name="get_weather", description="Weather of a city.", parameters={
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


@pytest.mark.parametrize(("name", "arguments", "code", "said"), [
    ("web_search", "{}", "TOOL_NOT_OFFERED", "tool 'web_search' is not offered\n"
     "The tools you can call: get_weather. Call one of them by its exact name"),
    ("get_weather", '{"city": "Par', "INVALID_ARGUMENTS",
     "the arguments of get_weather are not valid JSON: Unterminated string"),
    ("get_weather", "[1]", "INVALID_ARGUMENTS",
     "the arguments of get_weather are not a JSON object but an array\n"),
    ("get_weather", "[" * 100_000 + "]" * 100_000, "INVALID_ARGUMENTS",
     "the arguments of get_weather are nested too deeply to read\n"),
])
def test_12_4_mark_calls_gives_each_call_that_cannot_run_its_problem(
    name: str, arguments: str, code: str, said: str,
) -> None:
    good = ToolCall(id="g", name="get_weather", arguments='{"city": "Paris"}')
    response = ModelResponse(text="", tool_calls=(good, ToolCall(id="b", name=name,
                                                                arguments=arguments, index=1)))

    marked = mark_calls(response, (WEATHER,))

    assert marked.tool_calls[0] == good
    problem = marked.tool_calls[1].problem
    assert problem is not None and problem.code == code and problem.message.startswith(said)
    assert problem.external_outcome == "not_started"
    if code == "INVALID_ARGUMENTS":  # the schema to correct it with
        assert json.dumps(dict(WEATHER.parameters), sort_keys=True) in problem.message
    assert mark_calls(marked, (WEATHER,)) is marked  # marking again changes nothing
    assert mark_calls(ModelResponse(text="", tool_calls=(good,)), (WEATHER,)).tool_calls == (good,)
