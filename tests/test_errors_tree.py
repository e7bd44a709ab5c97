"""STYLE.md §10 / issue #13 item 8: one error root, every public exception under it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import agentloom
from agentloom.errors import AgentLoomError

SRC = Path(agentloom.__file__).resolve().parent


def module_names() -> set[str]:
    """Every module under ``src/agentloom``: ``pkgutil.walk_packages`` plus the files on disk,
    because ``walk_packages`` does not descend into a folder without ``__init__.py``
    (``workspace/`` is a namespace package)."""
    names = {info.name for info in pkgutil.walk_packages(agentloom.__path__, prefix="agentloom.")}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.add(".".join(("agentloom", *parts)))
    return names


def public_exceptions() -> dict[str, type[BaseException]]:
    """Every public ``Exception`` subclass defined in a module under ``src/agentloom``.

    Public: its name has no leading underscore. Private modules are walked too, because their
    classes are re-exported by their package (``WorkspaceError`` lives in ``_errors.py``).
    """
    found: dict[str, type[BaseException]] = {}
    for name in sorted(module_names()):
        if name.endswith("__main__"):
            continue
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Exception)
                and obj.__module__ == module.__name__
                and not attr.startswith("_")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_13_8_every_public_exception_is_an_agentloom_error() -> None:
    found = public_exceptions()
    # the walk reaches a regular package and the namespace package
    assert "agentloom.bus.bus.BatchError" in found
    assert "agentloom.workspace._errors.WorkspaceError" in found
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, AgentLoomError))
    assert outside == []
