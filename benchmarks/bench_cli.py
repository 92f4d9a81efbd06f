"""Start-up of the command line (issue 22): `qahub --help` and `qahub list` as fresh processes, beside
`python -c pass` (the interpreter's own start-up), each the best of 5 wall times. Target: <= 0.3 s.
And what qahub's inspect entry point adds to inspect's own import (what `inspect list tasks` and every
`inspect eval qahub/...` pay before anything runs), beside `import inspect_ai`. Target: <= 0.5 s (issue 28)."""

from __future__ import annotations

import sys

from _common import QAHUB, met, row, run_fresh

TARGET = 0.3  # seconds, wall, a fresh process
ENTRY_TARGET = 0.5  # seconds the entry point adds to `import inspect_ai`
RUNS = 5


def _best(argv) -> tuple[float, float]:
    return min((run_fresh(argv) for _ in range(RUNS)), key=lambda result: result[0])


def run() -> list[dict]:
    floor = _best([sys.executable, "-c", "pass"])
    rows = []
    for args in (["--help"], ["list"]):
        ours = _best([QAHUB, *args])
        verdict = met(ours[0] <= TARGET)
        rows.append(row(f"qahub {' '.join(args)}, fresh process (vs python -c pass)", ours, floor,
                        f"best of {RUNS} wall times (target <= {TARGET:g} s: {verdict})"))
    rows.append(_entry_point())
    return rows


def _entry_point() -> dict:
    inspect_only = _best([sys.executable, "-c", "import inspect_ai"])
    with_tasks = _best([sys.executable, "-c", "import inspect_ai, qahub._registry"])
    added = with_tasks[0] - inspect_only[0]
    verdict = met(added <= ENTRY_TARGET)
    return row("inspect entry point (qahub._registry) after import inspect_ai (vs import inspect_ai)",
               with_tasks, inspect_only,
               f"adds {added:.2f} s to inspect's import, best of {RUNS} (target <= {ENTRY_TARGET:g} s: {verdict})")
