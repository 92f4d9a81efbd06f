"""A new user's first report (issue 42, "the first screen at few documents"): two tiny models, one run by lm-eval
with ``--limit 20``, one by lighteval with ``--max-samples 20`` (which draws its documents at random: the two share
2 of their 20 LIMUR documents), on doc2dial grounding (7 documents of 3 dialogues), Jeopardy (6 questions of 2
themes, tiny-b's METEOR 0 on every one) and JEMHopQA (20 questions, every one wrong in both runs). Built from per-document items by the report's
own ``task_report``, as ``qahub report`` builds it from the harnesses' files."""

from __future__ import annotations

from qahub.report.build import adjust, best, task_report
from qahub.report.lighteval_runs import LightevalRun
from qahub.report.lm_eval_runs import LmEvalRun
from qahub.report.runs import RAW, TaskRun, qahub_tasks, task_metrics

SETTINGS = {"seed": 12345, "resamples": 200, "confidence": 0.95, "baseline": "tiny-a", "power": 0.8}
LIMUR, DOC2DIAL, JEOPARDY, JEMHOPQA = ("qahub_limur", "qahub_doc2dial_grounding", "qahub_jeopardy",
                                       "qahub_jemhopqa")
DATASETS = {LIMUR: ("qahub/limur", "rwsd", "test"), DOC2DIAL: ("qahub/doc2dial", "doc2dial_rc", "validation"),
            JEOPARDY: ("qahub/jeopardy", None, "test"), JEMHOPQA: ("qahub/jemhopqa", "v1.1", "dev")}


def task_run(task, items, ids, clusters=None, categories=None, dataset=None, n_shot=0, limit=20):
    """A run's task as a harness's reader gives it: documents ``ids`` (doc_id and a hash of it)."""
    from qahub.report.build import estimator

    spec = qahub_tasks()[task]
    metrics = task_metrics(spec)
    values = {m: estimator(metrics[m], v, task).point() for m, v in items.items()}
    name = "dialogue" if task == DOC2DIAL else "theme" if task == JEOPARDY else None
    return TaskRun(task, f"{task}.jsonl", values, [(i, f"hash{i}") for i in ids], items, categories or {},
                   n_shot=n_shot, limit=limit, dataset=dataset or DATASETS[task], ids=list(ids), clusters=clusters,
                   cluster_name=name if clusters else None, prompt_format=RAW)


def runs():
    """(tiny-a: lm-eval --limit 20, tiny-b: lighteval --max-samples 20), each with its ``TaskRun`` per task."""
    zeros = [0.0] * 20
    dialogues = ["d1", "d1", "d1", "d2", "d2", "d3", "d3"]
    domains = {"domain": ["dmv", "dmv", "ssa", "ssa", "va", "va", "va"]}
    themes, numbers = ["t1"] * 3 + ["t2"] * 3, {"question_number": ["1", "2", "3", "1", "2", "3"]}
    a = {LIMUR: task_run(LIMUR, {"exact_match": zeros, "unparseable": zeros}, range(20)),
         DOC2DIAL: task_run(DOC2DIAL, {"exact": [0.0] * 7, "f1": [0.0, 10.0, 0.0, 5.0, 0.0, 0.0, 0.0]}, range(7),
                            dialogues, domains),
         JEOPARDY: task_run(JEOPARDY, {"meteor": [0.1, 0.3, 0.2, 0.0, 0.2, 0.1], "game_score": [-10.0] * 6},
                            range(6), themes, numbers),
         JEMHOPQA: task_run(JEMHOPQA, {"exact_match": zeros, "char_f1": zeros}, range(20))}
    b = {LIMUR: task_run(LIMUR, {"exact_match": zeros, "unparseable": zeros}, [0, 1] + list(range(100, 118))),
         DOC2DIAL: task_run(DOC2DIAL, {"exact": [0.0, 100.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                                       "f1": [5.0, 100.0, 0.0, 5.0, 0.0, 10.0, 0.0]}, range(7), dialogues, domains),
         JEOPARDY: task_run(JEOPARDY, {"meteor": [0.0] * 6, "game_score": [-5.0] * 6},
                            range(6), themes, numbers),
         JEMHOPQA: task_run(JEMHOPQA, {"exact_match": zeros, "char_f1": zeros}, range(20), n_shot=3)}
    return (LmEvalRun("tiny-a", "runs/tiny-a", "org/tiny-a", "runs/tiny-a/results.json", tasks=a),
            LightevalRun("tiny-b", "runs/tiny-b", "org/tiny-b", "runs/tiny-b/results.json", tasks=b))


def report_data() -> dict:
    """report.json's numbers for the two runs, as ``report_data`` makes them (no figures)."""
    specs, entries = qahub_tasks(), {}
    for task in (LIMUR, DOC2DIAL, JEOPARDY, JEMHOPQA):
        entries[task] = task_report(task, specs[task], list(runs()), SETTINGS["baseline"], SETTINGS)
    adjust(entries, 1 - SETTINGS["confidence"])
    for task, entry in entries.items():
        metric = {**specs[task].metrics, **specs[task].judge_metrics}[entry["main_metric"]]
        entry["best"] = best(entry, metric.higher_is_better, SETTINGS["baseline"])
    return {"settings": SETTINGS, "tasks": entries, "skipped": [],
            "runs": {run.name: {"path": run.path, "model": run.model, "results_file": run.results_file,
                                "harness": run.harness} for run in runs()}}


if __name__ == "__main__":  # python tests/first_screen.py OUT: OUT/report.html and OUT/report.md of the scenario
    import sys
    from pathlib import Path

    from qahub.report.render import blocks, markdown, page

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    shown = blocks(report_data(), {})
    (out / "report.html").write_text(page(shown, {}), encoding="utf-8")
    (out / "report.md").write_text(markdown(shown), encoding="utf-8")
