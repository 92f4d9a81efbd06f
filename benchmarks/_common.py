"""Side-by-side measurement for the benchmarks: each side runs in a fresh process, so its peak RSS is its own."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

sys.path.insert(0, str(Path(__file__).resolve().parent))

QAHUB = str(Path(sys.executable).with_name("qahub"))  # the qahub command of this interpreter's environment

# the real corpora: $QAHUB_SHARED_DATA, else ../shared/data beside the project root (as the tests read them)
SHARED_DATA = Path(os.environ.get("QAHUB_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def qahub(*argv: str, capture: bool = True) -> str:
    """Run the ``qahub`` command; its stdout (``capture``; else it goes to ours as it comes). A failure stops the
    benchmark naming the command, its exit status and the end of its stderr."""
    done = subprocess.run([QAHUB, *argv], text=True, stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.PIPE)
    if done.returncode:
        raise SystemExit(f"qahub {' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()[-800:]}")
    return done.stdout or ""


def copies_for(megabytes: float, size_of_one: float) -> int:
    """How many copies of something of ``size_of_one`` bytes make ``megabytes`` MB (a little over)."""
    return int(megabytes * 1e6 / size_of_one * 1.05) + 1


def _child(target: str, args: tuple, queue):
    module_name, func_name = target.split(":")
    func = getattr(importlib.import_module(module_name), func_name)
    prepare = getattr(importlib.import_module(module_name), f"prepare_{func_name}", None)
    state = prepare(*args) if prepare else args
    start = time.perf_counter()
    result = func(*state) if prepare else func(*args)
    seconds = time.perf_counter() - start
    peak_mb = peak_rss_mb()
    queue.put((seconds, peak_mb, repr(result)[:200]))


def best_in_turn(ours: tuple, base: tuple, runs: int = 3, seconds: float = 20.0, most: int = 10) -> tuple:
    """``(ours, base, tries)``: ``measure(*ours)`` and ``measure(*base)``, each the best of ``tries`` runs, the sides
    run in turn: on a shared machine whose speed drifts, both then meet the same stretches of it (three of one side
    and then three of the other may not). At least ``runs`` of each, and more while the runs so far took under
    ``seconds`` (at most ``most``), as ``timeit``'s autorange: the best of three short runs is still a matter of
    luck here (eight LIMUR builds against their floor, in turn: 1.35-2.06x the floor's time)."""
    results, spent = [], 0.0
    while len(results) < runs or (spent < seconds and len(results) < most):
        results.append((measure(*ours), measure(*base)))
        spent += results[-1][0][0] + results[-1][1][0]
    best = (min((pair[side] for pair in results), key=lambda result: result[0]) for side in (0, 1))
    return (*best, len(results))


def peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM); ru_maxrss would carry over the parent's peak across exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(target: str, *args) -> tuple[float, float, str]:
    """Run ``module:function(*args)`` in a fresh interpreter; return (seconds, peak RSS in MiB, result repr).

    When the module has ``prepare_<function>(*args)``, it runs first, untimed, and its return value is
    the function's arguments (loading a dictionary, reading inputs).
    """
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(target, args, queue))
    proc.start()
    while True:
        try:
            seconds, peak_mb, result = queue.get(timeout=1)
            break
        except Empty:
            if not proc.is_alive():
                raise RuntimeError(f"{target} failed (exit code {proc.exitcode})") from None
    proc.join()
    return seconds, peak_mb, result


# The command's own peak RSS, whatever the size of the process that wants it measured. Linux charges a process
# the peak RSS of the memory it was forked with (``exec`` keeps the larger of the two in ``ru_maxrss``; a vfork
# child shares its parent's), so a command spawned by a benchmark that has grown to 500 MiB would read 500 MiB.
# This launcher, a bare interpreter (-I -S: ~7 MiB), spawns the command and reports the rusage of that one child
# from ``wait4``: what the command was forked with is the launcher's few MiB, below any Python command's own peak.
LAUNCHER = """
import os, sys, time
devnull = os.open(os.devnull, os.O_WRONLY)
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
print(seconds, os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def run_fresh(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of ``argv`` run as a fresh process (its output discarded, its stderr shown
    when it fails), both measured by a small launcher process: see ``LAUNCHER``."""
    launched = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCHER, *argv], capture_output=True, text=True)
    try:
        seconds, code, peak_kib = launched.stdout.split()
    except ValueError:
        raise RuntimeError(f"{' '.join(argv)}: the launcher failed: {launched.stderr[-500:]}") from None
    if int(code):
        raise RuntimeError(f"{' '.join(argv)}: exit {code}: {launched.stderr[-500:]}")
    return float(seconds), int(peak_kib) / 1024  # KiB on Linux


def row(name: str, ours: tuple, baseline: tuple | None, note: str = "") -> dict:
    """A table row; ``baseline`` None for a measurement with nothing to compare against (an absolute target)."""
    return {
        "name": name,
        "ours_s": ours[0],
        "baseline_s": baseline[0] if baseline else None,
        "ratio": (baseline[0] / ours[0] if ours[0] else float("inf")) if baseline else None,
        "ours_peak_mb": ours[1],
        "baseline_peak_mb": baseline[1] if baseline else None,
        "note": note,
    }


def _ratio(value: float) -> str:
    return f"{value:.1f}x" if value >= 1 else f"{value:.3g}x"


def print_table(rows: list[dict]) -> None:
    width = max([len("benchmark"), *(len(r["name"]) for r in rows)])
    header = f"{'benchmark':<{width}} {'ours s':>9} {'baseline s':>11} {'ratio':>8} {'peak MiB ours/base':>20}  note"
    print("ratio = baseline time / our time (above 1: we are faster)")
    print(header)
    print("-" * len(header))
    for r in rows:
        if r["baseline_s"] is None:
            base, ratio, peaks = "-", "-", f"{r['ours_peak_mb']:.0f}/-"
        else:
            base, ratio = f"{r['baseline_s']:.3f}", _ratio(r["ratio"])
            peaks = f"{r['ours_peak_mb']:.0f}/{r['baseline_peak_mb']:.0f}"
        print(f"{r['name']:<{width}} {r['ours_s']:>9.3f} {base:>11} {ratio:>8} {peaks:>20}  {r['note']}")


def met(ok: bool) -> str:
    """A target row's verdict, as every benchmark prints it: "ok", or "MISSED"."""
    return "ok" if ok else "MISSED"
