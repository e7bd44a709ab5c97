"""``ScriptModel``, the offline model ``script``: it replays the turns of a YAML script
(format 1, docs/models.md), choosing the turn by the number of assistant messages already in
the request, and checks each turn's ``expect`` before answering.

Owns: the script file's shape, reading it (``load_script``, ``parse_script``), replaying it
and ``ScriptError``. Does not own: streaming the answer (``_common``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentloom.errors import AgentLoomError, ConfigError, ErrorCategory
from agentloom.models.offline._common import (
    OFFLINE_OUTPUT_LIMIT,
    OFFLINE_WINDOW,
    estimated_usage,
    excerpt,
    offline_descriptor,
    stream_response,
)
from agentloom.models.types import (
    STRUCTURED_FORMATS,
    Message,
    ModelDescriptor,
    ModelRequest,
    ModelResponse,
    ProviderEvent,
    Role,
    StructuredFormat,
    ToolCall,
    Usage,
)
from agentloom.yamlfile import load_yaml

__all__ = [
    "Script",
    "ScriptError",
    "ScriptExpect",
    "ScriptModel",
    "ScriptToolCall",
    "ScriptTurn",
    "load_script",
    "parse_script",
]


class ScriptError(AgentLoomError):
    """A ``ScriptModel`` call the script cannot answer (exhausted, or an ``expect`` failed)."""

    default_code = "SCRIPT_MODEL_FAILED"
    default_category: ErrorCategory = "validation"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptToolCall(_Strict):
    """One scripted tool call; ``arguments`` as an object, or a raw string sent verbatim."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class ScriptExpect(_Strict):
    """Checks on the request's last message before the turn is replayed."""

    role: Role | None = None
    name: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()

    @field_validator("contains", "not_contains", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


UsageField = Literal["input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "total_tokens"]


class ScriptTurn(_Strict):
    """One scripted answer of the offline ``test`` model: optional ``expect`` checks on the
    request, then reasoning, text, tool calls, finish reason and usage to return."""

    expect: ScriptExpect | None = None
    reasoning: str | None = None
    text: str = ""
    tool_calls: tuple[ScriptToolCall, ...] = ()
    finish_reason: str | None = None
    usage: dict[UsageField, int] | None = None

    @model_validator(mode="after")
    def _says_something(self) -> ScriptTurn:
        if not self.text and not self.tool_calls:
            raise ValueError("a turn needs 'text' or 'tool_calls'")
        return self


class Script(_Strict):
    """A replay script (format 1, see docs/models.md)."""

    format: Literal[1] = 1
    model: str = "script"
    window: int = Field(default=OFFLINE_WINDOW, ge=1)
    output_limit: int = Field(default=OFFLINE_OUTPUT_LIMIT, ge=1)
    turns: tuple[ScriptTurn, ...] = Field(min_length=1)


def parse_script(data: Any, *, source: str) -> Script:
    """Validate parsed script data.

    Raises:
        ConfigError: the data is invalid; the message names ``source`` and the offending key.
    """
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in first["loc"]).replace(".[", "[")
        raise ConfigError(
            f"script {source!r}: key {key or '(top level)'!r}: {first['msg']}", code="SCRIPT_INVALID"
        ) from None


def load_script(path: str | Path) -> Script:
    """Read and validate a script file.

    Raises:
        ConfigError: the file is unreadable, not YAML, or invalid (file and key named).
    """
    p = Path(path)
    try:
        # a script is plain data: no aliases (a "billion laughs"), no key written twice
        data = load_yaml(p.read_text(encoding="utf-8"), aliases=False, what="a script file")
    except OSError as exc:
        raise ConfigError(
            f"script {str(p)!r}: cannot be read ({exc.strerror})", code="SCRIPT_INVALID"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"script {str(p)!r}: not valid YAML: {exc}", code="SCRIPT_INVALID") from None
    return parse_script(data, source=str(p))


@dataclass(frozen=True, slots=True)
class _Checked:
    index: int
    turn: ScriptTurn


class ScriptModel:
    """The offline model ``script``: replays ``script.turns`` in order (whatever format a
    request asks for: the script says what the answer is)."""

    output_formats: frozenset[StructuredFormat] = STRUCTURED_FORMATS

    def __init__(self, script: Script, *, source: str = "<script>", chunk_size: int = 16) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.script = script
        self.source = source
        self.model = script.model
        self.chunk_size = chunk_size

    @classmethod
    def from_file(cls, path: str | Path, *, chunk_size: int = 16) -> ScriptModel:
        return cls(load_script(path), source=str(path), chunk_size=chunk_size)

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The scripted response for ``request``.

        Raises:
            ScriptError: the script has no turn left, or the turn's ``expect`` fails.
        """
        checked = self._turn(request)
        turn, n = checked.turn, checked.index + 1
        calls = tuple(
            ToolCall(
                id=call.id or f"call_{n}_{j + 1}",
                name=call.name,
                arguments=call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
                index=j,
            )
            for j, call in enumerate(turn.tool_calls)
        )
        usage = (
            Usage(**turn.usage) if turn.usage
            else estimated_usage(request, turn.text, *(c.arguments for c in calls))
        )
        return ModelResponse(
            text=turn.text,
            reasoning=turn.reasoning,
            tool_calls=calls,
            finish_reason=turn.finish_reason or ("tool_calls" if calls else "stop"),
            usage=usage,
            model=self.model,
            response_id=f"{self.model}-turn-{n}",
        )

    def _turn(self, request: ModelRequest) -> _Checked:
        index = sum(1 for m in request.messages if m.role == "assistant")
        turns = self.script.turns
        if index >= len(turns):
            raise ScriptError(
                f"script {self.source!r} is exhausted: the model was called for turn {index + 1} "
                f"but the script has {len(turns)} turn(s)",
                code="SCRIPT_EXHAUSTED",
            )
        turn = turns[index]
        if turn.expect is not None:
            problem = _unmet(turn.expect, request.messages[-1] if request.messages else None)
            if problem:
                raise ScriptError(
                    f"script {self.source!r} turn {index + 1}: expected {problem}",
                    code="SCRIPT_EXPECTATION_FAILED",
                )
        return _Checked(index, turn)

    async def stream_once(self, request: ModelRequest, attempt: Any) -> AsyncIterator[ProviderEvent]:
        response = self.respond(request)
        async for event in stream_response(response, self.chunk_size):
            yield event

    async def discover(self, connection: Any = None) -> list[ModelDescriptor]:
        return [offline_descriptor(self.model, self.script.window, self.script.output_limit)]

    async def aclose(self) -> None:
        """Nothing to release: no connection was ever opened."""


def _unmet(expect: ScriptExpect, last: Message | None) -> str | None:
    if last is None:
        return "a last message, but the request has none"
    shown = f"(last message: {last.role} {excerpt(last.content)!r})"
    if expect.role is not None and last.role != expect.role:
        return f"the last message to be a {expect.role} message {shown}"
    if expect.name is not None and last.name != expect.name:
        return f"the last message to come from {expect.name!r}, not {last.name!r} {shown}"
    content = last.content or ""
    for needle in expect.contains:
        if needle not in content:
            return f"the last message to contain {needle!r} {shown}"
    for needle in expect.not_contains:
        if needle in content:
            return f"the last message not to contain {needle!r} {shown}"
    return None
