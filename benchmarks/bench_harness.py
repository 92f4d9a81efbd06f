"""lm-evaluation-harness scoring speed: each qahub task's ``process_results`` over 10,000 replies.

The docs are the bundled samples' (exported as ``qahub build`` does, then read back like lm-eval reads them),
repeated; the replies mix each doc's gold target with free-form and garbage replies. The figure is ms per
reply; the target is 1 ms for every task but JEMHopQA derivations (5 ms), where the official scorer's
tokenization and alignment run per reply.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _common import measure, met, row

REPLIES = 10_000
TARGET_MS = {"qahub_jemhopqa_derivations": 5.0}
NOISE = ["", "   ", "не знаю", "**Ответ:** Б.", '{"answer": ', "x" * 10_000, "\ud800", "I think the answer is 42.\n\nMore"]


def _exports(root: Path) -> dict:
    from qahub import planning, registry
    from qahub.export.writer import export

    locations = {}
    for corpus in planning.corpora():
        folder = root / corpus
        export(corpus, folder, data_dir=registry.samples_dir(corpus), cache_dir=root / "cache", sample=True)
        locations[corpus] = str(folder)
    return locations


def prepare_score(corpus, task, location, n):

    from qahub import planning

    entry = planning.plan_tasks(corpus, location)[task]
    functions = planning.task_functions(corpus, task, location, config=entry["config"], splits=(entry["split"],))
    docs = functions.dataset()[entry["split"]]  # as lm-eval gets them from the task
    if planning.task_api(corpus).TASKS[task].docs:
        docs = functions.process_docs(docs)
    docs = list(docs)
    pairs = []
    for i in range(n):
        doc = docs[i % len(docs)]
        reply = functions.doc_to_target(doc) if i % 2 == 0 else NOISE[(i // 2) % len(NOISE)]
        pairs.append((doc, reply))
    return functions.process_results, pairs


def score(process_results, pairs):
    for doc, reply in pairs:
        process_results(doc, [reply])
    return len(pairs)


def run() -> list[dict]:
    import datasets

    from qahub import planning

    datasets.disable_progress_bars()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        locations = _exports(Path(tmp))
        for corpus, location in locations.items():
            for task in planning.task_api(corpus).TASKS:
                seconds, peak, _ = measure("bench_harness:score", corpus, task, location, REPLIES)
                ms = 1000 * seconds / REPLIES
                target = TARGET_MS.get(task, 1.0)
                verdict = met(ms <= target)
                note = f"{ms:.3f} ms per reply (target <= {target:g} ms: {verdict})"
                rows.append(row(f"harness {task} process_results x{REPLIES:,}", (seconds, peak), None, note))
    return rows
