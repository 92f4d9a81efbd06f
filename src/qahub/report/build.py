"""The numbers of a report: scores with bootstrap intervals, breakdowns by category, paired comparisons."""

from __future__ import annotations

import math
import zlib

import numpy as np

from .runs import ReportError, numbers, task_metrics
from .stats import Bleu, Distinct, Mean, Sum, bleu_statistics, bootstrap, bootstrap_p, interval, mcnemar_p, sacrebleu_p

NOT_COMPARED = {"unparseable"}  # shown beside every score; not a quality to compare


def estimator(metric, items, where):
    if metric.kind == "bleu":
        try:
            return Bleu(bleu_statistics(items))
        except (TypeError, ValueError):
            raise ReportError(f"{where}: {metric.name}: a per-document item is not a (reply, reference) pair") from None
    if metric.kind == "distinct":
        return Distinct.of(items, metric.order)
    values, mask = numbers(items, f"{where}: {metric.name}")
    return (Sum if metric.kind == "sum" else Mean).of(values, mask)


def count(est, keep):
    return est.n() if isinstance(est, Mean) else int(keep.sum())


def main_metric(spec) -> str:
    return next(m for m in spec["metrics"] if m not in ("unparseable", "abstained"))


def rng_for(seed: int, *names: str):
    return np.random.default_rng([seed, *(zlib.crc32(name.encode("utf-8")) for name in names)])


def category_masks(task_run) -> dict:
    """``{field: {category: mask}}`` of the fields with two categories or more, categories in natural order."""
    masks = {}
    for field, values in task_run.categories.items():
        values = np.array(values, dtype=object)
        found = sorted(set(values), key=_natural)
        if len(found) > 1:
            masks[field] = {c: (values == c).astype(float) for c in found}
    return masks


def _natural(text):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def cell(value, draws, n, confidence):
    return {"value": _number(value), "ci": interval(draws, confidence), "n": int(n)}


def _number(value):
    return None if value is None or not math.isfinite(value) else float(value)


def task_report(task, spec, runs, baseline, settings, progress) -> dict:
    metrics = task_metrics(spec)
    confidence, resamples, seed = settings["confidence"], settings["resamples"], settings["seed"]
    entry = {"main_metric": main_metric(spec), "scores": {}, "breakdown": {}, "comparisons": {}, "notes": [],
             "warnings": []}
    estimators = {}
    for run in runs:
        tr = run.tasks[task]
        ests = estimators[run.name] = {m: estimator(metrics[m], tr.items[m], tr.file) for m in tr.items}
        keyed = {(m, None, None): e for m, e in ests.items()}
        masks = category_masks(tr)
        for field, cats in masks.items():
            for cat, keep in cats.items():
                keyed.update({(m, field, cat): e.restrict(keep) for m, e in ests.items()})
        draws = bootstrap(keyed, len(tr.keys), rng_for(seed, task, run.name), resamples)
        progress.update(1)
        everything = np.ones(len(tr.keys))
        entry["scores"][run.name] = {m: cell(tr.values[m], draws[(m, None, None)], count(e, everything), confidence)
                                     for m, e in ests.items()}
        _check_points(entry, run.name, tr, ests)
        for (m, field, cat), est in keyed.items():
            if field is not None:
                slot = entry["breakdown"].setdefault(field, {}).setdefault(cat, {}).setdefault(run.name, {})
                slot[m] = cell(est.point(), draws[(m, field, cat)], count(est, masks[field][cat]), confidence)
    base = next((r for r in runs if r.name == baseline), None)
    for run in runs:
        if base is not None and run is not base:
            entry["comparisons"][run.name] = compare(task, base, run, metrics, estimators, settings, entry)
            progress.update(1)
    return entry


def _check_points(entry, name, tr, ests):
    """lm-eval's number is the one reported; a recomputation that differs means the samples do not match it."""
    for m, est in ests.items():
        mine, theirs = est.point(), tr.values[m]
        if math.isfinite(mine) and abs(mine - theirs) > 1e-6 * max(1.0, abs(theirs)):
            entry["warnings"].append(f"{name}: {m} recomputed from the samples is {mine:.6g}, the results file "
                                     f"says {theirs:.6g} (are the samples from another run?)")


