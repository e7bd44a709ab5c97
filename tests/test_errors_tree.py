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


def drawn_tree(doc: str) -> dict[str, str | None]:
    """The tree ``errors.py``'s docstring draws: class name -> the name drawn as its parent
    (None for the root). A line's depth is where its name starts, four columns a level."""
    lines = doc.split("::\n", 1)[1].split("\n\n", 1)[0].splitlines()
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in lines:
        if "── " in line:
            start = line.index("── ") + 3
        elif line.strip().startswith("AgentLoomError"):
            start = line.index("AgentLoomError")
        else:
            continue  # a description's second line
        name = line[start:].split()[0].rsplit(".", 1)[-1]
        depth = (start - 4) // 4
        del stack[depth:]
        parents[name] = stack[-1] if stack else None
        stack.append(name)
    return parents


def test_i35_7_the_drawn_error_tree_is_the_class_hierarchy() -> None:
    import agentloom.errors as errors

    drawn = drawn_tree(errors.__doc__ or "")
    classes = {cls.__name__: cls for cls in public_exceptions().values()}
    assert len(classes) == len(public_exceptions()), "two public exceptions share a name"
    assert sorted(set(classes) - set(drawn)) == [], "public exceptions missing from the tree"
    assert sorted(set(drawn) - set(classes)) == [], "the tree draws classes that do not exist"
    for name, cls in classes.items():
        base = next((b for b in cls.__mro__[1:] if issubclass(b, AgentLoomError)), None)
        assert drawn[name] == (base.__name__ if base else None), f"{name} drawn under " \
            f"{drawn[name]}, derives from {base.__name__ if base else None}"


def test_i35_7_the_tree_check_sees_a_class_drawn_under_the_wrong_parent() -> None:
    import agentloom.errors as errors

    doc = (errors.__doc__ or "").replace("    │   └── runtime.SessionBusy", "    ├── runtime.SessionBusy")
    assert drawn_tree(doc)["SessionBusy"] == "AgentLoomError"
