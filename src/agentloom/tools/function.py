"""``@tool``: a typed Python function as an SDK tool (000 §8).

Owns: turning one function into a ``Tool`` instance — its name (the function's, or
``@tool(name=...)``), its description (the docstring's first paragraph, or
``description=...``), its input model (built by pydantic from the signature: a strict
object, no extra keys, required = the parameters without a default; Google-style
``Args:`` lines become the fields' descriptions) and the call of the function with the
validated arguments. Does not own: argument validation errors, wrapping return values or
classifying exceptions (``ToolHandler`` in ``tools.sdk`` does that for every tool alike),
nor publication (``Kernel.publish``)::

    @agentloom.tool
    async def add(ctx: ToolContext, a: int, b: int = 0) -> str:
        '''Add two numbers.'''
        return str(a + b)

    AgentSpec(name="main", model=..., tools=("fs.read", add))

The result is a ``FunctionTool``: a ``Tool`` like any subclass instance, and still callable
as the plain function. A definition the catalog could not publish — an unannotated
parameter, ``*args`` / ``**kwargs``, a type pydantic cannot describe as JSON, a return type
whose values are not JSON (``-> set[int]``, ``-> bytes``, a plain class) — raises
``CatalogError`` at decoration time.
"""

from __future__ import annotations

import asyncio
import collections.abc
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

import pydantic
from pydantic import Field

from agentloom.errors import CatalogError
from agentloom.results import ToolResult
from agentloom.tools.sdk import StrictInput, Tool, ToolContext, ToolOutput

__all__ = ["FunctionTool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_ARGS_HEADERS = frozenset({"args:", "arguments:", "parameters:"})
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class FunctionTool(Tool[StrictInput], Generic[P, R]):
    """A ``Tool`` made by ``@tool`` from a function; calling it calls the function.

    Each decorated function gets a subclass of its own holding ``name``, ``description`` and
    ``input_type``, so the catalog and ``ToolHandler`` treat it exactly like a hand-written
    ``Tool`` subclass. Sync functions run in a worker thread (a blocking one never stalls
    the event loop; like any thread it cannot be interrupted, only abandoned).
    """

    # Per-function facts, set on the subclass ``tool`` makes.
    _function: Callable[..., Any]
    _is_async: bool
    _context: tuple[str, bool] | None  # the ToolContext parameter: (name, keyword-only)
    _params: tuple[tuple[str, bool], ...]  # (name, positional-only), in call order

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, self._function(*args, **kwargs))

    async def execute(self, args: StrictInput, ctx: ToolContext) -> ToolOutput:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        if self._context is not None:
            name, keyword_only = self._context
            if keyword_only:
                keywords[name] = ctx
            else:
                positional.append(ctx)
        for name, positional_only in self._params:
            value = getattr(args, name)
            if positional_only:
                positional.append(value)
            else:
                keywords[name] = value
        if self._is_async:
            output = await self._function(*positional, **keywords)
        else:
            output = await asyncio.to_thread(self._function, *positional, **keywords)
            if inspect.isawaitable(output):  # a callable object with an ``async __call__``
                output = await output
        return cast(ToolOutput, output)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r} of {_qualified(self._function)}>"


