"""Issue #34 (LOW): a SKILL.md whose front matter nests YAML thousands of levels deep was an
``INTERNAL_ERROR`` (a RecursionError inside PyYAML). It is ``SKILL_MANIFEST_INVALID`` naming
the file, through the real CLI in a process of its own, and nothing is stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentloom.skills import SkillImportError
from agentloom.skills.manifest import parse_manifest
from agentloom.store import open_store

DEEP = {
    "flow": "metadata: " + "[" * 5000 + "]" * 5000 + "\n",
    "block": "hooks:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 3000)) + "  " * 3000
             + "x: 1\n",
}


def _skill(folder: Path, extra: str) -> Path:
    skill = folder / "deep"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: deep\ndescription: Deep. Use never.\n{extra}---\n"
                                    "# Steps\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("shape", sorted(DEEP))
def test_i34_skill_front_matter_nested_too_deep_is_manifest_invalid(shape: str) -> None:
    with pytest.raises(SkillImportError) as caught:
        parse_manifest(f"---\nname: deep\ndescription: d\n{DEEP[shape]}---\n", folder="s/deep",
                       folder_name="deep")
    assert caught.value.code == "SKILL_MANIFEST_INVALID"
    assert "s/deep/SKILL.md: the front matter is not valid YAML" in str(caught.value)
    assert "nested more than" in str(caught.value)


def test_i34_skills_import_of_a_too_deep_front_matter_reports_manifest_invalid(
    tmp_path: Path,
) -> None:
    skills = _skill(tmp_path / "skills", DEEP["flow"])
    url = f"sqlite:///{tmp_path / 'store.db'}"

    done = subprocess.run([sys.executable, "-m", "agentloom", "skills", "import", str(skills),
                           "--store", url, "--json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)

    error = json.loads(done.stdout)["error"]
    assert error["code"] == "SKILL_MANIFEST_INVALID", done.stderr
    assert "deep/SKILL.md: the front matter is not valid YAML" in error["message"]
    assert "nested more than" in error["message"]
    assert done.returncode != 0 and "Traceback" not in done.stderr
    store = open_store(url)
    try:
        assert store.query("skill_versions") == []
    finally:
        store.close()
