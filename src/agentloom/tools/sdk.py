"""The developer Tool SDK (000 §8): strict inputs, the tool base class and its handler.

A developer writes a ``StrictInput`` model and a ``Tool`` subclass; ``ToolHandler``
adapts one tool instance to the pipeline's ``CapabilityHandler`` port. The handler
parses arguments (a bad argument never reaches ``execute``), runs the tool once,
wraps plain return values and normalises exceptions, so a network error can never
come back as a success. It does not retry, enforce deadlines or record anything:
that is the pipeline's job.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
import typing
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.errors import AgentLoomError, CatalogError, OperationError
from agentloom.results import ToolResult
from agentloom.tools.normalise import error_from_exception, result_from_exception
from agentloom.workspace.resolver import ScopedFiles, WorkspaceResolver

__all__ = [
    "StrictInput",
    "Tool",
    "ToolContext",
    "ToolDescription",
    "ToolHandler",
    "ToolOutput",
]

MAX_LISTED_FIELD_ERRORS = 10
_MAX_LOC_CHARS = 80

ToolOutput: TypeAlias = ToolResult | str | int | float | dict[str, Any] | list[Any] | BaseModel | None
"""What ``execute`` may return; a number or bool is delivered as ``{"result": value}``."""


class StrictInput(BaseModel):
    """Base for tool arguments: unknown fields are rejected, parsed values are frozen.

    Its JSON schema carries ``additionalProperties: false``; nest ``StrictInput``
    models (not plain ``BaseModel``) so nested objects reject extras as well.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


InputT = TypeVar("InputT", bound=StrictInput)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a running tool may know about its call: identity, attempt and time left.

    Built from the pipeline's ``AttemptContext``; it holds no store, database or
    host path. Pass ``operation_id`` to a remote system as an idempotency key: it
    is stable across the retries of one logical call.
    """

    operation_id: str
    attempt_no: int
    run_id: str
    deadline: float
    """Wall-clock epoch seconds (``time.time()`` scale) after which the run is over."""
    # Private: ``cancelled`` reads the attempt's live cancel state through it.
    _attempt: AttemptContext = field(repr=False, compare=False)
    _files: ScopedFiles | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_attempt(cls, context: AttemptContext, files: ScopedFiles | None = None) -> ToolContext:
        return cls(
            operation_id=context.operation_id,
            attempt_no=context.attempt_no,
            run_id=context.run_id,
            deadline=context.deadline,
            _attempt=context,
            _files=files,
        )

    @property
    def files(self) -> ScopedFiles:
        """The file service bound to this call's workspace scope (read, write, edit, …).

        It takes no owner, session, scope or host path: only paths inside the workspace.

        Raises:
            WorkspaceError: ``WORKSPACE_UNAVAILABLE`` when the run has no workspace.
        """
        if self._files is None:
            from agentloom.workspace.paths import WorkspaceError

            raise WorkspaceError("WORKSPACE_UNAVAILABLE",
                                 "this call has no workspace: the run was started without one")
        return self._files

    @property
    def cancelled(self) -> bool:
        """True once the attempt was asked to stop; a long tool should check and return."""
        return self._attempt.cancelled

    def remaining(self) -> float:
        """Seconds left before ``deadline`` (never negative)."""
        return max(0.0, self.deadline - time.time())


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDescription:
    """What the catalog needs to publish a tool: its name, description and input schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Tool(ABC, Generic[InputT]):
    """Base class for a developer tool.

    Set ``name``, ``description`` and ``input_type`` (inferred from ``Tool[X]``
    when omitted) and implement ``execute``. Return a ``ToolResult`` for full
    control, or a JSON value (``str``, number, ``bool``, ``dict``, ``list``, ``None``, a
    pydantic model) for a success; raise to fail (see ``agentloom.tools.normalise`` for how
    exceptions are classified).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    # ClassVar cannot hold a type variable, so the declared type is the bound.
    input_type: ClassVar[type[StrictInput]]
    rerunnable: ClassVar[bool] = False
    """True only for a tool with no effect outside its result (a pure computation, a read):
    calling it again is harmless. Its call is then committed once, with its result, instead
    of an intent first — a crash before that commit leaves no trace and the call is made
    again (as a model generation is). Never set it on a tool that writes, sends or spends."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _check_execute(cls)  # a sync execute is refused here, at the class statement
        if "input_type" not in cls.__dict__:
            inferred = _input_type_from_bases(cls)
            if inferred is not None:
                cls.input_type = inferred

    @abstractmethod
    async def execute(self, args: InputT, ctx: ToolContext) -> ToolOutput:
        """Run the tool once with validated ``args``."""

    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        """The JSON schema of ``input_type``, closed and self-contained.

        Every object schema that lists properties gets ``additionalProperties:
        false`` unless it declares its own (a ``dict[str, X]`` field keeps its value
        schema); ``$ref`` stays inside ``$defs``; pydantic's ``title`` noise is dropped.

        Made once per class and ``input_type`` (the build asks for it per agent that lists the
        tool, issue #34); each call returns a fresh copy.

        Raises:
            CatalogError: the tool is incompletely defined or its schema points outside itself.
        """
        _check_definition(cls)
        made = _INPUT_SCHEMAS.get(cls)
        if made is None or made[0] is not cls.input_type or made[1] != cls.name:
            schema = copy.deepcopy(cls.input_type.model_json_schema())
            _close_schema(schema, tool=cls.name)
            made = (cls.input_type, cls.name, schema)
            _INPUT_SCHEMAS[cls] = made
        return copy.deepcopy(made[2])

    @classmethod
    def describe(cls) -> ToolDescription:
        """Name, description and input schema, for publication in a catalog."""
        _check_definition(cls)
        return ToolDescription(
            name=cls.name, description=cls.description, input_schema=cls.input_schema()
        )


