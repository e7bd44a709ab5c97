"""Issue #12 point 8: an incompletely defined Tool class is a ``CatalogError`` naming the class —
a missing ``description`` at ``describe`` / registration (never a raw ``AttributeError``), a
plain (sync) ``execute`` already at the class statement (never first at run time)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from agentloom.errors import CatalogError
from agentloom.kernel import Kernel
from agentloom.tools import StrictInput, Tool, ToolContext, ToolHandler


class NoteInput(StrictInput):
    text: str


class Undescribed(Tool[NoteInput]):
    name = "note.undescribed"

    async def execute(self, args: NoteInput, ctx: ToolContext) -> str:
        return args.text


def test_12_8_a_tool_without_description_is_a_catalog_error_from_describe_and_registration() -> None:
    for call in (Undescribed.describe, lambda: ToolHandler(Undescribed()),
                 lambda: Kernel("memory://").publish("rel", [Undescribed()],
                                                     roles={"main": ["note.undescribed"]})):
        with pytest.raises(CatalogError) as info:
            call()
        assert "Undescribed" in str(info.value) and "description" in str(info.value)


def test_12_8_a_sync_execute_is_refused_at_the_class_statement_naming_the_class() -> None:
    with pytest.raises(CatalogError) as info:

        class SyncNote(Tool[NoteInput]):
            name = "note.sync"
            description = "A tool whose execute is not a coroutine function."

            def execute(self, args: NoteInput, ctx: ToolContext) -> str:  # type: ignore[override]
                return args.text

    assert "SyncNote" in str(info.value) and "async def execute" in str(info.value)
    _an_async_execute_behind_a_wrapping_decorator_and_an_abstract_base_are_accepted()


def test_12_8_a_sync_execute_set_after_the_class_statement_is_refused_at_registration() -> None:
    class LateNote(Tool[NoteInput]):
        name = "note.late"
        description = "execute replaced after the class was made"

        async def execute(self, args: NoteInput, ctx: ToolContext) -> str:
            return args.text

    LateNote.execute = lambda self, args, ctx: args.text  # type: ignore[method-assign,assignment,return-value]

    with pytest.raises(CatalogError, match="LateNote"):
        ToolHandler(LateNote())


def _logged(fn: Callable[..., Coroutine[Any, Any, str]]) -> Callable[..., Coroutine[Any, Any, str]]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Coroutine[Any, Any, str]:
        return fn(*args, **kwargs)

    return wrapper


def _an_async_execute_behind_a_wrapping_decorator_and_an_abstract_base_are_accepted() -> None:
    class Base(Tool[NoteInput]):  # no execute yet: still abstract, nothing to check
        description = "a shared base"

    class Decorated(Base):
        name = "note.decorated"

        @_logged
        async def execute(self, args: NoteInput, ctx: ToolContext) -> str:
            return args.text

    assert ToolHandler(Decorated()).tool.describe().name == "note.decorated"
