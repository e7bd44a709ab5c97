"""Issue #16 acceptance 2 (store part), 000 §6.1 "存储只读版本": a stored skill version
round-trips through SQLite and PostgreSQL — metadata, source, file list and every byte
(a file over 1 MiB is stored in chunks) — and the v9 migration creates its tables."""

from __future__ import annotations

from pathlib import Path

from agentloom.skills import SourceSpec, file_bytes, import_skills, list_skills, skill_history
from agentloom.store import open_store
from agentloom.store.schema import MIGRATIONS

from .support import write_skill


def test_issue16_a2_a_stored_version_round_trips_on_sqlite_and_postgresql(
        durable_store_url: str, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    big = bytes(range(256)) * (5 << 12)  # 5 MiB: chunked
    skill = write_skill(skills, "pdf", {"scripts/run.sh": "#!/bin/sh\necho ok\n"},
                        extra="license: MIT\nmetadata: {team: docs}\nuser-invocable: false\n"
                              "allowed-tools: Read Bash(python:*)\n"
                              "hooks: {PreToolUse: [{matcher: Bash, hooks: []}]}\n")
    (skill / "assets" / "blob.bin").parent.mkdir()
    (skill / "assets" / "blob.bin").write_bytes(big)
    (skill / "scripts" / "run.sh").chmod(0o755)
    store = open_store(durable_store_url)
    imported = import_skills(SourceSpec(path=skills), store).skills[0].version
    store.close()

    reopened = open_store(durable_store_url)
    try:
        [listed] = list_skills(reopened)
        current, versions = skill_history(reopened, "pdf")
        assert listed == current == imported
        assert [v.digest for v in versions] == [imported.digest]
        assert current.metadata == {"name": "pdf", "description": imported.description,
                                    "license": "MIT", "metadata": {"team": "docs"},
                                    "user-invocable": False,
                                    "allowed-tools": ["Read", "Bash(python:*)"]}
        assert current.hooks == {"PreToolUse": [{"matcher": "Bash", "hooks": []}]}
        assert current.source.kind == "folder" and current.source.folder == "pdf"
        assert file_bytes(reopened, current, "assets/blob.bin") == big
        assert file_bytes(reopened, current, "scripts/run.sh") == b"#!/bin/sh\necho ok\n"
        assert {f.path: f.executable for f in current.files} == {
            "SKILL.md": False, "assets/blob.bin": False, "scripts/run.sh": True}
        again = import_skills(SourceSpec(path=skills), reopened).skills[0]
        assert again.status == "unchanged" and len(reopened.query("skill_versions")) == 1
    finally:
        reopened.close()


def test_issue16_skills_tables_come_from_one_appended_migration() -> None:
    [migration] = [m for m in MIGRATIONS if "imported Skills" in m.summary]
    summary = migration.summary
    assert summary.startswith(f"v{[m.summary for m in MIGRATIONS].index(summary) + 1}: ")
    assert set(migration.sql) == {"sqlite", "postgresql"}
    for ddl in (migration.ddl("sqlite"), migration.ddl("postgresql")):
        assert "CREATE TABLE skills (" in ddl and "CREATE TABLE skill_versions (" in ddl
