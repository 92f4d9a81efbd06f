"""Run every benchmark (``benchmarks/bench_*.py`` with ``run() -> list[row]``) and print one table."""

from __future__ import annotations

import importlib
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import print_table  # noqa: E402


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main(argv=None) -> int:
    only = set((argv if argv is not None else sys.argv[1:]))
    rows = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if only and not any(name == want or name.startswith(want + "_") for want in only):
            continue
        module = importlib.import_module(path.stem)
        if hasattr(module, "run"):  # e.g. bench_jeopardy.py only declares its build for bench_builds.py
            rows.extend(module.run())
    print(f"machine: {platform.platform()}, {_cpu()} x {os.cpu_count()} cores, python {platform.python_version()}")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
