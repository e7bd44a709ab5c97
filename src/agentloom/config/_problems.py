"""The config error format: every problem is one line ``key.path: what is wrong; how to fix``.

``Problem`` is one such line; ``config_error`` joins them into one ``ConfigError``;
``validation_problems`` turns a pydantic ``ValidationError`` into problems phrased for a
person editing YAML (the key path, the allowed keys, the expected value, what was given). A
model may list ``removed_keys`` (``ClassVar``: key → what to write instead); such a key is
reported with that message rather than as unknown. ``renamed_keys`` (``ClassVar``: old key →
new key) reports an old key as renamed, and a missing new key is then not reported twice.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from agentloom.errors import ConfigError

CONFIG_INVALID = "CONFIG_INVALID"
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a configuration: where (a key path) and what to do about it."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def config_error(source: str, problems: Sequence[Problem], *, code: str = CONFIG_INVALID) -> ConfigError:
    """One ``ConfigError`` listing every problem, one per line, after a header naming ``source``."""
    if len(problems) == 1:
        return ConfigError(f"{source}: {problems[0]}", code=code)
    lines = [f"{source}: {len(problems)} problems:", *(str(p) for p in problems)]
    return ConfigError("\n".join(lines), code=code)


def key_path(loc: Sequence[int | str]) -> str:
    """``("agents", "main", "tools", 2)`` → ``agents.main.tools[2]``; odd keys are quoted."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out or "(top level)"


