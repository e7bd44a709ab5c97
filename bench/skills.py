"""Skills benchmark: what a role's skill list adds to its system prompt (issue 16,
acceptance 5).

Run from the repository root::

    python bench/skills.py                  # 200 skills
    python bench/skills.py --skills 500 --json
    python bench/skills.py --check          # exit status 1 when the target fails

Writes ``--skills`` skill folders (name, a one-sentence description of 60-200 characters,
a body of ~2 KB and a script each), imports them into an in-memory store through the real
import pipeline, binds them all to one role (``skills: "*"``) and measures the UTF-8 bytes
the listing (``skills.runtime.skill_listing``, what ``assembly/agents.py`` appends to the
agent's instructions) adds to the system prompt: the figure is bytes per 10 skills, header
included. It also says how many of those bytes are the names and descriptions themselves,
and checks that no body byte reaches the prompt.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentloom.skills import SourceSpec, import_skills
from agentloom.skills.runtime import role_versions, skill_listing
from agentloom.store import open_store

# The target: the only constant this script prints that it did not measure.
TARGET_BYTES_PER_10 = 2048  # 200 skills add ≤ 2 KB to the system prompt per 10 skills

_VERBS = ("Extracts", "Summarises", "Converts", "Checks", "Drafts", "Formats", "Validates",
          "Reviews", "Generates", "Merges")
_OBJECTS = ("PDF forms", "release notes", "spreadsheets", "API changelogs", "SQL migrations",
            "meeting transcripts", "Terraform plans", "invoices", "test reports", "slide decks")
_WHEN = ("Use when the user asks for it.", "Use when a file of that kind is attached.",
         "Use before publishing a release, and when a reviewer asks for a second pass over "
         "the team's documents.", "Use for any request that mentions them.")


def _description(rng: random.Random) -> str:
    text = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)} and {rng.choice(_OBJECTS)}. " \
           f"{rng.choice(_WHEN)}"
    return text[:200]


def measure(count: int, seed: int = 16) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "skills"
        body = "BODY " * 400
        for i in range(count):
            name = f"skill-{i:03d}-{rng.choice(_OBJECTS).split()[0].lower()}"
            folder = root / name
            (folder / "scripts").mkdir(parents=True)
            (folder / "SKILL.md").write_text(
                f"---\nname: {name}\ndescription: {_description(rng)}\n---\n{body}\n",
                encoding="utf-8")
            (folder / "scripts" / "run.py").write_text("print('hi')\n", encoding="utf-8")
        store = open_store("memory://")
        try:
            import_skills(SourceSpec(path=root), store)
            versions = role_versions(store, "*")
        finally:
            store.close()
    listing = skill_listing(versions)
    added = len(("\n\n" + listing).encode("utf-8"))
    own = sum(len(v.name.encode()) + len(" ".join(v.description.split()).encode())
              for v in versions)
    per_10 = added * 10 / count
    return {"skills": count, "bytes_added": added, "bytes_per_10_skills": round(per_10, 1),
            "name_and_description_bytes_per_10": round(own * 10 / count, 1),
            "target_bytes_per_10_skills": TARGET_BYTES_PER_10,
            "body_in_prompt": "BODY" in listing, "ok": per_10 <= TARGET_BYTES_PER_10
            and "BODY" not in listing}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target fails")
    args = parser.parse_args(argv)
    result = measure(args.skills)
    table = sys.stderr if args.json else sys.stdout
    print(f"skills listed                          {result['skills']}", file=table)
    print(f"bytes added to the system prompt       {result['bytes_added']}", file=table)
    print(f"bytes per 10 skills                    {result['bytes_per_10_skills']}  "
          f"(target ≤ {TARGET_BYTES_PER_10}: {'ok' if result['ok'] else 'FAILED'})", file=table)
    print(f"  of which names + descriptions        "
          f"{result['name_and_description_bytes_per_10']}", file=table)
    print(f"skill bodies in the prompt             {'yes' if result['body_in_prompt'] else 'no'}",
          file=table)
    if args.json:
        print(json.dumps(result))
    return 1 if args.check and not result["ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
