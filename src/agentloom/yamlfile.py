"""Reading YAML: the one loader every configuration, preset and script file goes through.

Owns: how YAML text becomes plain data — PyYAML's safe constructors only, a key written twice
in one mapping refused (PyYAML would silently keep the last), values nested deeper than
``MAX_DEPTH`` refused (PyYAML builds nested values by recursion, so a deep enough file would
exhaust Python's stack: a ``RecursionError`` that no caller reports as a file error), and on
request aliases refused. Does not own: the error a caller raises; a refusal is a
``yaml.MarkedYAMLError`` whose marks
give the line and column, for the caller to name its file.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "load_yaml"]

#: Levels of nested collections a file may hold (the document's root is the first). No
#: configuration needs more; PyYAML spends some five stack frames per level, so this keeps a
#: file well inside Python's recursion limit wherever it is read.
MAX_DEPTH = 64


class _UniqueKeyLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses a key written twice in one mapping, and values nested
    deeper than ``MAX_DEPTH``."""

    _depth = 0  # collections being composed around the current node

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.SequenceStartEvent, yaml.events.MappingStartEvent):
            if self._depth >= MAX_DEPTH:
                event: Any = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, f"values are nested more than {MAX_DEPTH} levels deep; no "
                    "file needs that many: flatten them", event.start_mark)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)


def _mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable):
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"key {key!r} is written twice; keep one", key_node.start_mark)
            seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


class _NoAliasLoader(_UniqueKeyLoader):
    """Also refuses aliases: in plain data an alias can make a small file expand to gigabytes
    once its values are used (a "billion laughs")."""

    what = "this file"  # the file kind the refusal names

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            event: Any = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*{event.anchor}) are not allowed in {self.what}; "
                "write the value out", event.start_mark)
        return super().compose_node(parent, index)


def load_yaml(text: str, *, aliases: bool = True, what: str = "this file") -> Any:
    """Parse YAML ``text`` into plain data with the safe constructors.

    ``aliases=False`` refuses every alias; ``what`` names the file kind in that refusal
    (e.g. ``"a script file"``).

    Raises:
        yaml.YAMLError: the text is not YAML, writes a key twice in one mapping, or holds an
            alias when they are refused (a ``MarkedYAMLError`` with the line when known).
    """
    if aliases:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    loader = _NoAliasLoader(text)
    loader.what = what
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
