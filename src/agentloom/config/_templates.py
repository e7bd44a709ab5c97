"""Workflow templates: ``{{ input.task }}``, ``{{ nodes.NAME.output }}`` and ``{{
nodes.NAME.artifacts }}`` inside node texts.

These three expressions are the whole language (issue 20; ``artifacts``, issue 37: the paths of
the artifacts of the node's latest succeeded activation, one per line): no filters, no other
names, no escaping. Whitespace inside the braces is optional (``{{nodes.plan.output}}``). Anything else
between ``{{`` and ``}}`` — or a ``{{`` that is never closed — is a ``TemplateError`` naming it,
at load time when the workflow is checked.

Owns: parsing a text into its expressions, the node names it refers to, rendering it. Pure:
no I/O. Does not own: which nodes may be referred to from where (``config._workflow_graph``),
when a node is rendered (``squad.driver``). ``squad.templates`` is the public face.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from agentloom.errors import ConfigError

__all__ = ["TemplateError", "artifact_references", "references", "render", "render_args",
           "template_texts"]

_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.S)
_TASK = re.compile(r"^input\.task$")
_NODE_OUTPUT = re.compile(r"^nodes\.(?P<node>[^.\s{}]+)\.(?P<field>output|artifacts)$")
_ALLOWED = "{{ input.task }}, {{ nodes.NAME.output }} or {{ nodes.NAME.artifacts }}"
_EMPTY: Mapping[str, str] = {}


class TemplateError(ConfigError):
    """A template that says something other than ``{{ input.task }}`` / ``{{ nodes.NAME.output
    }}`` (code ``TEMPLATE_INVALID``), or one rendered before the output it names exists (code
    ``TEMPLATE_OUTPUT_MISSING``; a checked workflow's driver never does that)."""

    default_code = "TEMPLATE_INVALID"


@functools.lru_cache(maxsize=1024)
def _expressions(text: str) -> tuple[tuple[str, str | None, str], ...]:
    """``(expression as written, node name or None for the task, field)`` for each expression
    (a workflow's texts are few and read at every activation: parsed once each).

    Raises:
        TemplateError: an unknown expression or an unclosed ``{{``.
    """
    found: list[tuple[str, str | None, str]] = []
    for match in _EXPRESSION.finditer(text):
        inner = match[1].strip()
        node = _NODE_OUTPUT.match(inner)
        if node:
            found.append((match[0], node["node"], node["field"]))
        elif _TASK.match(inner):
            found.append((match[0], None, "task"))
        else:
            raise TemplateError(f"unknown template expression {match[0]!r}; a template may use "
                                f"only {_ALLOWED}")
    rest = _EXPRESSION.sub("", text)
    if "{{" in rest:
        raise TemplateError(f"a '{{{{' is never closed in {_short(text)}; close it with '}}}}' "
                            f"({_ALLOWED}) or remove it")
    return tuple(found)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def references(text: str) -> set[str]:
    """The node names ``text`` refers to as ``{{ nodes.NAME.output }}`` or ``{{
    nodes.NAME.artifacts }}``.

    Raises:
        TemplateError: ``text`` holds another expression or an unclosed ``{{``.
    """
    return {node for _, node, _ in _expressions(text) if node is not None}


def artifact_references(text: str) -> set[str]:
    """The node names ``text`` refers to as ``{{ nodes.NAME.artifacts }}``.

    Raises:
        TemplateError: as ``references``.
    """
    return {node for _, node, field in _expressions(text)
            if node is not None and field == "artifacts"}


def render(text: str, *, task: str, outputs: Mapping[str, str],
           artifacts: Mapping[str, str] = _EMPTY) -> str:
    """``text`` with ``{{ input.task }}`` replaced by ``task``, each ``{{ nodes.NAME.output
    }}`` by ``outputs[NAME]`` and each ``{{ nodes.NAME.artifacts }}`` by ``artifacts[NAME]``
    (its artifact paths, one per line; ``""`` when it has none), in one pass (a value holding
    ``{{`` is not rendered again).

    Raises:
        TemplateError: an unknown expression, or a node whose output is not in ``outputs``
            (code ``TEMPLATE_OUTPUT_MISSING``).
    """
    _expressions(text)  # refuse a bad template before replacing anything

    def value(match: re.Match[str]) -> str:
        inner = match[1].strip()
        node = _NODE_OUTPUT.match(inner)
        if node is None:
            return task
        name = node["node"]
        if node["field"] == "artifacts" and name in outputs:
            return artifacts.get(name, "")
        if name not in outputs:
            have = ", ".join(sorted(outputs)) or "none yet"
            raise TemplateError(f"{match[0]!r} names the output of node {name!r}, which has none "
                                f"(outputs so far: {have}); a node can use only the output of a "
                                "node that finished before it", code="TEMPLATE_OUTPUT_MISSING")
        return outputs[name]

    return _EXPRESSION.sub(value, text)


def render_args(args: Any, *, task: str, outputs: Mapping[str, str],
                artifacts: Mapping[str, str] = _EMPTY) -> Any:
    """``args`` with every string inside it (nested mappings and lists; keys stay as written)
    rendered; other values are returned as they are. A string that is exactly one expression
    becomes that value's text.

    Raises:
        TemplateError: as ``render``.
    """
    if isinstance(args, str):
        return render(args, task=task, outputs=outputs, artifacts=artifacts)
    if isinstance(args, Mapping):
        return {key: render_args(value, task=task, outputs=outputs, artifacts=artifacts)
                for key, value in args.items()}
    if isinstance(args, list | tuple):
        return [render_args(value, task=task, outputs=outputs, artifacts=artifacts)
                for value in args]
    return args


def template_texts(value: Any, at: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """Every string inside ``value`` (nested mappings and lists) with its location under
    ``at``, in order: what a node's ``args`` holds for the checks."""
    if isinstance(value, str):
        return [(at, value)]
    if isinstance(value, Mapping):
        return [t for key, item in value.items() for t in template_texts(item, (*at, str(key)))]
    if isinstance(value, list | tuple):
        return [t for i, item in enumerate(value) for t in template_texts(item, (*at, i))]
    return []