_INPUT_SCHEMAS: weakref.WeakKeyDictionary[type, tuple[type, str, dict[str, Any]]] = \
    weakref.WeakKeyDictionary()
"""``Tool.input_schema`` by tool class: the ``input_type`` and ``name`` it was made from, and
the closed schema."""


class ToolHandler:
    """Runs one ``Tool`` instance as a pipeline ``CapabilityHandler``: one call, one attempt.
    It is ``rerunnable`` exactly when its tool declares so (``Tool.rerunnable``)."""

    rerunnable = False
    recoverable = False

    def __init__(self, tool: Tool[Any], *, files: WorkspaceResolver | None = None) -> None:
        _check_definition(type(tool))
        self._tool = tool
        self._files = files
        self.rerunnable = bool(type(tool).rerunnable)  # the tool says it has no side effect

    @property
    def tool(self) -> Tool[Any]:
        return self._tool

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        tool = self._tool
        try:
            args = tool.input_type.model_validate(dict(request.arguments))
        except ValidationError as exc:
            return ToolResult(status="failed", error=_invalid_arguments(tool.name, exc))
        except Exception as exc:
            # A validator that crashed (not a ValidationError): still nothing ran.
            error = error_from_exception(exc, phase="validate")
            return ToolResult(status="failed", error=replace(error, external_outcome="not_started"))

        files = None
        if self._files is not None and context.workspace_scope_id is not None:
            if self.rerunnable:  # no side effect: its scope is checked when it first uses it
                files = self._files.files_checked_on_use(context)
            else:
                try:
                    files = await self._files.files_for(context)
                except AgentLoomError as exc:  # no usable workspace: the tool never ran
                    return ToolResult(status="failed", error=replace(
                        exc.error, external_outcome="not_started"))
        ctx = ToolContext.from_attempt(context, files)
        try:
            output = await tool.execute(args, ctx)
        except Exception as exc:  # CancelledError is a BaseException and propagates.
            return result_from_exception(exc)
        return _wrap_output(tool.name, output)


def _invalid_arguments(tool: str, exc: ValidationError) -> OperationError:
    # Field paths and pydantic's short reasons only: never the input values, which
    # may be secrets or huge.
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    fields = [_loc(e["loc"]) for e in errors]
    listed = [f"{_loc(e['loc'])}: {e['msg']}" for e in errors[:MAX_LISTED_FIELD_ERRORS]]
    if len(errors) > MAX_LISTED_FIELD_ERRORS:
        listed.append(f"… and {len(errors) - MAX_LISTED_FIELD_ERRORS} more")
    return OperationError(
        code="INVALID_ARGUMENTS",
        category="validation",
        message=f"invalid arguments for tool {tool!r}: " + "; ".join(listed),
        phase="validate",
        external_outcome="not_started",
        details={"fields": fields},
    )


def _loc(loc: tuple[int | str, ...]) -> str:
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    text = text.lstrip(".") or "(arguments)"
    return text if len(text) <= _MAX_LOC_CHARS else text[: _MAX_LOC_CHARS - 1] + "…"


