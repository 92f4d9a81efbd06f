"""``qahub report`` speed and memory: 2 runs x every qahub task x 10,000 documents, 1,000 resamples; 8 runs x
every task x 2,500 documents (as many documents in all, against one baseline: 7 comparisons a metric); and a
leaderboard, 100 runs x every task x 1,000 documents of runs of unlike skill (99 comparisons with the baseline and
a ranking a task, not the 4,950 pairs).

The runs are synthetic ``lm_eval --output_path X --log_samples`` folders (results_<date>.json and
samples_<task>_<date>.jsonl, lines shaped as lm-eval 0.4.13 logs them: doc, arguments with the prompt, resps,
doc_hash, each metric's per-document item) whose point values are each task's own aggregation of the items.
The floor is reading the same samples files with ``json``: the report must read them. Targets: time <= 3x the
floor; peak memory above the imports <= 2x the size of the samples files.
"""

from __future__ import annotations

import ast
import json
import random
import tempfile
from pathlib import Path

from _common import best_in_turn, measure, met, peak_rss_mb, row

DOCS = 10_000
MANY_RUNS, MANY_DOCS = 8, 2_500
BOARD_RUNS, BOARD_DOCS = 100, 1_000
BOARD_PEAK_MB = 2048  # the leaderboard's target: 2 GB peak RSS, workers included
RESAMPLES = 1_000
DATE = "2026-01-01T00-00-00.000000"
WORDS = [f"w{i}" for i in range(3000)] + ["the", "a", "of", "is", "to", "and", ",", ".", "?"] * 60
DOMAINS, TYPES = ["dmv", "ssa", "va", "studentaid"], ["rwsd", "kusdra", "ruworldtree", "ruopenbookqa"]


