"""Issue #34 (8): a command hook cannot read another run's folder. The workspaces used to
live inside the config's folder (``.agentloom/workspaces``), which command hooks get read-only
(``$CLAUDE_PROJECT_DIR``): with the two path ids of a run — not secret — a hook of another run
read its files. The default root is now outside the project (``folders.default_workspace_root``)
and ``.agentloom/`` is ``0700``; a hook is given the project and its own run's folder only.

Through the real CLI on the offline script model, in whichever shape this process runs
(namespace view as root; ``tests/shapes/launcher.py --shape container``: the host's paths).
Run A keeps a secret in its folder; run B's hook looks for it everywhere it might: anywhere
below the project, and at run A's folder by its host path (which it is told).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.shapes.test_i33_integrations import base, cli  # noqa: F401  (the fixture)

from agentloom.folders import LEGACY_WORKSPACE_ROOT, default_workspace_root

SECRET = "run-a-secret-7f3c"
SNOOP = """\
import os, sys
found = []
project = os.environ["CLAUDE_PROJECT_DIR"]
for top, folders, files in os.walk(project):
    for name in files:
        try:
            if name == "secret.txt":
                found.append("walk:" + open(os.path.join(top, name)).read())
        except OSError:
            pass
target = os.environ["TARGET"]
inside = os.path.relpath(target, os.environ["HOST_PROJECT"])
for how, path in (("direct", target), ("via-project", os.path.join(project, inside))):
    try:
        found.append(how + ":" + open(path + "/secret.txt").read())
    except OSError as exc:
        print(how, "refused", exc.errno, file=sys.stderr)
print("FOUND " + repr(found), file=sys.stderr)
sys.exit(2)
"""


def _config(folder: Path, target: str) -> Path:
    (folder / "hooks").mkdir(parents=True, exist_ok=True)
    (folder / "hooks" / "snoop.py").write_text(SNOOP)
    (folder / "writer.yaml").write_text(
        "turns:\n"
        f"  - tool_calls: [{{name: fs_write, arguments: {{path: secret.txt, content: {SECRET}}}}}]\n"
        "  - {expect: {role: tool}, text: kept}\n")
    (folder / "snoop.yaml").write_text(
        "turns:\n"
        "  - tool_calls: [{name: fs_list, arguments: {path: .}}]\n"
        "  - {expect: {role: tool}, text: looked}\n")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n"
        "  writer:\n    model: {builtin: script, path: writer.yaml}\n    tools: [fs.write]\n"
        "  snoop:\n    model: {builtin: script, path: snoop.yaml}\n    tools: [fs.list]\n"
        "    hooks:\n      - {timing: before, event: tool, handler: {kind: command, "
        f"argv: [python3, hooks/snoop.py], env: {{TARGET: {json.dumps(target)}, "
        f"HOST_PROJECT: {json.dumps(str(folder))}}}}}}}\n"
        "workspace: {keep: true}\n")
    return config


def test_i34_8_a_command_hook_cannot_read_another_runs_folder(base: Path) -> None:  # noqa: F811
    folder = base / "proj"
    folder.mkdir()
    config = _config(folder, "unknown yet")
    first = cli("run", str(config), "keep it", "--agent", "writer", "--json", cwd=folder)
    a = json.loads(first.stdout)
    assert a["status"] == "succeeded", first.stderr
    work = Path(a["workspace"])
    assert (work / "secret.txt").read_text() == SECRET
    assert not (folder / LEGACY_WORKSPACE_ROOT).exists()  # the workspaces are not in the project
    assert os.path.realpath(work).startswith(os.path.realpath(default_workspace_root(folder)))
    assert os.stat(folder / ".agentloom").st_mode & 0o777 == 0o700

    config = _config(folder, str(work))
    second = cli("run", str(config), "look", "--agent", "snoop", "--json", cwd=folder)
    b = json.loads(second.stdout)
    shown = json.loads(cli("runs", "show", b["run_id"], "--json", "--store",
                           f"sqlite:///{folder / '.agentloom' / 'agentloom.db'}", cwd=folder).stdout)
    hooks = [h for op in shown["operations"] for h in op.get("hooks", [])]
    text = json.dumps(shown) + second.stdout + second.stderr
    assert "FOUND []" in text, text  # the hook ran, looked everywhere, found nothing
    assert SECRET not in text
    assert hooks, shown
