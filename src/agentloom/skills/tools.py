"""The ``skill.list`` and ``skill.read`` tools (000 §7.3; model names ``skill_list``,
``skill_read``): the calling role's skills and their files, from the immutable versions its
release bound (``SkillBindings``).

Each call is an ordinary tool operation through the pipeline (recorded, hooked, its large
result previewed with a ``result_ref`` like any other tool's). ``skill.read`` takes a skill
name and a path relative to the skill folder (default its ``SKILL.md``); an absolute path, a
``..`` component or a file the version does not hold is refused. Given ``arguments`` (a text or
a list of texts), the ``SKILL.md`` body comes rendered with them (``skills.render``: text
substitution only, never a shell; the front matter is left as it is); without, it comes as
stored.
"""

from __future__ import annotations

import posixpath
from typing import Any

from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.errors import OperationError
from agentloom.results import ToolResult
from agentloom.skills.errors import SkillImportError
from agentloom.skills.render import argument_names, render_body
from agentloom.skills.runtime import MOUNT_ROOT, SkillBindings

__all__ = ["SkillListHandler", "SkillReadHandler", "skill_capability"]

_LIST_SCHEMA: dict[str, Any] = {"type": "object", "properties": {},
                                "additionalProperties": False}
_READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the skill's name, as skill_list gives it"},
        "path": {"type": "string", "description": "a file of the skill, relative to its folder "
                 "(default SKILL.md); e.g. references/forms.md"},
        "arguments": {"type": ["string", "array"], "items": {"type": "string"},
                      "description": "arguments for the skill (SKILL.md only): a text split "
                      "like a shell command line, or a list; they replace $ARGUMENTS, $0, $1 "
                      "… in its body, as text"},
    },
    "required": ["name"],
    "additionalProperties": False,
}
_DESCRIPTIONS = {
    "skill.list": "List the skills you may use: name, description, entry file, files, and the "
                  "folder exec sees them at (/skills/<name>).",
    "skill.read": "Read a skill's SKILL.md (default) or one of its files by a path relative to "
                  "the skill folder; with arguments, SKILL.md's body comes rendered with them.",
}


def skill_capability(key: str, resource_version_id: str,
                     bindings: SkillBindings) -> tuple[CapabilitySpec, SkillListHandler
                                                       | SkillReadHandler]:
    """The catalog entry and handler of ``skill.list`` or ``skill.read``."""
    spec = CapabilitySpec(
        resource_version_id=resource_version_id, capability_key=key, kind="builtin",
        exposed_name=legal_exposed_name(key), description=_DESCRIPTIONS[key],
        input_schema=_LIST_SCHEMA if key == "skill.list" else _READ_SCHEMA,
        handler_ref=f"builtin:{key}", schema_origin="config")
    return spec, SkillListHandler(bindings) if key == "skill.list" else SkillReadHandler(bindings)


class SkillListHandler:
    """``skill.list``: the calling role's model-visible skills."""

    rerunnable = False
    recoverable = False

    def __init__(self, bindings: SkillBindings) -> None:
        self.bindings = bindings

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        return ToolResult.success({"skills": [
            {"name": v.name, "description": v.description, "entry": v.entry,
             "path": f"{MOUNT_ROOT}/{v.name}", "version": v.digest[:12],
             "files": [f.path for f in v.files]}
            for v in self.bindings.visible(context.role)]})


class SkillReadHandler:
    """``skill.read``: one file of one of the calling role's skills, as UTF-8 text."""

    rerunnable = False
    recoverable = False

    def __init__(self, bindings: SkillBindings) -> None:
        self.bindings = bindings

    async def invoke_once(self, request: CapabilityRequest, context: AttemptContext) -> ToolResult:
        args = dict(request.arguments)
        name = str(args.get("name", ""))
        path = str(args.get("path") or "")
        try:
            version = self.bindings.version(context.role, name)
            path = path or version.entry
            norm = posixpath.normpath(path)
            if path.startswith("/") or "\\" in path or ".." in path.split("/") or norm != path:
                return _failed("SKILL_PATH_INVALID", "validation",
                               f"path {path!r} must be relative to the skill folder, without "
                               "'..', './' or '//' (e.g. references/forms.md)")
            data = self.bindings.read(version, path)
        except SkillImportError as exc:
            return _failed(exc.code, "not_found", exc.error.message)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return _failed("SKILL_FILE_BINARY", "validation",
                           f"{name}/{path} is not UTF-8 text ({len(data)} bytes); run it or "
                           f"read it with exec from {MOUNT_ROOT}/{name}/{path}")
        metadata: dict[str, Any] = {"skill": name, "path": path, "version": version.digest}
        arguments = args.get("arguments")
        if arguments is not None:
            if path != version.entry:
                return _failed("SKILL_ARGUMENTS_INVALID", "validation",
                               f"arguments render the skill's {version.entry} only, not {path}; "
                               "leave out path, or arguments")
            text = _rendered(text, arguments, version.metadata.get("arguments"))
            metadata["arguments"] = arguments
        return ToolResult.success(text, metadata=metadata)


def _failed(code: str, category: Any, message: str) -> ToolResult:
    return ToolResult(status="failed", error=OperationError(
        code=code, category=category, message=message, external_outcome="not_started"))


def _rendered(text: str, arguments: Any, declared: Any) -> str:
    """``SKILL.md`` ``text`` with its body (after the front matter) rendered with
    ``arguments``."""
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---" or end is None:
        return render_body(text, arguments, names=argument_names(declared))
    body = "\n".join(lines[end + 1:])
    return "\n".join(lines[:end + 1]) + "\n" + render_body(body, arguments,
                                                           names=argument_names(declared))