@overload
def tool(function: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a ``Tool`` from a typed function: ``@tool`` or ``@tool(name=..., description=...)``.

    The function may be ``async def`` or plain; its first parameter may be annotated
    ``ToolContext`` to receive the call's context; every other parameter needs a type
    annotation pydantic can validate and describe as JSON (``Annotated[int, Field(...)]``
    works). It may return what a ``Tool.execute`` may: a ``str`` (text), a ``dict`` or
    ``list`` (JSON), a number or ``bool`` (``{"result": value}``), a pydantic model, ``None``,
    or a ``ToolResult`` (passed through); raising fails the call. Its return annotation, if
    any, must be one of those shapes.

    Raises:
        CatalogError: the function cannot be a tool (the message names the parameter).
    """
    def decorate(fn: Callable[P, R]) -> FunctionTool[P, R]:
        return _build(fn, name=name, description=description)

    if function is not None:
        return decorate(function)
    return decorate


def _build(
    fn: Callable[..., Any], *, name: str | None, description: str | None
) -> FunctionTool[Any, Any]:
    where = f"@tool {_qualified(fn)}"
    if not callable(fn) or isinstance(fn, Tool):
        raise CatalogError(f"{where}: @tool takes a function, got {type(fn).__name__}")
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    if not isinstance(tool_name, str) or not tool_name.strip() or tool_name == "<lambda>":
        raise CatalogError(f"{where}: the tool needs a name; pass @tool(name=...)")
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    input_type, params, context = _input_model(fn, tool_name, arg_docs, where)
    _check_return(fn, where)
    attributes = {
        "name": tool_name,
        "description": description if description is not None else summary,
        "input_type": input_type,
        "_function": staticmethod(fn),
        "_is_async": inspect.iscoroutinefunction(inspect.unwrap(fn)),
        "_context": context,
        "_params": params,
        "__module__": getattr(fn, "__module__", __name__),
        "__qualname__": f"FunctionTool[{tool_name}]",
    }
    cls = cast(type[FunctionTool[Any, Any]],
               type(f"FunctionTool[{tool_name}]", (FunctionTool,), attributes))
    instance = cls()
    try:
        cls.describe()  # the JSON schema must exist now, not at publication
    except CatalogError:
        raise
    except Exception as exc:  # pydantic could build the model but not describe it as JSON
        raise CatalogError(f"{where}: its parameters have no JSON schema: {_first_line(exc)}") from exc
    functools.update_wrapper(instance, fn, updated=())  # __name__, __doc__, __wrapped__, …
    return instance


def _input_model(
    fn: Callable[..., Any], tool_name: str, arg_docs: dict[str, str], where: str
) -> tuple[type[StrictInput], tuple[tuple[str, bool], ...], tuple[str, bool] | None]:
    """The strict pydantic model of ``fn``'s arguments, the parameters in call order
    ``(name, positional-only)``, and the ``ToolContext`` parameter ``(name, keyword-only)``."""
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise CatalogError(f"{where}: cannot read its signature or type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    params: list[tuple[str, bool]] = []
    context: tuple[str, bool] | None = None
    for index, param in enumerate(signature.parameters.values()):
        hint = hints.get(param.name, inspect.Parameter.empty)
        if hint is ToolContext:
            if index != 0:
                raise CatalogError(f"{where}: a ToolContext parameter must come first, "
                                   f"{param.name!r} is at position {index + 1}")
            context = (param.name, param.kind is inspect.Parameter.KEYWORD_ONLY)
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise CatalogError(f"{where}: parameter {param.name!r} is *args or **kwargs; "
                               "a tool takes named parameters only")
        if hint is inspect.Parameter.empty:
            raise CatalogError(f"{where}: parameter {param.name!r} has no type annotation; "
                               "annotate it (e.g. `path: str`) so the model is told its type")
        if param.name.startswith("_"):
            raise CatalogError(f"{where}: parameter {param.name!r} starts with '_'; "
                               "argument names the model sees cannot")
        _check_type(hint, f"{where}: parameter {param.name!r}")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hint, Field(default, description=arg_docs.get(param.name)))
        params.append((param.name, param.kind is inspect.Parameter.POSITIONAL_ONLY))
    try:
        model = pydantic.create_model(
            f"{_camel(tool_name)}Input", __base__=StrictInput, __module__=fn.__module__, **fields)
    except Exception as exc:  # a name pydantic reserves (``model_config``), a bad default, …
        raise CatalogError(f"{where}: its parameters make no input model: {_first_line(exc)}") from exc
    return model, tuple(params), context


def _check_type(hint: Any, where: str) -> None:
    """Refuse a type pydantic cannot validate or describe as JSON Schema, naming it."""
    try:
        pydantic.TypeAdapter(hint).json_schema()
    except Exception as exc:  # PydanticSchemaGenerationError, PydanticInvalidForJsonSchema, …
        raise CatalogError(f"{where}: unsupported type {_type_name(hint)} (it has no JSON "
                           f"schema a model can be given): {_first_line(exc)}") from exc


_JSON_SCALARS: tuple[type, ...] = (str, int, float, bool, type(None))
_JSON_NAMES = ("str, int, float, bool, None, dict[str, ...], list[...], a pydantic model, "
               "ToolResult or Any")


def _check_return(fn: Callable[..., Any], where: str) -> None:
    """Refuse a return annotation whose values could never be delivered as JSON (``set``,
    ``bytes``, a plain class, ``object``), so the mistake shows at decoration, not at the
    model's first call (which would fail ``INVALID_TOOL_OUTPUT``). No annotation passes."""
    hint = typing.get_type_hints(fn, include_extras=True).get("return", Any)
    bad = _not_json(hint)
    if bad is not None:
        shown = "" if bad is hint else f" (it holds {_type_name(bad)})"
        raise CatalogError(f"{where}: return type {_type_name(hint)}{shown} cannot be delivered "
                           f"to a model as JSON; return {_JSON_NAMES}")


def _not_json(hint: Any) -> Any:
    """The part of ``hint`` that is not a JSON shape, or None when all of it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return _not_json(args[0])
    if hint is Any or isinstance(hint, typing.TypeVar) or hint in _JSON_SCALARS \
            or hint in (None, ToolResult, typing.NoReturn, typing.Never):  # Never: it raises
        return None
    if origin is typing.Literal:
        return None if all(isinstance(a, _JSON_SCALARS) for a in args) else hint
    if origin is typing.Union or origin is types.UnionType:
        return next((bad for bad in map(_not_json, args) if bad is not None), None)
    if origin in (dict, collections.abc.Mapping):
        if args and args[0] is not str and _not_json(args[0]) is not None:
            return hint
        return _not_json(args[1]) if args else None
    if origin in (list, tuple, collections.abc.Sequence):
        items = (arg for arg in args if arg is not Ellipsis)  # tuple[int, ...]
        return next((bad for bad in map(_not_json, items) if bad is not None), None)
    if isinstance(hint, type) and (issubclass(hint, (pydantic.BaseModel, dict, list, *_JSON_SCALARS))
                                   or typing.is_typeddict(hint)):
        return None
    return hint


def _type_name(hint: Any) -> str:
    if not isinstance(hint, type):
        return repr(hint)
    if hint.__module__ == "builtins":
        return hint.__qualname__
    return f"{hint.__module__}.{hint.__qualname__}"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph (lines joined by spaces) and the ``Args:`` section's
    ``name: text`` descriptions of a cleaned (``inspect.getdoc``) docstring."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or line.strip().lower() in _ARGS_HEADERS:
            break
        summary.append(line.strip())
    docs: dict[str, str] = {}
    current: str | None = None
    current_indent = 0
    in_args = False
    for line in lines:
        stripped = line.strip()
        if not line.startswith((" ", "\t")):  # a section header or prose ends the section
            in_args = stripped.lower() in _ARGS_HEADERS
            current = None
            continue
        if not in_args or not stripped:
            continue
        match = _ARG_LINE.match(stripped)
        indent = len(line) - len(line.lstrip())
        if match and (current is None or indent <= current_indent):
            current = match.group(1).lstrip("*")
            current_indent = indent
            docs[current] = match.group(2).strip()
        elif current is not None:
            docs[current] = f"{docs[current]} {stripped}".strip()
    return " ".join(summary), docs


def _camel(name: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", name)
    return "".join(part[:1].upper() + part[1:] for part in parts) or "Tool"


def _qualified(fn: object) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
