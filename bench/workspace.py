"""Workspace benchmark: what the sandboxed ``exec`` and the file tools cost.

Run from the repository root::

    python bench/workspace.py                     # every section, ~1 min
    python bench/workspace.py --section exec      # one section
    python bench/workspace.py --backend landlock  # one sandbox backend (default: each one here)
    python bench/workspace.py --size-mib 256      # a smaller output
    python bench/workspace.py --json > out.json   # JSON on stdout, the table on stderr
    python bench/workspace.py --check             # exit status 1 when a target fails

Section ``startup``: ``exec`` of ``true`` ``--startup-runs`` times under each sandbox
backend this machine has (bubblewrap, Landlock), median and p90 wall time from
``execute`` to the result; the target is Landlock <= 0.5x bubblewrap, both measured in
this run.

Section ``exec``: one command writing ``--size-mib`` MiB (default 1 GiB) to stdout
(``head -c N /dev/zero``) through the sandbox gateway of each backend, ``--repeat`` times,
against the same command piped to ``cat > /dev/null`` from ``/bin/sh`` in the same run.
Reported, per backend:

* peak RSS growth of this Python process while the command runs: the kernel's high-water
  mark (``VmHWM``, reset through ``/proc/self/clear_refs`` before each run) minus
  ``VmRSS`` before it, cross-checked by a thread sampling ``VmRSS`` every 2 ms;
* throughput (MiB/s) of the gateway and of the shell pipe, and their ratio;
* that the result is right: ``total_bytes`` and the SHA-256 of the spool file.

Section ``files``: a generated tree of ``--files`` small files (default 20,000): ``fs.grep``
(the workspace service, literal search, every match collected) against ``grep -rn`` on the
same tree, and small-file ``write`` (atomic create) and ``read`` operations per second.

Every figure printed is measured in that run; the targets are the only constants.
Sections are functions registered in ``SECTIONS``; a new section is a new function.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentloom.sandbox import (
    BusinessOwner,
    EnvironmentPolicy,
    ExecCommand,
    SandboxError,
    SandboxScope,
    make_gateway,
)

MIB = 1 << 20

# The targets: the only constants this script prints that it did not measure.
TARGET_EXEC_RSS_GROWTH_MIB = 32.0  # peak RSS growth while draining the output
TARGET_EXEC_THROUGHPUT_RATIO = 0.5  # gateway MiB/s >= this x `| cat > /dev/null`
TARGET_LANDLOCK_STARTUP_RATIO = 0.5  # exec of `true`: Landlock <= this x bubblewrap
BACKENDS = ("bubblewrap", "landlock")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- machine facts --------------------------------------------------------------------


def machine_facts(output_dir: Path) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "cpu_model": _cpuinfo("model name"),
        "sha_ni": "sha_ni" in (_cpuinfo("flags") or "").split(),
        "mem_total_mib": _meminfo("MemTotal") // 1024,
        "load_avg_1m": os.getloadavg()[0],
        "output_dir": str(output_dir),
        "output_fs": _filesystem(output_dir),
        "pipe_max_size": int(Path("/proc/sys/fs/pipe-max-size").read_text()),
    }
    bwrap = shutil.which("bwrap")
    if bwrap:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, check=False)
        facts["bwrap"] = out.stdout.strip()
    return facts


def _cpuinfo(key: str) -> str | None:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(key):
            return line.split(":", 1)[1].strip()
    return None


def _meminfo(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _filesystem(path: Path) -> str:
    best, fstype = "", "?"
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        mount = parts[1]
        inside = str(path).startswith(mount.rstrip("/") + "/") or str(path) == mount
        if inside and len(mount) > len(best):
            best, fstype = mount, parts[2]
    return f"{fstype} at {best}"


# -- memory ---------------------------------------------------------------------------


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to VmRSS (Linux >= 4.0)
        return True
    except OSError:
        return False


class RssSampler:
    """Samples ``VmRSS`` every ``interval_s`` in a thread; ``peak_kib`` is the highest seen."""

    def __init__(self, interval_s: float = 0.002) -> None:
        self.interval_s = interval_s
        self.peak_kib = _status_kib("VmRSS")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak_kib = max(self.peak_kib, _status_kib("VmRSS"))


# -- section: exec --------------------------------------------------------------------


def _zeros_sha256(size: int) -> str:
    digest = hashlib.sha256()
    block = bytes(MIB)
    for _ in range(size // MIB):
        digest.update(block)
    digest.update(bytes(size % MIB))
    return digest.hexdigest()


def _shell_pipe_mib_s(size: int) -> float:
    started = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", f"head -c {size} /dev/zero | cat > /dev/null"], check=True)
    return size / MIB / (time.perf_counter() - started)


async def _gateway_run(gateway: Any, handle: Any, size: int) -> dict[str, Any]:
    command = ExecCommand(argv=("head", "-c", str(size), "/dev/zero"), timeout_s=600)
    owner = BusinessOwner(operation_id="bench", attempt_no=1)
    hwm_ok = _reset_peak_rss()
    rss_before = _status_kib("VmRSS")
    with RssSampler() as sampler:
        started = time.perf_counter()
        execution = await gateway.execute(handle, command, owner, time.time() + 600)
        result = await execution.wait()
        elapsed = time.perf_counter() - started
    hwm = _status_kib("VmHWM") if hwm_ok else sampler.peak_kib
    return {
        "elapsed_s": elapsed,
        "mib_s": size / MIB / elapsed,
        "rss_before_mib": rss_before / 1024,
        "rss_growth_hwm_mib": (hwm - rss_before) / 1024 if hwm_ok else None,
        "rss_growth_sampled_mib": (sampler.peak_kib - rss_before) / 1024,
        "result": result,
    }


def _gateways(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """A working gateway of each backend asked for that this machine has."""
    found: dict[str, Any] = {}
    for backend in args.backend or BACKENDS:
        out_dir = workdir / f"spool-{backend}"
        try:
            found[backend] = make_gateway(EnvironmentPolicy(), backend=backend, output_dir=out_dir)
        except SandboxError as exc:
            log(f"… {backend}: not available here ({exc})")
    if not found:
        raise SystemExit("no sandbox backend is available on this machine")
    return found


def _work_dir(workdir: Path, name: str) -> Path:
    work = workdir / name
    work.mkdir(mode=0o755)
    os.chmod(workdir, 0o711)  # as root, bubblewrap reaches the work folder as the sandbox uid
    return work


def bench_startup(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    gateways = _gateways(args, workdir)
    owner = BusinessOwner(operation_id="bench", attempt_no=1)

    async def times(gateway: Any, work: Path) -> list[float]:
        handle = await gateway.ensure(
            # a run's own work folder (the workspace package's: the sandbox uid's)
            SandboxScope(workspace_scope_id="bench", run_id=f"bench-{gateway.sandbox_mode}",
                         work_dir=work, managed=True), None, 1)
        out = []
        for _ in range(args.startup_runs):
            started = time.perf_counter()
            execution = await gateway.execute(handle, ExecCommand(argv=("true",)), owner, time.time() + 60)
            result = await execution.wait()
            out.append((time.perf_counter() - started) * 1000)
            if result.exit_code != 0:
                raise SystemExit(f"`true` failed under {gateway.sandbox_mode}: {result}")
        return out

    async def run_all() -> dict[str, list[float]]:
        found: dict[str, list[float]] = {name: [] for name in gateways}
        for _ in range(3):  # rounds, interleaved, so each backend sees the same machine state
            for name, gateway in gateways.items():
                found[name] += await times(gateway, _work_dir(workdir, f"work-{name}-{len(found[name])}"))
        return found

    measured = asyncio.run(run_all())
    section: dict[str, Any] = {"runs_per_backend": 3 * args.startup_runs, "backends": {}}
    for name, values in measured.items():
        ordered = sorted(values)
        section["backends"][name] = {
            "median_ms": statistics.median(values), "p90_ms": ordered[int(0.9 * (len(ordered) - 1))],
            "view": getattr(gateways[name], "view", "namespace"),  # docs/sandbox.md, the shapes
        }
    if {"bubblewrap", "landlock"} <= measured.keys():
        ratio = section["backends"]["landlock"]["median_ms"] / section["backends"]["bubblewrap"]["median_ms"]
        section["landlock_to_bubblewrap"] = ratio
        section["targets"] = {"landlock_startup_ratio": _verdict(
            ratio <= TARGET_LANDLOCK_STARTUP_RATIO, f"<= {TARGET_LANDLOCK_STARTUP_RATIO}")}
    return section


def print_startup(section: dict[str, Any]) -> None:
    log(f"\nstartup: exec of `true`, {section['runs_per_backend']} runs per backend")
    for name, figures in section["backends"].items():
        log(f"  {name:<12} median {figures['median_ms']:7.2f} ms   p90 {figures['p90_ms']:7.2f} ms"
            f"   ({figures.get('view', '?')} view)")
    if "landlock_to_bubblewrap" in section:
        verdict = section["targets"]["landlock_startup_ratio"]
        log(f"  landlock / bubblewrap {section['landlock_to_bubblewrap']:5.2f}   "
            f"target {verdict['target']}  {verdict['status']}")


def bench_exec(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    gateways = _gateways(args, workdir)
    log(f"… [exec] reference SHA-256 of {args.size_mib} MiB of zeros")
    reference = _zeros_sha256(args.size_mib * MIB)
    return {"backends": {name: _bench_exec_one(args, workdir, gateway, reference)
                         for name, gateway in gateways.items()}}


def _bench_exec_one(args: argparse.Namespace, workdir: Path, gateway: Any, reference: str) -> dict[str, Any]:
    size = args.size_mib * MIB
    work = _work_dir(workdir, f"work-{gateway.sandbox_mode}")
    log(f"… [exec] gateway: {gateway.sandbox_mode}")

    async def run_all() -> tuple[list[dict[str, Any]], list[float]]:
        handle = await gateway.ensure(
            SandboxScope(workspace_scope_id="bench", run_id="bench-exec", work_dir=work,
                         managed=True), None, 1
        )
        runs, pipes = [], []
        for i in range(args.repeat):  # interleaved, so both see the same machine state
            pipes.append(_shell_pipe_mib_s(size))
            run = await _gateway_run(gateway, handle, size)
            result = run.pop("result")
            stream = result.stdout
            if stream.total_bytes != size or stream.sha256 != reference:
                raise SystemExit(f"wrong output: {stream.total_bytes} bytes, sha256 {stream.sha256}")
            run["spool_sha256_ok"] = args.verify_spool and _file_sha256(stream.spool_path) == reference
            run["exit_code"], run["sandboxed"] = result.exit_code, result.sandboxed
            if stream.spool_path is not None:
                stream.spool_path.unlink()
            runs.append(run)
            log(
                f"… [exec] {gateway.sandbox_mode} run {i + 1}/{args.repeat}: "
                f"gateway {run['mib_s']:.0f} MiB/s, "
                f"shell pipe {pipes[-1]:.0f} MiB/s, RSS growth {run['rss_growth_hwm_mib'] or 0:.1f} MiB"
            )
        return runs, pipes

    runs, pipes = asyncio.run(run_all())
    gateway_mib_s = statistics.median(r["mib_s"] for r in runs)
    pipe_mib_s = statistics.median(pipes)
    growth = max(
        (r["rss_growth_hwm_mib"] if r["rss_growth_hwm_mib"] is not None else r["rss_growth_sampled_mib"])
        for r in runs
    )
    ratio = gateway_mib_s / pipe_mib_s
    return {
        "size_mib": args.size_mib,
        "repeat": args.repeat,
        "sandbox_mode": gateway.sandbox_mode,
        "gateway_mib_s_median": gateway_mib_s,
        "gateway_mib_s_runs": [r["mib_s"] for r in runs],
        "shell_pipe_mib_s_median": pipe_mib_s,
        "shell_pipe_mib_s_runs": pipes,
        "throughput_ratio": ratio,
        "rss_growth_peak_mib": growth,
        "rss_growth_sampled_mib_runs": [r["rss_growth_sampled_mib"] for r in runs],
        "runs": runs,
        "targets": {
            "rss_growth_mib": _verdict(
                growth < TARGET_EXEC_RSS_GROWTH_MIB, f"< {TARGET_EXEC_RSS_GROWTH_MIB}"
            ),
            "throughput_ratio": _verdict(
                ratio >= TARGET_EXEC_THROUGHPUT_RATIO, f">= {TARGET_EXEC_THROUGHPUT_RATIO}"
            ),
        },
    }


def _file_sha256(path: Path | None) -> str | None:
    if path is None:
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(MIB):
            digest.update(chunk)
    return digest.hexdigest()


def _verdict(ok: bool, target: str) -> dict[str, str]:
    return {"target": target, "status": "PASS" if ok else "FAIL"}


def print_exec(section: dict[str, Any]) -> None:
    for one in section["backends"].values():
        _print_exec_one(one)


def _print_exec_one(section: dict[str, Any]) -> None:
    def runs(key: str, fmt: str = ".0f") -> str:
        return ", ".join(f"{v:{fmt}}" for v in section[key])

    rss, ratio = section["targets"]["rss_growth_mib"], section["targets"]["throughput_ratio"]
    gateway, pipe = section["gateway_mib_s_median"], section["shell_pipe_mib_s_median"]
    size, repeat, mode = section["size_mib"], section["repeat"], section["sandbox_mode"]
    log(f"\nexec: {size} MiB to stdout, {repeat} runs, mode {mode}")
    log(f"  gateway            {gateway:8.0f} MiB/s  (runs: {runs('gateway_mib_s_runs')})")
    log(f"  | cat > /dev/null  {pipe:8.0f} MiB/s  (runs: {runs('shell_pipe_mib_s_runs')})")
    r, g = section["throughput_ratio"], section["rss_growth_peak_mib"]
    log(f"  ratio              {r:8.2f}        target {ratio['target']}  {ratio['status']}")
    log(f"  peak RSS growth    {g:8.1f} MiB    target {rss['target']}  {rss['status']}")
    log(f"                                      (sampled: {runs('rss_growth_sampled_mib_runs', '.1f')})")


# -- files: fs.grep vs grep -rn, small-file ops ----------------------------------------


def _make_tree(root: Path, files: int) -> int:
    """``files`` small text files in 200 folders; every 50th file has the needle."""
    per_dir = 100
    written = 0
    for i in range(files):
        folder = root / f"d{i // per_dir:03d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        needle = "NEEDLE here\n" if i % 50 == 0 else ""
        (folder / f"f{i:05d}.txt").write_text(f"line one of {i}\n{needle}line three\n")
        written += 1
    return written


def bench_files(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from agentloom.workspace.service import WorkspaceService

    tree = workdir / "tree"
    tree.mkdir()
    count = _make_tree(tree, args.files)
    service = WorkspaceService()

    async def run() -> dict[str, Any]:
        handle = await service.open_view(tree, scope_id="bench")
        limit = 1000  # the service's maximum; the tree has count // 50 matches, all collected
        grep_s = []
        matches = 0
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            found = await service.grep(handle, "NEEDLE", literal=True, limit=limit,
                                       timeout_s=30.0)
            grep_s.append(time.perf_counter() - t0)
            matches = len(found.matches)
        shell_s = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = subprocess.run(["grep", "-rn", "NEEDLE", "."], cwd=tree,  # noqa: ASYNC221
                                 capture_output=True, check=False)
            shell_s.append(time.perf_counter() - t0)
        shell_matches = len(out.stdout.splitlines())
        small = await service.open_view(workdir, scope_id="bench-small")
        (workdir / "small").mkdir()
        n = args.small_ops
        t0 = time.perf_counter()
        for i in range(n):
            await service.write(small, f"small/f{i}.txt", f"content {i}\n")
        write_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(n):
            await service.read(small, f"small/f{i}.txt")
        read_s = time.perf_counter() - t0
        return {
            "files": count,
            "fs_grep_s_median": statistics.median(grep_s),
            "grep_rn_s_median": statistics.median(shell_s),
            "ratio_fs_grep_over_grep_rn": statistics.median(grep_s) / statistics.median(shell_s),
            "matches": matches,
            "grep_rn_matches": shell_matches,
            "small_writes_per_s": n / write_s,
            "small_reads_per_s": n / read_s,
            "small_ops": n,
            "targets": {},
        }

    return asyncio.run(run())


def print_files(section: dict[str, Any]) -> None:
    log(f"\nfiles: fs.grep over {section['files']:,} files vs grep -rn (same tree, same run)")
    log(f"  fs.grep      {section['fs_grep_s_median'] * 1000:9.1f} ms  "
        f"({section['matches']} matches)")
    log(f"  grep -rn     {section['grep_rn_s_median'] * 1000:9.1f} ms  "
        f"({section['grep_rn_matches']} matches)")
    log(f"  ratio        {section['ratio_fs_grep_over_grep_rn']:9.1f}×  (fs.grep time / grep -rn time)")
    log(f"  small files  {section['small_writes_per_s']:9.0f} writes/s (atomic: temp, fsync, rename, "
        f"dir fsync)   {section['small_reads_per_s']:9.0f} reads/s   ({section['small_ops']} each)")


# -- driver ---------------------------------------------------------------------------

SECTIONS: dict[
    str, tuple[Callable[[argparse.Namespace, Path], dict[str, Any]], Callable[[dict[str, Any]], None]]
] = {
    "exec": (bench_exec, print_exec),
    "files": (bench_files, print_files),
    "startup": (bench_startup, print_startup),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--section", choices=sorted(SECTIONS), action="append", help="run only this section")
    parser.add_argument(
        "--size-mib", type=int, default=1024, help="exec: MiB written to stdout (default 1024)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="exec: runs of each side (default 3)")
    parser.add_argument(
        "--no-verify-spool",
        dest="verify_spool",
        action="store_false",
        help="exec: skip re-hashing the spool file",
    )
    parser.add_argument("--backend", choices=BACKENDS, action="append",
                        help="exec, startup: only this sandbox backend (default: each one available)")
    parser.add_argument("--startup-runs", type=int, default=100, help="startup: runs per backend and round")
    parser.add_argument("--files", type=int, default=20_000, help="files: tree size (default 20000)")
    parser.add_argument("--small-ops", type=int, default=2000, help="files: small reads/writes")
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    parser.add_argument("--check", action="store_true", help="exit status 1 when a target fails")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agentloom-bench-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o711)  # searchable by the sandbox uid (bubblewrap as root finds work by path)
        facts = machine_facts(root)
        log("machine: " + ", ".join(f"{k}={v}" for k, v in facts.items()))
        report: dict[str, Any] = {"machine": facts, "sections": {}}
        for name in args.section or sorted(SECTIONS):
            run, show = SECTIONS[name]
            (root / name).mkdir()
            report["sections"][name] = run(args, root / name)
            show(report["sections"][name])
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    failed = [
        f"{section}.{target}"
        for section, body in report["sections"].items()
        for target, verdict in _all_targets(body)
        if verdict["status"] == "FAIL"
    ]
    if failed:
        log("targets missed: " + ", ".join(failed))
    return 1 if args.check and failed else 0


def _all_targets(body: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    found = list(body.get("targets", {}).items())
    for name, one in body.get("backends", {}).items():
        found += [(f"{name}.{target}", verdict) for target, verdict in one.get("targets", {}).items()]
    return found


if __name__ == "__main__":
    raise SystemExit(main())
