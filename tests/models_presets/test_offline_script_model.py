"""The offline ``script`` model: replays YAML turns, checks ``expect``, and fails clearly when
the script runs out."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloom.errors import ConfigError
from agentloom.models.offline import ScriptError, ScriptModel, load_script
from agentloom.models.types import Message, ModelRequest, ToolCall, Usage

from .offline_support import collect

SCRIPT = """\
format: 1
model: scripted-1
turns:
  - expect: {role: user, contains: notes}
    reasoning: I should read the notes first.
    text: Let me look.
    tool_calls:
      - name: fs_read
        arguments: {path: notes.txt}
      - name: exec
        id: call_custom
        arguments: '{"cmd": "ls",'
  - expect:
      role: tool
      contains: [hello]
      not_contains: error
    text: The notes say hello.
    usage: {input_tokens: 50, output_tokens: 7}
"""


@pytest.fixture
def script_path(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def first_request() -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content="summarise notes.txt"),))


def second_request(result: str) -> ModelRequest:
    calls = (
        ToolCall(id="call_1_1", name="fs_read", arguments='{"path": "notes.txt"}'),
        ToolCall(id="call_custom", name="exec", arguments='{"cmd": "ls",', index=1),
    )
    return ModelRequest(
        messages=(
            *first_request().messages,
            Message(role="assistant", content="Let me look.", tool_calls=calls),
            Message(role="tool", tool_call_id="call_1_1", content="exec failed"),
            Message(role="tool", tool_call_id="call_custom", content=result),
        )
    )


async def test_turns_replay_in_order_with_reasoning_text_and_tool_calls(script_path: Path) -> None:
    model = ScriptModel.from_file(script_path, chunk_size=4)
    first = await collect(model, first_request())
    assert (first.reasoning, first.text) == ("I should read the notes first.", "Let me look.")
    assert first.calls == {
        0: {"id": "call_1_1", "name": "fs_read", "arguments": '{"path": "notes.txt"}'},
        1: {"id": "call_custom", "name": "exec", "arguments": '{"cmd": "ls",'},  # raw text, verbatim
    }
    assert first.finish is not None and (first.finish.reason, first.finish.model) == (
        "tool_calls",
        "scripted-1",
    )

    second = await collect(model, second_request("hello there"))
    assert second.text == "The notes say hello."
    assert second.calls == {}
    assert second.usage == Usage(input_tokens=50, output_tokens=7)
    assert second.finish is not None and second.finish.reason == "stop"


async def test_a_retried_call_replays_the_same_turn(script_path: Path) -> None:
    model = ScriptModel.from_file(script_path)
    assert model.respond(first_request()) == model.respond(first_request())
    assert ScriptModel.from_file(script_path).respond(first_request()) == model.respond(first_request())


async def test_a_failed_expectation_names_the_turn_and_what_was_expected(script_path: Path) -> None:
    model = ScriptModel.from_file(script_path)
    with pytest.raises(ScriptError) as caught:
        await collect(model, second_request("hello, an error happened"))
    assert caught.value.code == "SCRIPT_EXPECTATION_FAILED"
    assert "turn 2: expected the last message not to contain 'error'" in str(caught.value)
    with pytest.raises(ScriptError, match=r"turn 1: expected the last message to contain 'notes'"):
        model.respond(ModelRequest(messages=(Message(role="user", content="hi"),)))


async def test_running_out_of_turns_is_a_clear_error_before_any_event(script_path: Path) -> None:
    model = ScriptModel.from_file(script_path)
    request = ModelRequest(
        messages=(
            *second_request("hello").messages,
            Message(role="assistant", content="The notes say hello."),
            Message(role="user", content="and now?"),
        )
    )
    events = []
    with pytest.raises(ScriptError) as caught:
        async for event in model.stream_once(request, None):
            events.append(event)
    assert events == []
    assert caught.value.code == "SCRIPT_EXHAUSTED"
    assert str(caught.value) == (
        f"script {str(script_path)!r} is exhausted: "
        "the model was called for turn 3 but the script has 2 turn(s)"
    )
    assert caught.value.error.category == "validation"


@pytest.mark.parametrize(
    ("text", "key", "detail"),
    [
        ("turns: []\n", "turns", "at least 1"),
        ("turns:\n  - reasoning: only thinking\n", "turns[0]", "'text' or 'tool_calls'"),
        ("turns:\n  - tool_calls: [{arguments: {}}]\n", "turns[0].tool_calls[0].name", "Field required"),
        ("turns:\n  - text: hi\n    expect: {role: robot}\n", "turns[0].expect.role", "Input should be"),
        ("turns:\n  - text: hi\n    sleep: 3\n", "turns[0].sleep", "Extra inputs"),
        ("format: 2\nturns:\n  - text: hi\n", "format", "Input should be 1"),
    ],
)
def test_a_broken_script_names_the_file_and_the_key(tmp_path: Path, text: str, key: str, detail: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_script(path)
    assert f"script {str(path)!r}: key {key!r}" in str(caught.value)
    assert detail in str(caught.value)


def test_a_script_that_is_not_yaml_or_absent_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("turns: [", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_script(path)
    with pytest.raises(ConfigError, match="cannot be read"):
        load_script(tmp_path / "absent.yaml")


async def test_discover_reports_the_scripts_model_and_window(script_path: Path) -> None:
    (descriptor,) = await ScriptModel.from_file(script_path).discover(None)
    assert (descriptor.provider_model_id, descriptor.window, descriptor.source) == (
        "scripted-1",
        128_000,
        "provider",
    )


def test_i11_10_an_alias_in_a_script_file_is_refused_before_it_can_expand(tmp_path: Path) -> None:
    # a "billion laughs": nine levels of ten aliases each would be 10^9 items once used
    lines = ["l0: &l0 {text: x}"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\nturns: *l9\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_script(path)
    assert caught.value.code == "SCRIPT_INVALID"
    assert "aliases (*l0) are not allowed in a script file" in str(caught.value)
