"""Issue 36 (7): `agentloom run` imports the config's `path` skill sources whose content changed
(the versions and checks of `agentloom skills import`), one stderr line per new version; git
sources stay explicit, and the message that says so names the real config file.

Through the CLI (`run --json`, `skills show --json`) on a config in a private folder, the
offline script model reading the skill with `skill_read`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .support import Cli

TURNS = """\
turns:
  - tool_calls:
      - {name: skill_read, arguments: {name: pdf}}
  - text: done
"""

LINE = re.compile(r"^skill 'pdf' imported from \./skills/pdf: version sha256:([0-9a-f]{12})$",
                  re.MULTILINE)


def _project(tmp_path: Path, *, sources: str = "  - {path: ./skills}\n",
             skills: str = '["*"]', tools: str = "[fs.read, skill.read, result.read]") -> Path:
    folder = tmp_path / "proj"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    (folder / "skills" / "pdf").mkdir(parents=True)
    _write_skill(folder, "# Steps\nFill the form.\n")
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        f"version: 1\nskills:\n{sources}agents:\n  main:\n"
        "    model: {builtin: script, path: turns.yaml}\n"
        f"    tools: {tools}\n    skills: {skills}\n", encoding="utf-8")
    return config


def _write_skill(folder: Path, body: str, *, extra: str = "") -> None:
    (folder / "skills" / "pdf" / "SKILL.md").write_text(
        f"---\nname: pdf\ndescription: Fill PDF forms. Use when asked.\n{extra}---\n{body}",
        encoding="utf-8")


def _run(cli: Cli, config: Path, task: str = "fill it", exit_code: int = 0) -> tuple[dict[str, Any], str]:
    result = cli("run", str(config), task, "--json")
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    return json.loads(result.stdout), result.stderr


def _skill_read_output(cli: Cli, config: Path, run_id: str) -> str:
    shown = cli.json("runs", "show", run_id, "--config", str(config))
    return json.dumps([op for op in shown["operations"] if op["capability"] == "skill.read"])


def test_i36_7_run_imports_a_changed_path_source_once_per_version(cli: Cli, tmp_path: Path) -> None:
    config = _project(tmp_path)

    first, err1 = _run(cli, config)
    assert first["status"] == "succeeded"
    lines1 = LINE.findall(err1)
    assert len(lines1) == 1, err1
    assert "Fill the form." in _skill_read_output(cli, config, first["run_id"])

    _write_skill(config.parent, "# Steps\nFill the form, then sign it.\n")
    second, err2 = _run(cli, config)
    lines2 = LINE.findall(err2)
    assert len(lines2) == 1 and lines2 != lines1, err2
    # the run bound the new version: skill_read served the changed text
    assert "then sign it" in _skill_read_output(cli, config, second["run_id"])

    third, err3 = _run(cli, config)
    assert third["status"] == "succeeded"
    assert "skill 'pdf'" not in err3, err3

    shown = cli.json("skills", "show", "pdf", "--config", str(config))
    assert [v["digest"][:12] for v in shown["versions"]] == [*lines1, *lines2]
    assert shown["digest"][:12] == lines2[0]


def test_i36_7_run_goes_back_to_an_earlier_version_with_one_line(cli: Cli, tmp_path: Path) -> None:
    config = _project(tmp_path)
    _, err1 = _run(cli, config)
    _write_skill(config.parent, "# Steps\nSomething else.\n")
    _run(cli, config)
    _write_skill(config.parent, "# Steps\nFill the form.\n")  # the first content again
    _, err3 = _run(cli, config)
    first = LINE.findall(err1)[0]
    assert f"skill 'pdf' from ./skills/pdf: back to version sha256:{first} (imported before)" \
        in err3, err3
    assert len(cli.json("skills", "show", "pdf", "--config", str(config))["versions"]) == 2


def test_i36_7_run_refuses_a_changed_skill_as_skills_import_does(cli: Cli, tmp_path: Path) -> None:
    config = _project(tmp_path)
    _write_skill(config.parent, "# Steps\n", extra="model: gpt-5\n")
    out, _ = _run(cli, config, exit_code=2)
    assert out["error"]["code"] == "SKILL_FIELD_REFUSED"
    assert out["error"]["message"].startswith("skills[0] (./skills): pdf/SKILL.md: field 'model' "
                                              "is refused"), out
    assert cli.json("skills", "list", "--config", str(config)) == []  # nothing stored


def test_i36_7_an_unknown_field_names_the_import_that_lets_it_by(cli: Cli, tmp_path: Path) -> None:
    config = _project(tmp_path)
    _write_skill(config.parent, "# Steps\n", extra="foo: 1\n")
    out, _ = _run(cli, config, exit_code=2)
    assert out["error"]["code"] == "SKILL_FIELD_UNKNOWN"
    assert f"agentloom skills import --config {config} --allow-unknown" in out["error"]["message"]
    imported = cli("skills", "import", "--config", str(config), "--allow-unknown")
    assert imported.exit_code == 0, imported.stderr
    ran, err = _run(cli, config)  # the same content is that version: not checked again
    assert ran["status"] == "succeeded" and "skill 'pdf'" not in err, err


def test_i36_7_git_sources_stay_explicit_and_the_message_names_the_config(
        cli: Cli, tmp_path: Path) -> None:
    commit = "3f2c9a4e1b7d8c6f5a4b3c2d1e0f9a8b7c6d5e4f"
    config = _project(tmp_path, skills="[pdf, release-notes]", sources=(
        "  - {path: ./skills}\n"
        f"  - {{git: 'https://example.org/team/skills.git', commit: {commit}}}\n"))
    out, err = _run(cli, config, exit_code=2)
    message = out["error"]["message"]
    assert "agents.main.skills[1]: no imported skill named 'release-notes'" in message, message
    assert message.endswith(f"import it first: agentloom skills import --config {config}")
    assert "<this file>" not in message
    assert LINE.search(err), err  # the path source was imported all the same