def sentence(rng, low=6, high=20):
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def make_doc(task, i, rng):
    """The fields a task's prompt, categories and cluster read, the lines about as long as lm-eval's lines of the
    bundled samples (doc2dial ~5 kB, LIMUR ~4 kB, the others ~2 kB); clustered as the corpora are: 20 turns a
    Topical-Chat conversation, 10 a doc2dial dialogue, 5 questions a Jeopardy theme."""
    text = sentence(rng, 60, 120)
    if task == "qahub_limur":
        return {"instruction": sentence(rng, 200, 360), "inputs": {"text": sentence(rng)}, "outputs": "А",
                "meta": {"id": i, "task_type": TYPES[i % 4], "context_type": ["text", "table", "none"][i % 3]}}
    if task.startswith("qahub_jemhopqa"):
        return {"qid": str(i), "type": i % 2, "question": sentence(rng, 40, 80), "answer": sentence(rng, 1, 3)}
    if task == "qahub_jeopardy":
        return {"question_id": i, "question_number": 1 + i % 5, "question": text, "answer": sentence(rng, 1, 2),
                "tour_name": f"tour {i // 500}", "topic": f"topic {i // 5}"}
    if task.startswith("qahub_doc2dial"):
        return {"id": f"{i // 10}_{i % 10}", "dial_id": str(i // 10), "domain": DOMAINS[i // 10 % 4],
                "document": text + " " + sentence(rng, 300, 500)}
    return {"conversation_id": str(i // 20), "turn_index": i % 20, "knowledge": text,
            "history_messages": [sentence(rng)]}


def item(metric, reply, gold, rng, skill=None):
    """A document's item; ``skill`` (None: 0.4, a mean of 0.5) moves a run's 0/1 and mean metrics (and makes 5 %
    of its replies unparseable)."""
    if metric.kind == "bleu":
        return [reply, gold]
    if metric.kind == "distinct":
        return reply
    if metric.binary:
        share = 0.4 if skill is None else 0.05 if metric.name == "unparseable" else skill  # a good run reads
        return float(rng.random() < share)
    if metric.name == "knowledge_f1" and rng.random() < 0.1:
        return None
    if metric.kind == "sum":
        return rng.choice([-5.0, -2.0, 0.0, 3.0, 4.0])
    return rng.random() if skill is None else min(1.0, rng.random() + skill - 0.4)


def write_run(folder: Path, model: str, seed: int, docs: int = DOCS, skill=None) -> int:
    """A synthetic run of every qahub task; returns the bytes of its samples files. ``skill`` (None: 0.3 of the
    replies right, the 0/1 metrics right 0.4 of the time): the share of each, for runs of unlike skill."""
    from qahub.report.runs import qahub_tasks, task_metrics

    rng = random.Random(seed)
    folder.mkdir(parents=True)
    results, size = {}, 0
    for task, spec in qahub_tasks().items():
        metrics = task_metrics(spec)
        items = {m: [] for m in metrics}
        path = folder / f"samples_{task}_{DATE}.jsonl"
        corpus = random.Random(task)  # every run answers the same documents with the same targets, as two models do
        with open(path, "w", encoding="utf-8") as handle:
            for i in range(docs):
                doc, gold = make_doc(task, i, corpus), sentence(corpus)
                reply = gold if rng.random() < (0.3 if skill is None else skill) else sentence(rng)
                values = {m: item(metric, reply, gold, rng, skill) for m, metric in metrics.items()}
                for m, value in values.items():
                    items[m].append(value)
                sample = {"doc_id": i, "doc": doc, "target": gold,
                          "arguments": {"gen_args_0": {"arg_0": json.dumps(doc, ensure_ascii=False),
                                                       "arg_1": {"until": ["\n\n"], "max_gen_toks": 256}}},
                          "resps": [[reply]], "filtered_resps": [reply], "filter": "none", "metrics": list(metrics),
                          "doc_hash": f"{i:064x}", "prompt_hash": f"{i:064x}", "target_hash": f"{i:064x}",
                          **values}
                handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
        size += path.stat().st_size
        results[task] = {f"{m},none": _aggregate(spec, m, values) for m, values in items.items()}
    (folder / f"results_{DATE}.json").write_text(json.dumps(
        {"results": results, "versions": {t: 1.0 for t in results}, "n-shot": {t: 0 for t in results},
         "n-samples": {t: {"original": docs, "effective": docs} for t in results}, "model_name": model}),
        encoding="utf-8")
    return size


def _aggregate(spec, metric, values):
    how = {**spec.metrics, **spec.judge_metrics}[metric].aggregation
    if how == "mean":
        return sum(values) / len(values)
    return float(how(values))


def prepare_ours(root):
    import qahub.report  # noqa: F401 - the imports the command makes before it reads anything
    import qahub.report.build  # noqa: F401
    import qahub.report.render  # noqa: F401
    import qahub.report.stats  # noqa: F401

    for module in ("matplotlib.pyplot", "sacrebleu", "scipy.sparse", "statsmodels.stats.contingency_tables",
                   "statsmodels.stats.multitest", "statsmodels.stats.proportion", "tqdm", "qahub.metrics.topical_chat.responses"):
        __import__(module)
    qahub.report.runs.qahub_tasks()
    return root, peak_rss_mb()


def ours(root, imported_mb, jobs=None):
    """The imports' size, the workers' count and the largest worker's peak (all of them run side by side)."""
    import resource

    from qahub.report import qahub_tasks, write_report
    from qahub.report.workers import jobs as workers

    runs = sorted(p.name for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith("out-"))
    write_report([f"{name}={root}/{name}" for name in runs], f"{root}/out-{jobs}", resamples=RESAMPLES,
                 progress=False, jobs=jobs)
    worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux; 0 without workers
    return imported_mb, workers(jobs, len(qahub_tasks())), worker_mb


prepare_one_worker = prepare_ours


def one_worker(root, imported_mb):
    return ours(root, imported_mb, jobs=1)


def above_imports(measured) -> tuple[int, float]:
    """The workers and the peak memory above the imports of a measured ``ours``: each worker is forked with the
    imports, its peak above them counted once per worker (an upper bound: they overlap)."""
    imported_mb, workers, worker_mb = ast.literal_eval(measured[2])
    return workers, measured[1] - imported_mb + (workers * max(worker_mb - imported_mb, 0) if workers > 1 else 0)


def floor(root):
    count = 0
    for path in sorted(Path(root).glob("[!o]*/samples_*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                json.loads(line)
                count += 1
    return count


def run() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        size = sum(write_run(Path(tmp) / name, name, seed) for name, seed in (("a", 1), ("b", 2)))
        base = measure("bench_report:floor", tmp)
        mine = measure("bench_report:ours", tmp)
        alone = measure("bench_report:one_worker", tmp)
    size_mb = size / 2**20
    workers, above = above_imports(mine)
    time_ok = mine[0] <= 3 * base[0]
    memory_ok = above <= 2 * size_mb
    note = (f"{mine[0] / base[0]:.2f}x the json floor with {workers} worker(s) (target <= 3x: "
            f"{met(time_ok)}); {above:.0f} MiB above imports, workers included, for {size_mb:.0f} "
            f"MiB of samples (target <= 2x: {met(memory_ok)})")
    name = f"report 2 runs x every task x {DOCS:,} docs, {RESAMPLES:,} resamples"
    note_alone = (f"{alone[0] / base[0]:.2f}x the json floor on one CPU (--jobs 1; no target: the default uses "
                  f"every CPU); {above_imports(alone)[1]:.0f} MiB above imports")
    return [row(name, mine, base, note), row(f"{name}, --jobs 1", alone, base, note_alone), many_runs(), leaderboard()]


def many_runs() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        size = sum(write_run(Path(tmp) / f"m{seed}", f"m{seed}", seed, MANY_DOCS) for seed in range(MANY_RUNS))
        base = measure("bench_report:floor", tmp)
        mine = measure("bench_report:ours", tmp)
    workers, above = above_imports(mine)
    note = (f"{mine[0] / base[0]:.2f}x the json floor with {workers} worker(s) (target <= 3x: "
            f"{met(mine[0] <= 3 * base[0])}); {above:.0f} MiB above imports, workers included, "
            f"for {size / 2**20:.0f} MiB of samples")
    return row(f"report {MANY_RUNS} runs x every task x {MANY_DOCS:,} docs, {RESAMPLES:,} resamples", mine, base, note)


def write_leaderboard(root: Path) -> int:
    """``BOARD_RUNS`` runs of every task, ``BOARD_DOCS`` documents each, skills spread from 0.3 to 0.5 (neighbours
    closer than their intervals, as on a real leaderboard); the bytes of their samples files."""
    return sum(write_run(root / f"r{i:03d}", f"org/model-{i:03d}", 1000 + i, BOARD_DOCS,
                         skill=0.3 + 0.2 * i / (BOARD_RUNS - 1)) for i in range(BOARD_RUNS))


def leaderboard() -> dict:
    """The leaderboard row: its sides in turn, the best of two each (its 4 minutes meet the machine's changes of
    load alike: one side alone can be 2x slower in a busy stretch)."""
    with tempfile.TemporaryDirectory() as tmp:
        size = write_leaderboard(Path(tmp))
        mine, base, _ = best_in_turn(("bench_report:board", tmp), ("bench_report:board_floor", tmp), runs=2,
                                     seconds=0)
    return board_row(mine, base, size)


def cpu_seconds() -> float:
    """This process's CPU time and that of its children waited for (the report's workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


prepare_board = prepare_ours


def board(root, imported_mb):
    """``ours`` and the CPU seconds it took, workers included."""
    before = cpu_seconds()
    measured = ours(root, imported_mb)
    return (*measured, cpu_seconds() - before)


def board_floor(root):
    before = cpu_seconds()
    return floor(root), cpu_seconds() - before


def board_row(mine, base, size) -> dict:
    """The row of a measured leaderboard: time against the json floor, the CPU seconds of each (on a busy machine
    the wall times say how the cores were shared as much as what the work is), and the peak RSS of the command and
    of its workers together (each worker's peak counted in full, the parent's pages it shares too: an upper
    bound). The load average is the machine's at the end."""
    import os

    imported_mb, workers, worker_mb, cpu = ast.literal_eval(mine[2])
    floor_cpu = ast.literal_eval(base[2])[1]
    peak = mine[1] + (workers * worker_mb if workers > 1 else 0)
    note = (f"{mine[0] / base[0]:.2f}x the json floor with {workers} worker(s) (target <= 3x: "
            f"{met(mine[0] <= 3 * base[0])}); CPU {cpu:.1f} s against the floor's {floor_cpu:.1f} s "
            f"({cpu / floor_cpu:.2f}x, over {workers} worker(s)); {peak:.0f} MiB peak RSS, workers included (target "
            f"<= {BOARD_PEAK_MB} MiB: {met(peak <= BOARD_PEAK_MB)}), for {size / 2**20:.0f} MiB "
            f"of samples; load average {os.getloadavg()[0]:.1f}")
    return row(f"report {BOARD_RUNS} runs x every task x {BOARD_DOCS:,} docs (leaderboard), {RESAMPLES:,} "
               "resamples", mine, base, note)
