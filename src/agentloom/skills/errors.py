"""The one exception a Skill import raises, and its stable codes.

::

    AgentLoomError                 (agentloom.errors)
    └── SkillImportError           a source, a member or a SKILL.md the import refused

A refusal always leaves nothing behind: the staging folder is deleted and no store row is
written. Each code below is stable; the category follows the spec's closed vocabulary.
"""

from __future__ import annotations

from typing import Final

from agentloom.errors import AgentLoomError, ErrorCategory

SOURCE_INVALID: Final = "SKILL_SOURCE_INVALID"  # not a folder / archive / allowed git URL
SOURCE_UNREACHABLE: Final = "SKILL_SOURCE_UNREACHABLE"  # the git server could not be read
COMMIT_INVALID: Final = "SKILL_COMMIT_INVALID"  # not 40 hex, or not in the repository
MEMBER_PATH: Final = "SKILL_MEMBER_PATH"  # absolute, `..`, empty, backslash, NUL, duplicate
MEMBER_LINK: Final = "SKILL_MEMBER_LINK"  # a symlink / hardlink leaving its skill folder
MEMBER_TYPE: Final = "SKILL_MEMBER_TYPE"  # a device, FIFO, socket, other special member
SIZE_LIMIT: Final = "SKILL_SIZE_LIMIT"  # a file, the total or the member count too large
RATIO_LIMIT: Final = "SKILL_RATIO_LIMIT"  # expands far beyond its compressed size (a bomb)
SUBMODULE: Final = "SKILL_SUBMODULE"  # a git submodule inside a skill folder
MANIFEST_INVALID: Final = "SKILL_MANIFEST_INVALID"  # SKILL.md missing, no front matter, bad value
FIELD_REFUSED: Final = "SKILL_FIELD_REFUSED"  # model / effort / context / agent
FIELD_UNKNOWN: Final = "SKILL_FIELD_UNKNOWN"  # a front-matter field no policy row names
NOT_FOUND: Final = "SKILL_NOT_FOUND"  # no SKILL.md in the source, or no skill of that name

_CATEGORIES: Final[dict[str, ErrorCategory]] = {
    SOURCE_INVALID: "validation",
    SOURCE_UNREACHABLE: "transport",
    COMMIT_INVALID: "validation",
    MEMBER_PATH: "permission",
    MEMBER_LINK: "permission",
    MEMBER_TYPE: "permission",
    SIZE_LIMIT: "validation",
    RATIO_LIMIT: "validation",
    SUBMODULE: "validation",
    MANIFEST_INVALID: "validation",
    FIELD_REFUSED: "validation",
    FIELD_UNKNOWN: "validation",
    NOT_FOUND: "not_found",
}


class SkillImportError(AgentLoomError):
    """A Skill import refused (nothing was stored). ``code`` is one of this module's
    constants; the message names the member, the field or the limit."""

    default_code = SOURCE_INVALID
    default_category: ErrorCategory = "validation"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code, category=_CATEGORIES.get(code, "validation"),
                         phase="validate")
