"""``SKILL.md``: its YAML front matter read and held to the metadata policy of 000 §6.1.

================================================  ===============================================
front matter / syntax                             at import
================================================  ===============================================
``name``, ``description``, ``license``,           kept and validated (``name``: lowercase letters,
``compatibility``, ``metadata``                   digits and ``-``, ≤ 64, equal to the folder
                                                  name; ``description``: required, ≤ 1024)
``arguments``, ``argument-hint``                  kept as text only (``skills.render``: text
                                                  substitution, never a shell)
``user-invocable``, ``disable-model-invocation``  kept (booleans; obeyed at run time)
``allowed-tools``, ``disallowed-tools``           kept as tool lists (they narrow a role's tools)
``model``, ``effort``, ``context``, ``agent``     refused, naming the field
``hooks``                                         kept as inert hook resources, bound only by
                                                  an agent's ``{skill: …}`` entry (``skills.hooks``)
`` !`cmd` `` / `````! `` blocks in the body,      reported as unsupported, never executed
Claude-Code-only fields and ``${CLAUDE_*}``
anything else                                     an error; a warning with ``allow_unknown``
================================================  ===============================================
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from agentloom.skills.errors import (
    FIELD_REFUSED,
    FIELD_UNKNOWN,
    MANIFEST_INVALID,
    SkillImportError,
)
from agentloom.yamlfile import load_yaml

__all__ = ["ENTRY", "Manifest", "parse_manifest"]

ENTRY = "SKILL.md"
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500

STANDARD = ("name", "description", "license", "compatibility", "metadata")
TEXT_ONLY = ("arguments", "argument-hint")
INVOCATION = ("user-invocable", "disable-model-invocation")
TOOL_LISTS = ("allowed-tools", "disallowed-tools")
REFUSED = {
    "model": "the model is fixed by the agent's configuration",
    "effort": "reasoning effort is fixed by the agent's configuration",
    "context": "`context: fork` is not supported: delegate through an explicit executor",
    "agent": "sub-agents run only as explicit executors in the configuration",
}
HOOKS = "hooks"
CLAUDE_CODE_ONLY = ("when_to_use", "paths", "shell", "background")
_INJECTION = re.compile(r"(?:^|(?<=\s))!`[^`\n]+`|^\s*```!", re.MULTILINE)
_CC_VARIABLE = re.compile(r"\$\{CLAUDE_[A-Z_]+\}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """What an import keeps of one ``SKILL.md``: ``metadata`` holds every kept field under its
    front-matter name (JSON-ready); ``hooks`` the inert hook resources; ``unsupported`` what
    is reported and never executed; ``warnings`` the unknown fields ``allow_unknown`` let by."""

    name: str
    description: str
    metadata: dict[str, Any]
    hooks: Any = None
    unsupported: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    body: str = field(default="", repr=False)


def parse_manifest(text: str, *, folder: str, folder_name: str,
                   allow_unknown: bool = False) -> Manifest:
    """Read ``SKILL.md`` ``text`` of the skill in ``folder`` (as shown in messages), whose
    folder name is ``folder_name`` (its ``name`` must equal it).

    Raises:
        SkillImportError: no front matter, bad YAML, a field refused (``SKILL_FIELD_REFUSED``),
            an unknown field without ``allow_unknown`` (``SKILL_FIELD_UNKNOWN``), a bad value.
    """
    where = f"{folder}/{ENTRY}"
    front, body = _split(text, where)
    kept: dict[str, Any] = {}
    unsupported: list[str] = []
    warnings: list[str] = []
    hooks: Any = None
    unknown: list[str] = []
    for key, value in front.items():
        if not isinstance(key, str):
            raise SkillImportError(MANIFEST_INVALID, f"{where}: front matter key {key!r} is not "
                                   "text")
        if key in REFUSED:
            raise SkillImportError(FIELD_REFUSED, f"{where}: field {key!r} is refused: "
                                   f"{REFUSED[key]}; remove it")
        if key in STANDARD:
            kept[key] = _standard(key, value, where)
        elif key in TEXT_ONLY:
            kept[key] = _text_or_list(key, value, where)
        elif key in INVOCATION:
            if not isinstance(value, bool):
                raise SkillImportError(MANIFEST_INVALID, f"{where}: {key!r} must be true or "
                                       f"false (got {value!r})")
            kept[key] = value
        elif key in TOOL_LISTS:
            kept[key] = _tools(key, value, where)
        elif key == HOOKS:
            if not isinstance(value, dict):
                raise SkillImportError(MANIFEST_INVALID, f"{where}: 'hooks' must be a mapping "
                                       "of events (Claude Code's hook shape)")
            hooks = _json_value(value, where)
        elif key in CLAUDE_CODE_ONLY:
            unsupported.append(f"field {key!r} (Claude Code only) is not supported; ignored")
        else:
            unknown.append(key)
    if unknown:
        listed = ", ".join(repr(k) for k in unknown)
        if not allow_unknown:
            raise SkillImportError(FIELD_UNKNOWN, f"{where}: unknown front matter field(s) "
                                   f"{listed}; remove them, or pass --allow-unknown to import "
                                   "with a warning (they are then ignored)")
        warnings.extend(f"unknown field {k!r} ignored" for k in unknown)
    for required in ("name", "description"):
        if required not in kept:
            raise SkillImportError(MANIFEST_INVALID, f"{where}: {required!r} is required")
    if kept["name"] != folder_name:
        raise SkillImportError(MANIFEST_INVALID, f"{where}: name {kept['name']!r} must equal "
                               f"the skill's folder name {folder_name!r}")
    if _INJECTION.search(body):
        unsupported.append("dynamic shell injection (!`command` or a ```! block) is not "
                           "supported; it is kept as text and never executed")
    variables = sorted(set(_CC_VARIABLE.findall(body)))
    if variables:
        unsupported.append(f"Claude Code variables {', '.join(variables)} are not supported; "
                           "kept as text")
    return Manifest(name=kept["name"], description=kept["description"], metadata=kept,
                    hooks=hooks, unsupported=tuple(unsupported), warnings=tuple(warnings),
                    body=body)


def _split(text: str, where: str) -> tuple[dict[Any, Any], str]:
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise SkillImportError(MANIFEST_INVALID, f"{where}: must start with YAML front matter "
                               "between '---' lines")
    for end in range(1, len(lines)):
        if lines[end].rstrip() == "---":
            break
    else:
        raise SkillImportError(MANIFEST_INVALID, f"{where}: the front matter has no closing '---'")
    try:
        front = load_yaml("\n".join(lines[1:end]), aliases=False, what="SKILL.md front matter")
    except yaml.YAMLError as exc:
        raise SkillImportError(MANIFEST_INVALID, f"{where}: the front matter is not valid "
                               f"YAML: {exc}") from None
    if not isinstance(front, dict):
        raise SkillImportError(MANIFEST_INVALID, f"{where}: the front matter must be a mapping")
    return front, "\n".join(lines[end + 1:])


def _json_value(value: Any, where: str) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        raise SkillImportError(MANIFEST_INVALID, f"{where}: 'hooks' holds a value that is not "
                               "plain data (a date? quote it)") from None


def _standard(key: str, value: Any, where: str) -> Any:
    if key == "metadata":
        if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise SkillImportError(MANIFEST_INVALID, f"{where}: 'metadata' must map text to text")
        return dict(value)
    if not isinstance(value, str) or not value.strip():
        raise SkillImportError(MANIFEST_INVALID, f"{where}: {key!r} must be non-empty text")
    if key == "name" and (len(value) > MAX_NAME or not NAME.match(value)):
        raise SkillImportError(MANIFEST_INVALID, f"{where}: name {value[:80]!r} must be 1-{MAX_NAME} "
                               "lowercase letters, digits and single '-' (not first or last)")
    limit = {"description": MAX_DESCRIPTION, "compatibility": MAX_COMPATIBILITY}.get(key)
    if limit is not None and len(value) > limit:
        raise SkillImportError(MANIFEST_INVALID, f"{where}: {key!r} is longer than {limit} "
                               f"characters ({len(value)})")
    return value


def _text_or_list(key: str, value: Any, where: str) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SkillImportError(MANIFEST_INVALID, f"{where}: {key!r} must be text or a list of text")


def _tools(key: str, value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [t for t in re.split(r"[\s,]+", value) if t]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SkillImportError(MANIFEST_INVALID, f"{where}: {key!r} must be a space-separated "
                           "text or a list of tool names")
