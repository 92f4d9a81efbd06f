"""`qahub evaluate <metric>` on the bundled sample (the first line of each sample's demo.json), as a fresh process,
side by side with `python -c pass` and `python -c "import evaluate"` measured in the same run (issue 28, item 6):
wall time and peak RSS, best of 3. Targets: <= 1.5 s and <= 300 MiB."""

from __future__ import annotations

import json
import sys

from _common import QAHUB, met, row, run_fresh

from qahub import registry

TARGET_S, TARGET_MIB = 1.5, 300
RUNS = 3


def _best(argv) -> tuple[float, float]:
    return min((run_fresh(argv) for _ in range(RUNS)), key=lambda result: result[0])


def _verdict(measured) -> str:
    """Each target's verdict on its own: which one a command missed."""
    seconds, mib = measured
    return (f"best of {RUNS} (targets <= {TARGET_S:g} s: {met(seconds <= TARGET_S)}, "
            f"<= {TARGET_MIB} MiB: {met(mib <= TARGET_MIB)})")


def _first_evaluation(corpus) -> list[str]:
    """The first ``qahub evaluate`` line of the sample's demo.json."""
    sample = registry.samples_dir(corpus)
    first = json.loads((sample / "demo.json").read_text(encoding="utf-8"))["evaluate"][0]
    return [arg.replace("{sample}", str(sample)) for arg in first]


def run() -> list[dict]:
    floor = _best([sys.executable, "-c", "pass"])
    evaluate = _best([sys.executable, "-c", "import evaluate"])
    rows = [row("python -c pass", floor, None, f"best of {RUNS}"),
            row('python -c "import evaluate" (vs python -c pass)', evaluate, floor, f"best of {RUNS}")]
    for corpus in registry.corpus_names():
        metric, *args = _first_evaluation(corpus)
        ours = _best([QAHUB, "--quiet", "evaluate", metric, *args])
        rows.append(row(f'qahub evaluate {metric}, bundled sample (vs python -c "import evaluate")', ours, evaluate,
                        _verdict(ours)))
    return rows
