"""Agent Skills import (000 §6.1): folders, archives and pinned git commits become immutable,
content-addressed versions in the store.

::

    import_skills(SourceSpec, store)
        ├─ _folder / _archive / _git   stage every member in a private folder, checked
        ├─ manifest                    SKILL.md front matter held to the §6.1 policy table
        └─ versions                    content digest ─► skills / skill_versions / blobs

Owns: sources and their URL policy, member checks (paths, links, types, sizes, zip-bomb
ratio), the metadata policy, version digests and their rows, checking an agent's ``skills:``
names, importing a config's changed ``path`` sources before a run and binding them to
versions for a release (``configured``), their run-time use: the
system-prompt listing, tool narrowing and ``/skills`` folders (``runtime``) and the
``skill.list`` / ``skill.read`` tools (``tools``). Does not own: the sandbox's mounts
(``sandbox``), the hook schema the inert ``hooks`` resources will be bound through
(``hooks``), the CLI (``cli/skills.py``).
"""

from agentloom.skills.configured import (
    AgentSkillSet,
    ChangedSkill,
    agent_skills,
    import_changed_paths,
    import_configured,
)
from agentloom.skills.errors import SkillImportError
from agentloom.skills.limits import DEFAULT_LIMITS, ImportLimits
from agentloom.skills.manifest import Manifest, parse_manifest
from agentloom.skills.service import ImportedSkill, ImportReport, SourceSpec, import_skills
from agentloom.skills.versions import (
    SkillFile,
    SkillSource,
    SkillVersion,
    file_bytes,
    get_version,
    list_skills,
    skill_history,
)

__all__ = [
    "DEFAULT_LIMITS",
    "AgentSkillSet",
    "ChangedSkill",
    "ImportLimits",
    "ImportReport",
    "ImportedSkill",
    "Manifest",
    "SkillFile",
    "SkillImportError",
    "SkillSource",
    "SkillVersion",
    "SourceSpec",
    "agent_skills",
    "file_bytes",
    "get_version",
    "import_changed_paths",
    "import_configured",
    "import_skills",
    "list_skills",
    "parse_manifest",
    "skill_history",
]
