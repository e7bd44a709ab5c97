"""Issue #16 acceptance 1 (import half), 000 §6.1: a folder with three skills and a pinned
commit of a git repository served on 127.0.0.1 are imported; `skills list` / `show` report
them; versions are immutable and content-addressed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dulwich.repo import Repo
from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.skills import (
    SkillImportError,
    SourceSpec,
    file_bytes,
    import_skills,
    list_skills,
    skill_history,
)
from agentloom.store import open_store

from .support import EXECUTABLE, GITLINK, commit_files, git_server, skill_entries, write_skill


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _three(folder: Path) -> Path:
    write_skill(folder, "pdf", {"scripts/fill.py": "print('filled')\n",
                                "references/FORMS.md": "# forms\n"})
    write_skill(folder, "release-notes", {"assets/template.md": "## {version}\n"})
    write_skill(folder, "csv-clean", description="Cleans CSV files. Use for CSV input.")
    return folder


def test_issue16_a1_import_a_folder_with_three_skills_and_list_and_show_them(tmp_path: Path) -> None:
    skills = _three(tmp_path / "skills")
    url = f"sqlite:///{tmp_path / 'store.db'}"

    code, out, err = _cli("skills", "import", str(skills), "--store", url, "--json")

    assert code == 0, err
    report = json.loads(out)
    assert [(s["name"], s["status"], s["files"]) for s in report["skills"]] == [
        ("csv-clean", "new", 1), ("pdf", "new", 3), ("release-notes", "new", 2)]
    assert report["source"] == {"kind": "folder", "location": str(skills.resolve())}
    code, out, _ = _cli("skills", "list", "--store", url, "--json")
    listed = json.loads(out)
    assert [s["name"] for s in listed] == ["csv-clean", "pdf", "release-notes"]
    assert listed[1]["entry"] == "SKILL.md"
    assert listed[0]["description"] == "Cleans CSV files. Use for CSV input."
    code, out, _ = _cli("skills", "show", "pdf", "--store", url, "--json")
    shown = json.loads(out)
    assert [f["path"] for f in shown["files"]] == ["SKILL.md", "references/FORMS.md",
                                                   "scripts/fill.py"]
    assert shown["source"]["folder"] == "pdf" and shown["source"]["kind"] == "folder"
    assert len(shown["versions"]) == 1 and shown["versions"][0]["current"]
    code, out, _ = _cli("skills", "show", "pdf", "--store", url)
    assert code == 0 and "scripts/fill.py" in out
    code, _, err = _cli("skills", "show", "nope", "--store", url)
    assert code == 2 and "SKILL_NOT_FOUND" in err and "pdf" in err


def test_issue16_a1_versions_are_immutable_identical_reimport_is_the_same_version(
        tmp_path: Path) -> None:
    skills = _three(tmp_path / "skills")
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    first = {s.version.name: s.version for s in import_skills(SourceSpec(path=skills), store).skills}

    again = import_skills(SourceSpec(path=skills), store)
    assert {s.status for s in again.skills} == {"unchanged"}
    assert {s.version.name: s.version.digest for s in again.skills} == {
        n: v.digest for n, v in first.items()}
    assert len(store.query("skill_versions")) == 3

    (skills / "pdf" / "scripts" / "fill.py").write_text("print('changed')\n", encoding="utf-8")
    changed = {s.version.name: s for s in import_skills(SourceSpec(path=skills), store).skills}

    assert changed["pdf"].status == "new"
    assert changed["pdf"].version.digest != first["pdf"].digest
    assert changed["release-notes"].status == "unchanged"
    current, versions = skill_history(store, "pdf")
    assert current.digest == changed["pdf"].version.digest
    assert [v.digest for v in versions] == [first["pdf"].digest, current.digest]
    old = versions[0]  # the previous version is kept, bytes and all
    assert file_bytes(store, old, "scripts/fill.py") == b"print('filled')\n"
    assert file_bytes(store, current, "scripts/fill.py") == b"print('changed')\n"
    assert len(store.query("skill_versions")) == 4
    only = import_skills(SourceSpec(path=skills, subdir="csv-clean"), store)
    assert [(s.version.name, s.status) for s in only.skills] == [("csv-clean", "unchanged")]
    store.close()


@pytest.mark.usefixtures("loopback_http")
def test_issue16_a1_import_a_pinned_commit_from_a_git_repo_served_on_loopback(
        tmp_path: Path) -> None:
    repo = Repo.init(str(tmp_path / "origin"), mkdir=True)
    entries = {**skill_entries("pdf", {"scripts/fill.py": "print(1)\n"}, prefix="skills/"),
               **skill_entries("release-notes", prefix="skills/"),
               "skills/pdf/scripts/run.sh": (EXECUTABLE, b"#!/bin/sh\necho hi\n"),
               "README.md": (0o100644, b"# a repo with several skills\n")}
    pinned = commit_files(repo, entries)
    later = commit_files(repo, {**entries, **skill_entries(
        "pdf", {"scripts/fill.py": "print(2)\n"}, prefix="skills/")})
    url_store = f"sqlite:///{tmp_path / 'store.db'}"

    with git_server(repo) as url:
        code, out, err = _cli("skills", "import", url, "--commit", pinned, "--store", url_store,
                              "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["source"] == {"kind": "git", "location": url, "commit": pinned}
        assert [s["name"] for s in report["skills"]] == ["pdf", "release-notes"]
        store = open_store(url_store)
        pdf, _ = skill_history(store, "pdf")
        assert pdf.source.commit == pinned and pdf.source.folder == "skills/pdf"
        assert file_bytes(store, pdf, "scripts/fill.py") == b"print(1)\n"  # the pin, not HEAD
        assert {f.path: f.executable for f in pdf.files}["scripts/run.sh"] is True

        sub = import_skills(SourceSpec(git=url, commit=later, subdir="skills/pdf"), store)
        assert [(s.version.name, s.status) for s in sub.skills] == [("pdf", "new")]
        assert file_bytes(store, sub.skills[0].version, "scripts/fill.py") == b"print(2)\n"
        store.close()


@pytest.mark.usefixtures("loopback_http")
def test_issue16_a1_a_commit_that_is_no_full_pin_or_not_in_the_repo_is_refused(
        tmp_path: Path) -> None:
    repo = Repo.init(str(tmp_path / "origin"), mkdir=True)
    commit_files(repo, skill_entries("pdf"))
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    with git_server(repo) as url:
        with pytest.raises(SkillImportError) as short:
            import_skills(SourceSpec(git=url, commit="main"), store)
        with pytest.raises(SkillImportError) as missing:
            import_skills(SourceSpec(git=url, commit="0" * 39 + "1"), store)
    assert short.value.code == "SKILL_COMMIT_INVALID" and "40-hex" in str(short.value)
    assert missing.value.code == "SKILL_COMMIT_INVALID" and "not reachable" in str(missing.value)
    assert list_skills(store) == []
    store.close()


@pytest.mark.usefixtures("loopback_http")
def test_issue16_a2_a_submodule_is_skipped_and_reported_never_fetched(tmp_path: Path) -> None:
    repo = Repo.init(str(tmp_path / "origin"), mkdir=True)
    pinned = commit_files(repo, {**skill_entries("pdf"),
                                 "pdf/vendor": (GITLINK, b"1" * 40),
                                 ".gitmodules": (0o100644, b'[submodule "v"]\n\tpath = pdf/vendor'
                                                 b"\n\turl = https://example.org/v.git\n")})
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    with git_server(repo) as url:
        report = import_skills(SourceSpec(git=url, commit=pinned), store)
    assert [s.version.name for s in report.skills] == ["pdf"]
    assert [f.path for f in report.skills[0].version.files] == ["SKILL.md"]
    assert len(report.skipped) == 1 and report.skipped[0].startswith("pdf/vendor: submodule")
    store.close()
