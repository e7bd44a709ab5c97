"""Structured output: the final answer as a JSON value that follows a schema (#12 point 7).

::

    AgentSpec(output=OutputSpec(schema={...}))       config: agents.<name>.output.schema
    AgentSpec(output_type=Answer)                     a pydantic model: its schema and checks
        │ every model request of the agent asks for the format its model can take:
        │   json_schema → response_format (Chat) / text.format (Responses) with the schema
        │   json_object → JSON mode, the schema in the system message
        │   neither     → the schema in the system message only
        ▼
    final candidate ─► JSON? meets the schema? ─► Parsed(value) ─► RunResult.output
        │ no: the model call's event says ``answer_rejected`` (the live view: "answer
        │     rejected: <reason>"); one corrective user turn naming the errors
        ▼ no again: the invocation fails with OUTPUT_INVALID (an answer that is not JSON is
                    quoted, its first 200 characters)

Owns: the output spec, the format a model is asked for, checking an answer, the corrective
message and the final error. Does not own: the turns (``loop``), the wire forms (presets and
adapters), where the value is stored (``runtime``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from agentloom.canonical import readable_json
from agentloom.catalog import ArgumentValidator, compile_schema, freeze_json, thaw_json
from agentloom.errors import CatalogError, OperationError
from agentloom.models.ports import Connection
from agentloom.models.types import OutputFormat
from agentloom.text import storable

__all__ = ["OUTPUT_INVALID", "OutputSpec", "Parsed", "output_formats"]

OUTPUT_INVALID = "OUTPUT_INVALID"
ERRORS_SHOWN = 5  # validation errors named in a correction or an error
ANSWER_SHOWN = 200  # characters of an answer that is not JSON quoted in its error
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# one Markdown code fence around the whole answer (```json … ```), which models often add
_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```\Z", re.DOTALL)


def _compiled(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` checked as JSON Schema 2020-12, its local references bundled. It is kept as
    declared (objects are not closed): it is the caller's contract for the answer.

    Raises:
        ValueError: not a valid JSON Schema 2020-12, another dialect, or a reference that does
            not resolve inside it (the message says where).
    """
    try:
        return compile_schema(schema, origin="mcp")  # "mcp": bundled, never changed
    except CatalogError as exc:
        raise ValueError(exc.error.message.removeprefix("schema ")) from None


@dataclass(frozen=True, slots=True)
class Parsed:
    """A final answer that is JSON and meets the output schema; ``value`` is that JSON."""

    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputSpec:
    """What the final answer must be: a JSON value valid against ``schema``.

    ``name`` labels the format on the wire (``response_format.json_schema.name``; letters,
    digits, ``_`` and ``-``, at most 64). ``strict`` is sent with it (OpenAI's strict mode,
    which needs every object closed and every property required). ``output_type``, when
    set, is the pydantic model the schema came from: an answer must validate against it too.

    Raises:
        ValueError: on construction, an invalid schema or name.
    """

    schema: Mapping[str, Any]
    name: str = "output"
    strict: bool = False
    output_type: type[BaseModel] | None = None
    _validator: ArgumentValidator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"output name {self.name!r} must be 1 to 64 letters, digits, '_' "
                             "or '-'")
        compiled = _compiled(self.schema)
        object.__setattr__(self, "schema", freeze_json(compiled))
        object.__setattr__(self, "_validator", ArgumentValidator(compiled))

    @classmethod
    def of_type(cls, output_type: type[BaseModel], *, strict: bool = False) -> OutputSpec:
        """The spec of a pydantic model: its JSON Schema, named after the class."""
        if not (isinstance(output_type, type) and issubclass(output_type, BaseModel)):
            raise TypeError(f"output_type must be a pydantic BaseModel subclass, not "
                            f"{output_type!r}")
        name = re.sub(r"[^A-Za-z0-9_-]", "_", output_type.__name__)[:64] or "output"
        return cls(schema=output_type.model_json_schema(), name=name, strict=strict,
                   output_type=output_type)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (for the release digest)."""
        return {"name": self.name, "schema": thaw_json(self.schema), "strict": self.strict}

    # -- asking ------------------------------------------------------------------------------
    def request_format(self, formats: frozenset[str]) -> OutputFormat:
        """The ``ModelRequest.output_format`` for a model that takes ``formats``."""
        if "json_schema" in formats:
            return {"name": self.name, "schema": thaw_json(self.schema), "strict": self.strict}
        return "json_object" if "json_object" in formats else "text"

    def instructions(self, formats: frozenset[str]) -> str:
        """What the system message says about the answer; the schema itself when the request
        cannot carry it."""
        text = ("Give your final answer as one JSON value and nothing else: no prose, no "
                "Markdown.")
        if "json_schema" in formats:
            return text
        schema = readable_json(thaw_json(self.schema))
        return f"{text} It must be valid against this JSON Schema:\n{schema}"

    # -- checking ----------------------------------------------------------------------------
    def check(self, text: str) -> Parsed | list[str]:
        """``text`` parsed and validated, or what is wrong with it (``"<json path>: …"``)."""
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced is not None:
            body = fenced.group(1).strip()
        try:
            value, _ = storable(json.loads(body))
        except ValueError as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            answer = text.strip()
            shown = answer if len(answer) <= ANSWER_SHOWN else answer[:ANSWER_SHOWN] + "…"
            return [f"the answer is not JSON ({why}): {shown!r}"]
        errors = self._validator.errors(value)
        if not errors and self.output_type is not None:
            try:
                self.output_type.model_validate(value)
            except ValidationError as exc:
                errors = [f"{_path(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
        return errors if errors else Parsed(value)

    def rejection(self, text: str) -> str | None:
        """Why ``text`` is rejected as the final answer (its errors, listed as ``failure``
        lists them), or None when it is accepted; the live view shows it."""
        checked = self.check(text)
        return None if isinstance(checked, Parsed) else _listed(checked)

    def correction(self, errors: list[str]) -> str:
        """The corrective user message after an answer that does not validate."""
        return ("[runtime] Your final answer was rejected: it does not match the required "
                f"output format: {_listed(errors)}. Answer again with only the corrected JSON "
                "value.")

    def failure(self, agent: str, errors: list[str], *, corrected: bool = True) -> OperationError:
        """The error ending an invocation whose answer still does not validate (``corrected``:
        after its corrective turn; else no step was left for one)."""
        when = "after one corrective turn" if corrected else \
            "and no step is left for a corrective turn (limits.max_steps)"
        return OperationError(
            code=OUTPUT_INVALID, category="validation",
            message=f"the final answer of agent {agent!r} does not match its output schema "
            f"({self.name}) {when}: {_listed(errors)}",
            details={"errors": errors[:ERRORS_SHOWN]})


def _path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path, as ``jsonschema`` writes them (``$.a[0]``)."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def _listed(errors: list[str]) -> str:
    shown = "; ".join(errors[:ERRORS_SHOWN])
    more = len(errors) - ERRORS_SHOWN
    return f"{shown} (and {more} more)" if more > 0 else shown


def output_formats(model: object) -> frozenset[str]:
    """The structured formats ``model`` (an agent's ``Connection`` or adapter) takes: the
    connection's (its preset's), else what the adapter states; none when it states nothing."""
    connection = model if isinstance(model, Connection) else getattr(model, "connection", None)
    source = connection if isinstance(connection, Connection) else model
    return frozenset(getattr(source, "output_formats", ()))
