"""Run every benchmark (``benchmarks/bench_*.py`` with ``run() -> list[row]``) and print one table.

stdout holds the machine line and the table alone: everything else the benchmarks and the processes they start
write (lm-eval's progress, warnings) goes to a log file, named in one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import platform
import sys
import tempfile
import time
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


@contextlib.contextmanager
def output_to(log):
    """This process's stdout and stderr, and so every child's it starts, written to the open file ``log`` (at
    the file descriptors: what C code and subprocesses write goes there too); both restored on the way out."""
    saved = []
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        stream.flush()
        saved.append(os.dup(fd))
        os.dup2(log.fileno(), fd)
    try:
        yield
    finally:
        for stream, fd, old in ((sys.stdout, 1, saved[0]), (sys.stderr, 2, saved[1])):
            stream.flush()
            os.dup2(old, fd)
            os.close(old)


def collect(only: set[str]) -> list[dict]:
    """The rows of every benchmark module, or of those ``only`` names (``NAME`` or its ``NAME_*``)."""
    rows = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if only and not any(name == want or name.startswith(want + "_") for want in only):
            continue
        module = importlib.import_module(path.stem)
        if hasattr(module, "run"):  # e.g. bench_jeopardy.py only declares its build for bench_builds.py
            print(f"--- {path.name} ({time.strftime('%H:%M:%S')})", flush=True)  # to the log: what wrote what
            rows.extend(module.run())
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only these benchmarks (bench_NAME.py and bench_NAME_*.py)")
    parser.add_argument("--log", help="the file the benchmarks' own output goes to (default: a new file in the "
                                      "temporary directory)")
    args = parser.parse_args(argv)
    if args.log:
        log_path = Path(args.log)
    else:
        log_path = Path(tempfile.gettempdir()) / f"qahub-benchmarks-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    print(f"benchmarks/run.py: the benchmarks' own output goes to {log_path}", file=sys.stderr, flush=True)
    with open(log_path, "w", encoding="utf-8") as log, output_to(log):
        rows = collect(set(args.names))
    print(f"machine: {platform.platform()}, {_cpu()} x {os.cpu_count()} cores, python {platform.python_version()}")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
