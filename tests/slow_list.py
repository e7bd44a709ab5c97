"""Pick the slow tests from a run's durations (issue #36, 12) and write ``tests/slow.txt``.

    python -m pytest -q -n 3 --dist worksteal --durations=0 > durations.log
    python tests/slow_list.py durations.log [--threshold 0.6]

A test is slow when its setup, call and teardown together took ``--threshold`` seconds or
more in that run. A file whose every test is slow is listed once, as the file. The list is a
plain text file so that a review sees which tests moved in or out.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^\s*(?P<seconds>\d+(?:\.\d+)?)s\s+(?:setup|call|teardown)\s+(?P<nodeid>tests/\S+)")
HEADER = """\
# The slow tests: `pytest -m "not slow"` leaves them out (and every test marked `kill`).
# Made by `python tests/slow_list.py durations.log --threshold {threshold}` from a full run's
# `--durations=0` report: a test is listed when it took {threshold} s or more; a file whose every
# test did is listed as the file. One node id a line; `#` starts a comment.
"""


def durations(text: str) -> dict[str, float]:
    per_test: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        match = LINE.match(line)
        if match:
            per_test[match["nodeid"]] += float(match["seconds"])
    return dict(per_test)


def collected(root: Path) -> dict[str, int]:
    """How many tests each file has, as pytest collects them (for 'every test is slow')."""
    import subprocess

    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"],
                         cwd=root, capture_output=True, text=True, check=False).stdout
    counts: dict[str, int] = defaultdict(int)
    for line in out.splitlines():
        if "::" in line and line.startswith("tests/"):
            counts[line.split("::", 1)[0]] += 1
    return dict(counts)


def slow_list(per_test: dict[str, float], counts: dict[str, int], threshold: float) -> list[str]:
    slow = sorted(t for t, s in per_test.items() if s >= threshold)
    by_file: dict[str, list[str]] = defaultdict(list)
    for test in slow:
        by_file[test.split("::", 1)[0]].append(test)
    lines: list[str] = []
    for file, tests in sorted(by_file.items()):
        if counts.get(file, 0) and len(tests) >= counts[file]:
            lines.append(file)
        else:
            lines.extend(tests)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="the output of a run with --durations=0")
    parser.add_argument("--threshold", type=float, default=0.6, help="seconds (default 0.6)")
    args = parser.parse_args(argv)
    per_test = durations(args.log.read_text(encoding="utf-8", errors="replace"))
    if not per_test:
        parser.error(f"{args.log}: no durations found (run pytest with --durations=0)")
    root = Path(__file__).resolve().parents[1]
    lines = slow_list(per_test, collected(root), args.threshold)
    kept = sum(s for s in per_test.values() if s < args.threshold)
    (root / "tests" / "slow.txt").write_text(
        HEADER.format(threshold=args.threshold) + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} lines in tests/slow.txt; the other tests took {kept:.0f} s in all "
          f"({len(per_test)} tests with a duration)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
