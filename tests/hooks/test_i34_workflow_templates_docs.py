"""Issue #34 (LOW): workflow templates (``{{ nodes.x.output }}``) are put in as raw text, so a
template inside ``sh -c`` (or an ``exec`` ``shell_script``) lets a node's output inject shell,
and the docs said nothing. docs/workflows.md now warns where templates meet commands and shows
the safe forms; no example in docs/ or examples/ puts a template where a shell reads it; and the
documented safe forms, rendered with a hostile output and run, keep it as data."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from agentloom.squad.templates import render_args

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS_DOC = ROOT / "docs" / "workflows.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}
SHELL_C_LINE = re.compile(r"""\b(?:ba|da|z|k)?sh\b["']?\s*,?\s*["']?-c\b""")
HOSTILE = "x\"; touch pwned; echo $(touch pwned2) `touch pwned3` '$HOME"


def _code_blocks() -> Iterator[tuple[str, str, str]]:
    """``(where, language, text)`` of every code block of docs/*.md."""
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text[: match.start()].count("\n") + 1
            yield f"{doc.name}:{line}", match[1], match[2]


def _workflow_nodes(data: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(data, dict) or not isinstance(data.get("workflows"), dict):
        return
    for flow, spec in data["workflows"].items():
        for name, node in ((spec or {}).get("nodes") or {}).items():
            if isinstance(node, dict):
                yield f"{flow}.{name}", node


def _shell_reads_a_template(args: Any) -> bool:
    """Whether a template stands where a shell reads it as code: a ``shell_script``, or an argv
    element after the ``-c`` of a shell (even behind ``env``, ``xargs``, …)."""
    if not isinstance(args, dict):
        return False
    if "{{" in str(args.get("shell_script", "")):
        return True
    argv = [str(a) for a in args.get("argv") or ()]
    for i, item in enumerate(argv):
        if item.rsplit("/", 1)[-1] in SHELLS and "-c" in argv[i + 1:]:
            script_at = argv.index("-c", i + 1) + 1
            return any("{{" in a for a in argv[script_at:])
    return False


def test_i34_workflow_docs_warn_that_templates_are_raw_text_next_to_commands() -> None:
    text = WORKFLOWS_DOC.read_text(encoding="utf-8")
    section = text[text.index("### Templates are raw text: never inside a shell command"):]
    section = section[: section.index("\n## ")]
    for phrase in ["**raw text**", "`shell_script`", "`sh -c` / `bash -c`", "is an injection",
                   "**an argv element of its own**", "(`env_patch`)", "`\"$NAME\"`",
                   "`fs.write` node"]:
        assert phrase in section, phrase
    assert text.index("## Templates") < text.index("### Templates are raw text")


def test_i34_no_docs_or_example_puts_a_template_inside_a_shell_command() -> None:
    checked = 0
    sources = [(where, lang, body) for where, lang, body in _code_blocks()]
    sources += [(str(p.relative_to(ROOT)), "yaml", p.read_text(encoding="utf-8"))
                for p in sorted((ROOT / "examples").rglob("*.yaml"))]
    for where, lang, body in sources:
        if lang in ("yaml", "yml"):
            for name, node in _workflow_nodes(yaml.safe_load(body)):
                checked += 1
                assert not _shell_reads_a_template(node.get("args")), f"{where}: node {name}"
        else:
            for line in body.splitlines():
                assert not ("{{" in line and (SHELL_C_LINE.search(line) or "shell_script" in line)
                            ), f"{where}: {line}"
    assert checked >= 10  # the workflow examples were found and read

    # the check itself: it finds the forms the warning names
    assert _shell_reads_a_template({"argv": ["sh", "-c", "echo {{ nodes.x.output }}"]})
    assert _shell_reads_a_template({"argv": ["env", "bash", "-c", "x {{ input.task }}"]})
    assert _shell_reads_a_template({"shell_script": "echo {{ nodes.x.output }}"})
    assert not _shell_reads_a_template({"argv": ["echo", "{{ nodes.x.output }}"]})


def test_i34_the_documented_safe_forms_keep_a_hostile_output_as_data(tmp_path: Path) -> None:
    text = WORKFLOWS_DOC.read_text(encoding="utf-8")
    (block,) = [body for _, lang, body in _code_blocks() if "keep_note:" in body]
    nodes = dict(_workflow_nodes(yaml.safe_load(block)))
    outputs = {"write": HOSTILE}
    assert "keep_note" in text
    for name in ("keep_note.show", "keep_note.keep"):
        args = render_args(nodes[name]["args"], task="t", outputs=outputs)
        assert nodes[name]["capability"] == "exec"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **args.get("env_patch", {})}
        done = subprocess.run(args["argv"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        if name.endswith("show"):
            assert done.stdout == HOSTILE + "\n"
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == HOSTILE + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing injected ran
