"""Build-time benchmark (issue #34): building a configuration of many agents that share a few
tools.

Run from the repository root::

    python bench/many_agents.py                    # 100 and 1,000 agents
    python bench/many_agents.py --agents 100,1000,2000 --json

For each ``--agents`` size it writes, in a fresh temporary folder, an ``agentloom.yaml`` of that
many agents on the offline ``{builtin: test}`` model, every agent listing the same three SDK
tools (``tools_i34:echo``, ``:add``, ``:note`` — three distinct input schemas, in a module beside
the file) and two built-ins, and builds it the way ``agentloom run`` does: ``load_config``, then
``agentloom.assembly.runtime_from_config`` (check, catalogs, agent specs, the release
published: every schema compiled). Each size runs in a fresh interpreter, so no process-wide
cache is warm. Printed per size: seconds to load, to build, and both; the schema compiles the
build made (``catalog.registry``'s calls of ``compile_schema``) and the capabilities it
published; and the build time per agent, whose growth across sizes shows whether the build is
linear.

Every figure printed is measured in this run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS_MODULE = '''\
from agentloom import StrictInput, Tool


class EchoInput(StrictInput):
    text: str


class Echo(Tool[EchoInput]):
    name = "echo"
    description = "Say the text back."

    async def execute(self, args, ctx):
        return args.text


class AddInput(StrictInput):
    a: int
    b: int


class Add(Tool[AddInput]):
    name = "add"
    description = "Add two numbers."

    async def execute(self, args, ctx):
        return str(args.a + args.b)


class NoteInput(StrictInput):
    title: str
    body: str = ""
    tags: list[str] = []


class Note(Tool[NoteInput]):
    name = "note"
    description = "Write a note."

    async def execute(self, args, ctx):
        return args.title


echo = Echo()
add = Add()
note = Note()
'''


def write_config(folder: Path, agents: int) -> Path:
    """``agentloom.yaml`` of ``agents`` agents sharing three SDK tools and two built-ins."""
    (folder / "tools_i34.py").write_text(TOOLS_MODULE)
    lines = ["version: 1", "agents:"]
    for i in range(agents):
        lines += [f"  a{i:04d}:", "    model: {builtin: test}", f"    instructions: agent {i}",
                  "    tools: [tools_i34:echo, tools_i34:add, tools_i34:note, fs.read, fs.write]"]
    path = folder / "agentloom.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(agents: int) -> dict[str, Any]:
    """Load and build ``agents`` agents in this interpreter (``--one``)."""
    from agentloom.assembly import runtime_from_config
    from agentloom.catalog import registry
    from agentloom.config import load_config

    compiles = 0
    compile_schema = registry.compile_schema

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal compiles
        compiles += 1
        return compile_schema(*args, **kwargs)

    registry.compile_schema = counted  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as temp:
        path = write_config(Path(temp), agents)
        t0 = time.perf_counter()
        config = load_config(path)
        t1 = time.perf_counter()
        runtime = runtime_from_config(config, store=f"sqlite:///{temp}/store.db")
        t2 = time.perf_counter()
        published = len(runtime.kernel.registry.for_role(runtime.release_id, "a0000").specs)
        runtime.store.close()
    return {"agents": agents, "load_s": t1 - t0, "build_s": t2 - t1, "total_s": t2 - t0,
            "build_ms_per_agent": (t2 - t1) * 1000 / agents, "schema_compiles": compiles,
            "catalog_of_a0000": published}


def run_one(agents: int) -> dict[str, Any]:
    """``measure(agents)`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, __file__, "--one", str(agents)], check=True,
                         capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default="100,1000", help="comma-separated sizes")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return 0
    results = []
    for size in (int(s) for s in args.agents.split(",")):
        print(f"… {size} agents", file=sys.stderr, flush=True)
        results.append(run_one(size))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'agents':>7} {'load s':>8} {'build s':>8} {'total s':>8} {'ms/agent':>9} "
          f"{'compiles':>9} {'catalog':>8}")
    for r in results:
        print(f"{r['agents']:>7} {r['load_s']:>8.2f} {r['build_s']:>8.2f} {r['total_s']:>8.2f} "
              f"{r['build_ms_per_agent']:>9.2f} {r['schema_compiles']:>9} "
              f"{r['catalog_of_a0000']:>8}")
    first, last = results[0], results[-1]
    if len(results) > 1:
        print(f"build time x{last['build_s'] / first['build_s']:.1f} for "
              f"x{last['agents'] / first['agents']:.0f} agents")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    raise SystemExit(main())