def shown(value: Any) -> str:
    """A short rendering of a value a user wrote, for ``(got …)``."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """``did you mean 'x'? `` for the choice closest to ``word``; nothing when none is close,
    and never ``word`` itself (a name that is refused is not its own suggestion)."""
    others = [c for c in choices if c != word]
    close = difflib.get_close_matches(word, others, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


# -- pydantic errors -----------------------------------------------------------------------------


def validation_problems(
    exc: ValidationError, root: type[BaseModel], tags: Mapping[str, type[BaseModel]]
) -> list[Problem]:
    """Every error in ``exc`` as a ``Problem``. ``tags`` maps the tag names of tagged unions
    (which pydantic puts in ``loc``) to their member models; they are left out of paths."""
    problems: list[Problem] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        if loc and loc[-1] == "[key]":  # a mapping key of the wrong type
            problems.append(Problem(key_path(_untagged(loc[:-1], tags)), "keys here must be names (strings)"))
            continue
        if error["type"] == "missing" and _written_under_old_name(error, root, tags):
            continue  # the old key's problem already says what to write
        problems.append(Problem(key_path(_untagged(loc, tags)), _message(error, root, tags)))
    return problems


def _written_under_old_name(
    error: ErrorDetails, root: type[BaseModel], tags: Mapping[str, type[BaseModel]]
) -> bool:
    loc, given = tuple(error["loc"]), error.get("input")
    renamed: Mapping[str, str] = getattr(_model_at(root, loc[:-1], tags), "renamed_keys", {})
    return isinstance(given, Mapping) and any(
        new == loc[-1] and old in given for old, new in renamed.items())


def _untagged(loc: tuple[int | str, ...], tags: Mapping[str, Any]) -> tuple[int | str, ...]:
    return tuple(p for p in loc if not (isinstance(p, str) and p in tags))


_EXPECTED = {
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "bool_type": "true or false", "bool_parsing": "true or false", "string_type": "a string",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
    "tuple_type": "a list", "list_type": "a list",
}


def _message(error: ErrorDetails, root: type[BaseModel], tags: Mapping[str, type[BaseModel]]) -> str:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    loc = tuple(error["loc"])
    if kind == "extra_forbidden":
        model = _model_at(root, loc[:-1], tags)
        removed: Mapping[str, str] = getattr(model, "removed_keys", {})
        if loc[-1] in removed:  # a key an earlier release read: say what replaced it
            return removed[str(loc[-1])]
        renamed: Mapping[str, str] = getattr(model, "renamed_keys", {})
        if loc[-1] in renamed:
            new = renamed[str(loc[-1])]
            return f"`{loc[-1]}` was renamed to `{new}`; write `{new}:` with the same value"
        allowed = sorted(f.alias or n for n, f in model.model_fields.items()) if model is not None else []
        where = key_path(_untagged(loc[:-1], tags)) if len(loc) > 1 else "the top level"
        key = str(loc[-1])
        homes = [h for h in key_homes(root, key, tags) if h != where]
        elsewhere = (f"; {key!r} is a key of {' or '.join(homes)}, not of {where}"
                     if 0 < len(homes) <= 3 and key not in allowed else "")
        return (f"unknown key {key!r}; {did_you_mean(key, allowed)}allowed keys at {where}: "
                f"{', '.join(k for k in allowed if k != key)}{elsewhere}")
    if kind == "missing":
        return "is required; add it"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "greater than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        bound = next(iter(ctx.values()), "?")
        return f"must be {words} {_number(bound)} (got {shown(value)})"
    if kind == "literal_error":
        return f"must be {ctx.get('expected', '?')} (got {shown(value)})"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length', 1)} entry (got none)"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind in _EXPECTED:
        return f"must be {_EXPECTED[kind]} (got {shown(value)}){_exponent_hint(value)}"
    msg = error["msg"]
    return f"{msg[:1].lower()}{msg[1:]} (got {shown(value)})"


_BARE_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+\Z")


def _exponent_hint(value: Any) -> str:
    """YAML 1.1 reads ``1e12`` as text (a number needs a dot and a signed exponent)."""
    if isinstance(value, str) and _BARE_EXPONENT.match(value.strip()):
        number = float(value)
        plain = str(int(number)) if number.is_integer() else repr(number)
        return f"; YAML reads {value} as text: write {plain} or {number:.1e}"
    return ""


def key_homes(root: type[BaseModel], key: str, tags: Mapping[str, type[BaseModel]]) -> list[str]:
    """Where in ``root``'s tree of models ``key`` is a key, as path patterns
    (``hooks[].handler (kind: http)``, ``mcp_servers.<name>``), first found first. A model in
    ``tags`` (a tagged union's member) is looked into wherever its base class stands."""
    found: list[str] = []
    seen: set[type[BaseModel]] = set()

    def walk(annotation: Any, path: str) -> None:
        annotation = _unwrap(annotation)
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin in (typing.Union, types.UnionType):
            for member in args:
                walk(member, path)
        elif origin in (tuple, list) and args:
            walk(args[0], f"{path}[]")
        elif origin in (dict, Mapping) and len(args) == 2:
            walk(args[1], f"{path}.<name>" if path else "<name>")
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for model in (annotation, *(m for m in tags.values()
                                        if m is not annotation and issubclass(m, annotation))):
                if model in seen:
                    continue
                seen.add(model)
                here = f"{path}{_literal_of(model)}" if path else "the top level"
                if any((f.alias or n) == key for n, f in model.model_fields.items()):
                    found.append(here)
                for name, field in model.model_fields.items():
                    walk(field.annotation, f"{path}.{field.alias or name}" if path
                         else field.alias or name)

    walk(root, "")
    return found


def _literal_of(model: type[BaseModel]) -> str:
    """`` (kind: http)``: the one-value ``Literal`` field that names a tagged union's member."""
    for name, field in model.model_fields.items():
        if typing.get_origin(field.annotation) is typing.Literal:
            values = typing.get_args(field.annotation)
            if len(values) == 1:
                return f" ({field.alias or name}: {values[0]})"
    return ""


def _model_at(
    root: type[BaseModel], loc: tuple[int | str, ...], tags: Mapping[str, type[BaseModel]]
) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``loc`` (for listing its keys)."""
    current: Any = root
    for part in loc:
        current = _step(current, part, tags)
        if current is None:
            return None
    current = _unwrap(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _step(annotation: Any, part: int | str, tags: Mapping[str, type[BaseModel]]) -> Any:
    if isinstance(part, str) and part in tags:
        return tags[part]
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(part))
        return None if field is None else field.annotation
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (tuple, list) and args and isinstance(part, int):
        return args[0]
    if origin in (dict, Mapping) and len(args) == 2:
        return args[1]
    return None


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, …]`` → X; ``X | None`` → X (a union of several models stays a union)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation
