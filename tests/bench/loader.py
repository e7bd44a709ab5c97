"""How the tests load a script of ``bench/`` (not a package) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def load_bench(script: str, *, bench_on_path: bool = False) -> ModuleType:
    """``bench/<script>`` as the module ``agentloom_bench_<stem>``, registered in
    ``sys.modules`` (its dataclasses look their module up there). ``bench_on_path``: ``bench/``
    is on ``sys.path`` while it loads, as when it runs (its ``peers`` helpers import from it)."""
    path = BENCH_DIR / script
    spec = importlib.util.spec_from_file_location(f"agentloom_bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    if bench_on_path:
        sys.path.insert(0, str(BENCH_DIR))
    try:
        spec.loader.exec_module(module)
    finally:
        if bench_on_path:
            sys.path.remove(str(BENCH_DIR))
    return module
