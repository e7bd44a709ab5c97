"""Run the ``agentloom`` command as a process whose clock is off (issue #34, 2)::

    python -m agentloom.testing.skewed_clock --offset-s 3600 -- worker CONFIG --store URL

This process's ``time.time()`` (and ``time.time_ns()``) read ``--offset-s`` seconds ahead
(negative: behind) of the machine's clock, as on a machine whose clock drifted; the store's
clock — the database server's, or the kernel clock SQLite reads — stays true, as another
machine's would. Monotonic clocks are untouched (``unshare -T`` moves only those, never the
wall clock). What the chaos bench and the skew tests run a worker with; Debian's ``faketime``
does the same to every library of a process, where it is installed.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["main", "skew"]


def skew(offset_s: float) -> None:
    """From now on this process's wall clock reads ``offset_s`` seconds off."""
    true_time, true_time_ns = time.time, time.time_ns
    time.time = lambda: true_time() + offset_s
    time.time_ns = lambda: true_time_ns() + int(offset_s * 1e9)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m agentloom.testing.skewed_clock",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--offset-s", type=float, required=True,
                        help="seconds this process's clock reads ahead (negative: behind)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- then the agentloom command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the agentloom command to run after --")
    skew(args.offset_s)
    from agentloom.cli.main import main as agentloom

    sys.argv = ["agentloom", *command]
    agentloom()


if __name__ == "__main__":
    main()
