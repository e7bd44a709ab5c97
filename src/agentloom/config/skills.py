"""``skills:`` — the Skill sources a configuration imports, and an agent's ``skills:`` list
(docs/config.md#skills, docs/skills.md).

::

    skills:
      - {path: ./skills}                      # every skill folder (holding SKILL.md) below
      - {git: "https://example.org/team/skills.git", commit: <40 hex>, subdir: pdf}
    agents:
      main:
        skills: [pdf, release-notes]          # or "*" (or ["*"]): every imported skill
        hooks:
          - {skill: pdf}                      # bind every hook the skill 'pdf' declares
          - {skill: release-notes, hook: "PreToolUse[0].hooks[0]"}   # or just that one

Owns: the shape of a source entry, of an agent's skill names and of a ``{skill: …}`` hooks
entry. Does not own: importing
(``agentloom.skills``) nor checking the names against what was imported
(``agentloom.skills.configured``).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from agentloom.config._problems import shown

__all__ = ["AgentSkills", "SkillHooksConfig", "SkillSourceConfig", "skill_name"]

SKILL_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def skill_name(value: str) -> str:
    if len(value) > 64 or not SKILL_NAME.match(value):
        raise ValueError(f"{value!r} is not a skill name (1-64 lowercase letters, digits and "
                         "single '-'); write the name from its SKILL.md")
    return value


def _every(value: object) -> object:
    """``["*"]`` is ``"*"``; ``"*"`` beside names, or anything but names or ``"*"``, is refused
    here, as one problem (not one per member of the union)."""
    if value == "*":
        return value
    if not isinstance(value, list | tuple):
        raise ValueError(f"must be a list of skill names, or \"*\" for every imported skill "
                         f"(got {shown(value)})")
    if "*" in value:
        if len(value) == 1:
            return "*"
        raise ValueError("\"*\" means every imported skill: write skills: \"*\" alone, or "
                         "only names")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ValueError(f"[{i}] must be a skill name (got {shown(item)})")
        try:
            skill_name(item)
        except ValueError as exc:
            raise ValueError(f"[{i}] {exc}, or skills: \"*\" for every imported skill") from None
    return value


AgentSkills = Annotated[Literal["*"] | tuple[Annotated[str, AfterValidator(skill_name)], ...],
                        BeforeValidator(_every)]
"""An agent's ``skills:``: skill names, or ``"*"`` (also written ``["*"]``) for every imported
skill."""


class SkillSourceConfig(BaseModel):
    """One entry of ``skills:``: a local ``path`` (a folder or an archive, relative to the
    config file's folder) or a ``git`` URL pinned to a full ``commit``; ``subdir`` narrows
    either to a folder inside it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = Field(default=None, min_length=1)
    git: str | None = Field(default=None, min_length=1)
    commit: str | None = None
    subdir: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_source(self) -> SkillSourceConfig:
        if (self.path is None) == (self.git is None):
            raise ValueError("give exactly one of path (a folder or archive) or git (a URL)")
        if self.git is not None and (self.commit is None or not COMMIT.match(self.commit)):
            raise ValueError("git needs commit: the full 40-hex commit id (a branch or tag is "
                             "not a pin)")
        if self.path is not None and self.commit is not None:
            raise ValueError("commit is for a git source; remove it")
        return self


class SkillHooksConfig(BaseModel):
    """An entry of an agent's ``hooks:`` binding the hooks a skill's front matter declares
    (Claude Code's hook shape, converted as ``agentloom hooks import-claude`` converts them):
    all of them, or only ``hook`` — its id in the skill, ``<Event>[<i>].hooks[<j>]``. The
    skill must be in the agent's ``skills:``; the hooks come from the version the release
    binds (docs/skills.md#hooks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    skill: Annotated[str, AfterValidator(skill_name)]
    hook: str | None = Field(default=None, min_length=1)