def _wrap_output(tool: str, output: object) -> ToolResult:
    """A tool's return value as a result (docs/tools.md "Return values"): a ``ToolResult``
    unchanged, ``str`` a text block, ``None`` no content, a ``dict`` or ``list`` a JSON block,
    a number or boolean ``{"result": value}``, a pydantic model its JSON dump; anything else,
    or a value holding what JSON cannot (a ``set``, ``bytes``, NaN, …), ``INVALID_TOOL_OUTPUT``."""
    if isinstance(output, ToolResult):
        return output
    if output is None or isinstance(output, str):
        return ToolResult.success(output)
    kind = type(output).__name__
    value: object = output
    if isinstance(output, BaseModel):
        try:
            value = output.model_dump(mode="json")
        except Exception as exc:  # a field pydantic cannot serialise
            return _invalid_output(tool, kind, f"it cannot be dumped as JSON ({_one_line(exc)})")
    elif isinstance(output, tuple):
        value = list(output)
    elif isinstance(output, bool | int | float):
        value = {"result": output}
    elif not isinstance(output, dict | list):
        return _invalid_output(tool, kind, "it is not JSON; return a str, a number, a bool, a "
                               "dict, a list, None, a pydantic model or a ToolResult")
    try:
        # Results are stored durably as JSON: refuse what cannot be stored now,
        # not when the store trips over it later.
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return _invalid_output(tool, kind, f"it holds a value that is not JSON ({_one_line(exc)})")
    return ToolResult.success(value)


def _invalid_output(tool: str, kind: str, why: str) -> ToolResult:
    # The tool ran to its end and returned: whatever it did is done and known to have ended,
    # so the call failed (``known``), never ``unknown`` (it did not vanish mid-way).
    return ToolResult(status="failed", error=OperationError(
        code="INVALID_TOOL_OUTPUT",
        category="protocol",
        message=f"tool {tool!r} ran but returned {kind}, which cannot be delivered: {why}",
        phase="deliver",
        external_outcome="known",
        details={"tool": tool, "type": kind},
    ))


def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def _input_type_from_bases(cls: type) -> type[StrictInput] | None:
    for base in getattr(cls, "__orig_bases__", ()):
        if typing.get_origin(base) is Tool:
            (arg,) = typing.get_args(base)
            if isinstance(arg, type) and issubclass(arg, StrictInput):
                return arg
    return None


def _check_definition(cls: type[Tool[Any]]) -> None:
    where = f"tool class {cls.__qualname__}"
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise CatalogError(f"{where} needs a non-empty `name = ...` class attribute")
    if not isinstance(getattr(cls, "description", None), str):
        raise CatalogError(f"{where} ({name!r}) needs a `description = ...` class attribute")
    input_type = getattr(cls, "input_type", None)
    if not (isinstance(input_type, type) and issubclass(input_type, StrictInput)):
        raise CatalogError(
            f"{where} ({name!r}) needs `input_type = <a StrictInput subclass>`, got {input_type!r}"
        )
    _check_execute(cls)


def _check_execute(cls: type) -> None:
    """``execute`` must be ``async def`` (or wrap one): a plain function would only fail
    when a model first calls the tool."""
    execute = getattr(cls, "execute", None)
    if execute is None or getattr(execute, "__isabstractmethod__", False):
        return
    if not (inspect.iscoroutinefunction(execute) or inspect.iscoroutinefunction(inspect.unwrap(execute))):
        raise CatalogError(
            f"tool class {cls.__qualname__}: execute must be a coroutine function "
            "(`async def execute(self, args, ctx)`), not a plain function"
        )


# JSON-schema keywords whose value is a map of name -> subschema, one subschema, or a list.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def _close_schema(schema: object, *, tool: str) -> None:
    """Close object schemas, drop titles and refuse non-local refs, in place.

    Only schema positions are visited, so data such as ``default`` or ``enum``
    values and a property that happens to be called ``title`` are left alone.
    """
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        raise CatalogError(
            f"tool {tool!r}: input schema references {ref!r}; only local refs "
            "(#/$defs/...) are allowed, remote schemas are never fetched",
            code="SCHEMA_REMOTE_REF",
        )
    if isinstance(schema.get("title"), str):
        del schema["title"]
    if "properties" in schema and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    for key in _SCHEMA_MAPS:
        sub = schema.get(key)
        if isinstance(sub, dict):
            for value in sub.values():
                _close_schema(value, tool=tool)
    for key in _SCHEMA_ONE:
        _close_schema(schema.get(key), tool=tool)
    for key in _SCHEMA_LISTS:
        sub = schema.get(key)
        if isinstance(sub, list):
            for value in sub:
                _close_schema(value, tool=tool)
    items = schema.get("items")
    if isinstance(items, list):  # draft-07 tuple form
        for value in items:
            _close_schema(value, tool=tool)