def compare(task, base, run, metrics, estimators, settings, entry) -> dict:
    b, r = base.tasks[task], run.tasks[task]
    position = {key: i for i, key in enumerate(r.keys)}
    pairs = [(i, position[key]) for i, key in enumerate(b.keys) if key in position]
    if not pairs:
        entry["warnings"].append(f"{run.name}: no document in common with {base.name}; not compared")
        return {}
    ib, ir = (np.array(side) for side in zip(*pairs))
    if len(pairs) != len(b.keys) or len(pairs) != len(r.keys):
        entry["notes"].append(f"{run.name} vs {base.name}: paired on the {len(pairs)} documents both scored "
                              f"({base.name} {len(b.keys)}, {run.name} {len(r.keys)}: a different --limit?)")
    for what, mine, theirs in (("task version", r.version, b.version), ("number of shots", r.n_shot, b.n_shot)):
        if mine != theirs:
            entry["warnings"].append(f"{run.name}: {what} {mine} differs from {base.name}'s {theirs}")
    keyed, kept = {}, {}
    for m in estimators[base.name]:
        if m in NOT_COMPARED or m not in estimators[run.name]:
            continue
        eb, er = estimators[base.name][m].take(ib), estimators[run.name][m].take(ir)
        if isinstance(eb, Mean):  # a document counts where both runs have a value
            both = ((eb.x[:, 1] > 0) & (er.x[:, 1] > 0)).astype(float)
            eb, er = eb.restrict(both), er.restrict(both)
            kept[m] = both > 0
        keyed[(m, "b")], keyed[(m, "r")] = eb, er
    # one generator seeded as sacrebleu seeds its paired bootstrap, the same resamples for every metric
    draws = bootstrap(keyed, len(pairs), np.random.default_rng(settings["seed"]), settings["resamples"])
    result = {}
    for m in {key[0]: None for key in keyed}:
        eb, er = keyed[(m, "b")], keyed[(m, "r")]
        pb, pr = eb.point(), er.point()
        delta, diffs = pr - pb, draws[(m, "r")] - draws[(m, "b")]
        n = int(kept[m].sum()) if m in kept else len(pairs)
        if metrics[m].kind == "bleu":
            test, p = "sacrebleu paired bootstrap", sacrebleu_p(draws[(m, "b")], draws[(m, "r")], pb, pr)
        elif metrics[m].binary:
            test, p = "McNemar exact", mcnemar_p(eb.x[kept[m], 0], er.x[kept[m], 0])
        else:
            test, p = "paired bootstrap", bootstrap_p(diffs, delta)
        result[m] = {"delta": _number(delta), "ci": interval(diffs, settings["confidence"]), "p": p,
                     "p_holm": None, "test": test, "n": n}
    return result


def holm(tasks: dict):
    """Holm-adjusted p of every comparison in the report (statsmodels ``multipletests``)."""
    from statsmodels.stats.multitest import multipletests

    cells = [c for entry in tasks.values() for per_run in entry["comparisons"].values() for c in per_run.values()]
    if cells:
        adjusted = multipletests([c["p"] for c in cells], method="holm")[1]
        for c, p in zip(cells, adjusted):
            c["p_holm"] = float(p)


def report_data(runs, skipped, specs, settings, progress) -> dict:
    tasks = {}
    for task in sorted({t for run in runs for t in run.tasks}):
        having = [run for run in runs if task in run.tasks]
        tasks[task] = task_report(task, specs[task], having, settings["baseline"], settings, progress)
    holm(tasks)
    return {"settings": settings,
            "runs": {run.name: {"path": run.path, "model": run.model, "results_file": run.results_file}
                     for run in runs},
            "tasks": tasks, "skipped": skipped}


def units(runs, baseline) -> int:
    """Resampling steps, for the progress bar: one per task and run, one per comparison."""
    base = next(r for r in runs if r.name == baseline)
    return sum(len(r.tasks) for r in runs) + sum(len(set(r.tasks) & set(base.tasks)) for r in runs if r is not base)
