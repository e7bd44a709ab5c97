"""Importing the user code a configuration names (``module:attr`` tools, hook functions,
command handlers), as Python imports a script's: the config file's folder first on
``sys.path`` for the duration of the import, and a module beside this config preferred to a
same-named one another config loaded earlier in the process.

Owns: that import rule. Does not own: what the imported object must be (``assembly.tools``,
``assembly.hooks``, ``assembly.commands`` check it).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
import sysconfig
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentloom.config import Config
from agentloom.errors import ConfigError

__all__ = ["import_ref", "user_code"]


@contextmanager
def _importable_from(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` while importing (as Python does for a script's folder)."""
    entry = str(folder)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _own_module(module_name: str, folder: Path) -> None:
    """Make ``import module_name`` find ``folder``'s own module when ``folder`` has one (its
    ``<top>.py`` or ``<top>/__init__.py``) and a module of that name is already imported from
    another folder of user code: the earlier one (e.g. another config's ``guards.py`` in this
    process) is forgotten, with its submodules, so each config gets the code beside it. What
    was resolved from the earlier one is kept by whoever resolved it (a built runtime holds
    its functions). The standard library and installed packages are never forgotten."""
    top = module_name.partition(".")[0]
    loaded = sys.modules.get(top)
    origin = getattr(loaded, "__file__", None)
    if not origin:
        return
    own = next((p for p in (folder / f"{top}.py", folder / top / "__init__.py") if p.is_file()),
               None)
    if own is None or origin == str(own):  # the folder's own, as imported from it: no resolve
        return
    here = Path(origin).resolve()
    if here == own.resolve() or any(
            here.is_relative_to(root) for root in _installed_roots()):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        del sys.modules[name]


@functools.cache
def _installed_roots() -> tuple[Path, ...]:
    """Where the standard library and installed packages live (never user code to forget)."""
    paths = sysconfig.get_paths()
    return tuple({Path(paths[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def user_code(config: Config) -> Callable[[str], Any]:
    """What ``module:attr`` names, imported as the configuration's other user code is (the
    config file's folder first on ``sys.path``; its own module, not another config's of the
    same name): for parts resolved after the build, e.g. command handlers."""
    return lambda ref: import_ref(ref, ref, config.base_dir)


def import_ref(ref: str, where: str, folder: Path) -> Any:
    """The object ``ref`` (``module:attr``, ``attr`` may be dotted) names, imported with
    ``folder`` first on ``sys.path``.

    Raises:
        ConfigError: ``CONFIG_IMPORT``: the module does not import, or lacks the attribute;
            the message starts with ``where`` (the key that names ``ref``).
    """
    module_name, _, attr = ref.partition(":")
    with _importable_from(folder):
        try:
            _own_module(module_name, folder)
            if module_name not in sys.modules:  # a module written moments ago must be seen;
                importlib.invalidate_caches()  # one imported already (by the agent before) is
            module = importlib.import_module(module_name)  # not looked for again
        except Exception as exc:  # user code: any failure at import is a config problem
            raise ConfigError(
                f"{where}: cannot import module {module_name!r} ({type(exc).__name__}: {exc}); "
                f"it is looked up on sys.path and in {str(folder)!r}", code="CONFIG_IMPORT") from None
        try:  # the module is imported: pkgutil.resolve_name only walks the attributes
            return pkgutil.resolve_name(ref) if attr else getattr(module, attr)
        except (AttributeError, ValueError):
            raise ConfigError(f"{where}: module {module_name!r} has no attribute {attr!r}",
                              code="CONFIG_IMPORT") from None
