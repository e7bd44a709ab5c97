"""Issue #37, point 6 (acceptance 4): examples/workflow/code_and_test through the CLI, as a
user runs it — a scripted coder agent writes a module and its test, and its ``outputs`` hands
them on as artifacts; a capability node runs ``pytest`` on them under the sandbox (granted, read
only, at ``$AGENTLOOM_INPUTS/code``); a reviewer agent reads the report and the module through
``fs.read /inputs/code/…`` and approves. On each confining backend there is: bubblewrap (a
mount namespace) and Landlock (none), each skipping with a one-line reason where it cannot run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloom.sandbox import landlock_available
from agentloom.sandbox.reach import can_make_mount_namespace

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "workflow" / "code_and_test"


def _sandbox_pytest() -> bool:
    """Whether the python3 a sandboxed command finds (``/usr/bin``) has pytest."""
    return subprocess.run(["/usr/bin/python3", "-c", "import pytest"], capture_output=True,
                          check=False).returncode == 0


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """Where the example runs: pytest's own folder (below ``0700`` ones), or — for a root
    runtime that may not make a mount namespace, whose commands run at the host's paths as
    another uid — a folder every user may search (issue #33)."""
    if os.geteuid() == 0 and not can_make_mount_namespace():
        made = Path(tempfile.mkdtemp(prefix="agentloom-example-"))
        made.chmod(0o711)
        yield made
        shutil.rmtree(made, ignore_errors=True)
        return
    yield tmp_path


@pytest.mark.parametrize("backend", ["bubblewrap", "landlock"])
def test_i37_6_code_and_test_hands_files_from_the_coder_to_pytest_and_the_reviewer(
    folder: Path, backend: str,
) -> None:
    if not _sandbox_pytest():
        pytest.skip("the sandbox's /usr/bin/python3 has no pytest (Debian: python3-pytest)")
    if backend == "bubblewrap" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install -y bubblewrap)")
    if backend == "bubblewrap" and not can_make_mount_namespace():
        pytest.skip("bubblewrap cannot make a mount namespace here")
    if backend == "landlock" and not landlock_available():
        pytest.skip("this kernel has no Landlock")
    project = folder / "code_and_test"
    shutil.copytree(EXAMPLE, project)
    config = project / "agentloom.yaml"
    text = config.read_text(encoding="utf-8")
    assert "sandbox: {allow_shell: true}" in text
    config.write_text(text.replace("sandbox: {allow_shell: true}",
                                   f"sandbox: {{allow_shell: true, backend: {backend}}}"),
                      encoding="utf-8")
    store = f"sqlite:///{folder / 'c.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "agentloom", "run", str(config), "--workflow", "code_and_test",
         "add two numbers", "--json", "--store", store],
        cwd=folder, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["output"] == \
        "Approved: both tests pass and src/calc.py adds two numbers."
    run_id = json.loads(done.stdout)["run_id"]
    shown = subprocess.run(
        [sys.executable, "-m", "agentloom", "runs", "show", run_id, "--json", "--store", store],
        cwd=folder, capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert {n["node"]: n["status"] for n in detail["nodes"]} == {
        "code": "succeeded", "test": "succeeded", "review": "succeeded"}
    assert "2 passed" in json.dumps(detail)
