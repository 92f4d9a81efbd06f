"""The numbers of a report: scores with bootstrap intervals, breakdowns by category, paired comparisons."""

from __future__ import annotations

import math

import numpy as np

from .alike import pairing
from .judges import same_judge_only
from .runs import ReportError, numbers, task_metrics
from .stats import (
    Bleu,
    Clusters,
    Distinct,
    Mean,
    Sum,
    bleu_statistics,
    bootstrap,
    bootstrap_p,
    clustered_stderr,
    detectable,
    interval,
    mcnemar_p,
    sacrebleu_p,
    sign_test_p,
    wilson,
)

NOT_COMPARED = {"unparseable"}  # shown beside every score; not a quality to compare


def estimator(metric, items, where):
    if metric.kind == "bleu":
        try:
            return Bleu.scored_by(metric.score)(bleu_statistics(items))
        except (TypeError, ValueError):
            raise ReportError(f"{where}: {metric.name}: a per-document item is not a (reply, reference) pair") from None
    if metric.kind == "distinct":
        return Distinct.of(items, metric.order)
    values, mask = numbers(items, f"{where}: {metric.name}")
    return (Sum if metric.kind == "sum" else Mean).of(values, mask)


def count(est, size):
    return est.n() if isinstance(est, Mean) else int(size)


def category_index(task_run) -> dict:
    """``{field: {category: document indices}}`` of the fields with two categories or more, in natural order;
    runs whose documents have the same categories get the same arrays."""
    key = (task_run.task, tuple(tuple(v) for v in task_run.categories.values()))
    if key not in _INDEX:
        _INDEX.clear()
        _INDEX[key] = _category_index(task_run)
    return _INDEX[key]


_INDEX = {}


def _category_index(task_run) -> dict:
    found = {}
    for field, values in task_run.categories.items():
        values = np.array(values, dtype=object)
        names = sorted(set(values), key=_natural)
        if len(names) > 1:
            found[field] = {c: np.flatnonzero(values == c) for c in names}
    return found


def _natural(text):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def cell(value, draws, n, confidence, wilson_of=None):
    """A score, its interval and count: the Wilson interval of ``wilson_of`` (a binary Mean estimator, its
    metric's scale) where given, else the percentile interval of the draws."""
    if wilson_of is not None:
        est, scale = wilson_of
        ci = [scale * bound for bound in wilson(int((est.x[:, 0] != 0).sum()), est.n(), confidence)]
        return {"value": _number(value), "ci": ci if est.n() else [None, None], "n": int(n)}
    return {"value": _number(value), "ci": interval(draws, confidence), "n": int(n)}


def _number(value):
    return None if value is None or not math.isfinite(value) else float(value)


def task_report(task, spec, runs, baseline, settings) -> dict:
    metrics = task_metrics(spec)
    entry = {"main_metric": spec.headline, "scores": {}, "breakdown": {}, "comparisons": {}, "notes": [],
             "warnings": []}
    entry["notes"] += [bleu_note(metric) for metric in metrics.values() if metric.kind == "bleu"]
    entry["notes"] += [f"{run.name}: {note}" for run in runs for note in run.tasks[task].notes]
    designs = {run.name: Clusters.of(run.tasks[task].clusters) if run.tasks[task].clusters else None for run in runs}
    estimators, jobs = {}, []
    for run in runs:
        tr = run.tasks[task]
        ests = estimators[run.name] = {m: estimator(metrics[m], tr.items[m], tr.file) for m in tr.items}
        _check_points(entry, run.name, tr, ests)
        keyed = {(run.name, m, None, None): (e, None) for m, e in ests.items()}
        for field, cats in category_index(tr).items():
            for cat, index in cats.items():
                keyed.update({(run.name, m, field, cat): (e.take(index), index) for m, e in ests.items()})
        jobs.append((len(tr.keys), designs[run.name], keyed))
    entry["cluster"] = cluster_entry(runs, task, designs, estimators)
    entry["intervals"] = intervals(metrics, runs, task, designs, estimators, entry["cluster"]["field"])
    entry["notes"] += cluster_notes(entry["cluster"], entry["main_metric"])
    base = next((r for r in runs if r.name == baseline), None)
    pairings = {run.name: pairing(task, base, run, entry) for run in runs if base is not None and run is not base}
    pairings = {name: pairs for name, pairs in pairings.items() if pairs is not None}
    matches = {name: matched(name, baseline, pairs, estimators) for name, pairs in pairings.items()}
    same_judge_only(task, base, matches, runs, entry)
    paired_designs = {name: _taken(designs.get(baseline), pairs[0]) for name, pairs in pairings.items()}
    for name, pairs in pairings.items():
        jobs.append((len(pairs[0]), paired_designs[name], comparison_estimators(name, matches[name])))
    by_design = {}  # resamples depend on the document count and clusters only: one pass per design
    for n, clusters, keyed in jobs:
        by_design.setdefault((n, clusters.key if clusters else None), (clusters, {}))[1].update(keyed)
    draws = {}
    for (n, _), (clusters, keyed) in by_design.items():
        draws.update(bootstrap(keyed, n, settings["seed"], settings["resamples"], clusters))
    scores(entry, runs, task, estimators, draws, settings["confidence"], metrics)
    for name, pairs in pairings.items():
        entry["comparisons"][name] = compare(name, metrics, matches[name], len(pairs[0]), draws, settings,
                                             paired_designs[name], entry["cluster"]["field"])
    return entry


def _taken(clusters, index):
    return None if clusters is None else clusters.take(index)


def cluster_entry(runs, task, designs, estimators) -> dict:
    """The task's cluster field (None: documents resampled one by one), and per run the count of clusters and
    documents and each mean metric's design effect: its clustered variance / its per-document variance."""
    field = next((run.tasks[task].cluster_name for run in runs if run.tasks[task].cluster_name), None)
    per_run = {}
    for run in runs:
        clusters, n = designs[run.name], len(run.tasks[task].keys)
        effects = {}
        for m, est in estimators[run.name].items():
            if isinstance(est, Mean) and est.n() > 1:
                kept = np.flatnonzero(est.x[:, 1] > 0)
                values = est.x[kept, 0]
                plain = clustered_stderr(values)
                effects[m] = (clustered_stderr(values, _taken(clusters, kept)) / plain) ** 2 if plain else None
        per_run[run.name] = {"clusters": n if clusters is None else clusters.count, "documents": n,
                             "design_effect": effects}
    return {"field": field, "runs": per_run}


def cluster_notes(cluster, main) -> list:
    """``resampled by conversation: K clusters of N documents`` (one line when every run has the same)."""
    if cluster["field"] is None:
        return ["resampled by document: the task declares no cluster (its documents do not share a context)"]
    lines = {}
    for name, c in cluster["runs"].items():
        effect = c["design_effect"].get(main)
        text = f"resampled by {cluster['field']}: {c['clusters']} clusters of {c['documents']} documents"
        if effect is not None:
            text += f", design effect of {main} {effect:.2f}"
        if c["clusters"] < FEW_CLUSTERS:
            text += f" (approximate: fewer than {FEW_CLUSTERS} clusters)"
        lines.setdefault(text, []).append(name)
    if len(lines) == 1:
        return list(lines)
    return [f"{', '.join(names)}: {text}" for text, names in lines.items()]


FEW_CLUSTERS = 30  # fewer clusters than this: a cluster bootstrap's interval is approximate
WILSON = "Wilson score interval"  # the method of a metric's intervals that ``cell`` makes with ``wilson``


def intervals(metrics, runs, task, designs, estimators, field) -> dict:
    """How each metric's intervals are made: Wilson for a 0/1 metric whose documents are not clustered (every
    run's values 0 or the metric's scale), half-samples for distinct-n, else the percentile bootstrap."""
    clustered = any(design is not None for design in designs.values())
    unit = f"{field}s" if clustered else "documents"
    few = f" (approximate: fewer than {FEW_CLUSTERS} clusters)" if clustered and min(
        d.count for d in designs.values() if d is not None) < FEW_CLUSTERS else ""
    methods = {}
    for m in {m for ests in estimators.values() for m in ests}:
        ests = [estimators[run.name][m] for run in runs if m in estimators[run.name]]
        if wilson_scale(metrics[m], ests, clustered) is not None:
            methods[m] = WILSON
        elif metrics[m].kind == "distinct":
            methods[m] = f"half-samples of the {unit} without replacement, centred on the point value{few}"
        else:
            methods[m] = f"percentile bootstrap over {unit}{few}"
    return dict(sorted(methods.items()))


def wilson_scale(metric, ests, clustered):
    """The scale of a 0/1 metric whose intervals are Wilson's (documents not clustered, every value 0 or the
    metric's scale), else None."""
    if not metric.binary or clustered or not all(type(e) is Mean for e in ests):
        return None
    values = np.concatenate([e.x[e.x[:, 1] > 0, 0] for e in ests])
    return metric.scale if np.isin(values, [0.0, metric.scale]).all() else None


def bleu_note(metric) -> str:
    """Which BLEU the intervals and comparisons resample: the task's own, or sacrebleu's defaults."""
    if metric.score is not None:
        summary = " ".join(metric.score.__doc__.split()).split(". ")[0]  # its docstring's first sentence
        return f"{metric.name}: resampled with the task's own BLEU, {metric.score.__name__}: {summary}"
    from sacrebleu.metrics import BLEU

    bleu = BLEU()
    bleu.num_refs = 1
    return f"{metric.name}: resampled with sacrebleu's BLEU() ({bleu.get_signature()}), the task's BLEU"


def scores(entry, runs, task, estimators, draws, confidence, metrics):
    wilson_ones = {m for m, method in entry["intervals"].items() if method == WILSON}

    def made(m, est, value, key, n):
        return cell(value, draws[key], n, confidence, (est, metrics[m].scale) if m in wilson_ones else None)

    for run in runs:
        tr = run.tasks[task]
        entry["scores"][run.name] = {m: made(m, e, tr.values[m], (run.name, m, None, None), count(e, len(tr.keys)))
                                     for m, e in estimators[run.name].items()}
        for field, cats in category_index(tr).items():
            for cat, index in cats.items():
                slot = entry["breakdown"].setdefault(field, {}).setdefault(cat, {}).setdefault(run.name, {})
                for m, e in estimators[run.name].items():
                    part = e.take(index)
                    slot[m] = made(m, part, part.point(), (run.name, m, field, cat), count(part, len(index)))


def _check_points(entry, name, tr, ests):
    """lm-eval's number is the one reported; a recomputation that differs means the samples do not match it."""
    for m, est in ests.items():
        mine, theirs = est.point(), tr.values[m]
        if math.isfinite(mine) and abs(mine - theirs) > 1e-6 * max(1.0, abs(theirs)):
            entry["warnings"].append(f"{name}: {m} recomputed from the samples is {mine:.6g}, the results file "
                                     f"says {theirs:.6g} (are the samples from another run?)")


def paired(eb, er):
    """The two runs' estimators on the documents where both have a value (a mean over values that may be None)."""
    if not isinstance(eb, Mean):
        return eb, er, None
    both = np.flatnonzero((eb.x[:, 1] > 0) & (er.x[:, 1] > 0))
    if len(both) == len(eb.x):
        return eb, er, None
    return eb.take(both), er.take(both), both


def matched(name, baseline, pairs, estimators) -> dict:
    """``{metric: (baseline estimator, run estimator, index)}`` on the paired documents, index None for all."""
    ib, ir = pairs
    # the same documents in the same order (pairing gives one array twice): the runs' own estimators
    take = (lambda est, index: est) if ib is ir else (lambda est, index: est.take(index))  # noqa: E731
    return {m: paired(take(est, ib), take(estimators[name][m], ir)) for m, est in estimators[baseline].items()
            if m not in NOT_COMPARED and m in estimators[name]}


def comparison_estimators(name, matches) -> dict:
    keyed = {}
    for m, (eb, er, index) in matches.items():
        keyed[("vs", name, m, "b")], keyed[("vs", name, m, "r")] = (eb, index), (er, index)
    return keyed


def compare(name, metrics, matches, n_pairs, draws, settings, clusters=None, field=None) -> dict:
    """Delta, its interval, p and the test of each metric, and the minimum detectable difference; the BLEU test
    is sacrebleu's paired bootstrap, on the resamples it draws (default_rng(seed).choice over the paired
    documents; over the clusters when the documents are clustered)."""
    result = {}
    for m, (eb, er, index) in matches.items():
        db, dr = draws[("vs", name, m, "b")], draws[("vs", name, m, "r")]
        delta, diffs = er.point() - eb.point(), dr - db
        n = n_pairs if index is None else len(index)
        design = clusters if index is None else _taken(clusters, index)
        test, p = paired_test(metrics[m], eb, er, db, dr, n, design, field)
        mde = detectable(paired_stderr(eb, er, diffs, design), 1 - settings["confidence"])
        result[m] = {"delta": _number(delta), "ci": interval(diffs, settings["confidence"]), "p": p,
                     "p_holm": None, "p_bh": None, "test": test, "n": n, "mde": _number(mde),
                     "underpowered": underpowered(delta, mde, n, design, field)}
    return result


def paired_stderr(eb, er, diffs, clusters=None) -> float:
    """Standard error of a paired difference: of the mean of the per-document differences (clustered where the
    documents are; a sum's is n times its mean's), else the resampled differences' standard deviation."""
    if isinstance(eb, Mean):
        per_doc = er.x[:, 0] - eb.x[:, 0]
        se = clustered_stderr(per_doc, clusters)
        return se * len(per_doc) if isinstance(eb, Sum) else se
    diffs = diffs[np.isfinite(diffs)]
    return float(np.std(diffs, ddof=1)) if len(diffs) > 1 else 0.0


def underpowered(delta, mde, n, clusters, field):
    """The plain sentence where the observed difference is below the minimum detectable one, else None."""
    if not (math.isfinite(delta) and math.isfinite(mde)) or abs(delta) >= mde:
        return None
    where = f"{n} documents" + (f" ({clusters.count} {field}s)" if clusters is not None else "")
    return f"underpowered: a difference below {mde:.3g} cannot be seen with {where}"


def paired_test(metric, eb, er, db, dr, n, clusters=None, field=None):
    """(test, p): a bootstrap whose differences do not vary (one document, or the same difference on every
    document) says nothing; the exact sign test over the documents (over the clusters where they are
    clustered) does, or there are too few documents. McNemar's test assumes independent pairs: for clustered
    documents the paired cluster bootstrap is the test."""
    pb, pr = eb.point(), er.point()
    delta = pr - pb
    over = "" if clusters is None else f" over {field}s"
    if metric.binary and clusters is None:
        return "McNemar exact", mcnemar_p(eb.x[:, 0], er.x[:, 0])
    if isinstance(eb, Mean):  # per-document differences (Sum is a Mean)
        per_doc = er.x[:, 0] - eb.x[:, 0]
        if np.ptp(per_doc) == 0:
            units = per_doc if clusters is None else np.bincount(clusters.ids, weights=per_doc)
            return f"sign test{over} (exact: the per-document differences are all equal)", sign_test_p(units)
        return f"paired bootstrap{over}", bootstrap_p(dr - db, delta, clusters)
    diffs = (dr - db)[np.isfinite(dr - db)]
    if delta != 0 and (n < 2 or not len(diffs) or np.ptp(diffs) == 0):
        return "too few documents (the resampled differences do not vary)", None
    if metric.kind == "bleu":
        return f"sacrebleu paired bootstrap{over}", sacrebleu_p(db, dr, pb, pr)
    return f"paired bootstrap{over}", bootstrap_p(dr - db, delta, clusters)


def adjust(tasks: dict):
    """Holm- and Benjamini-Hochberg-adjusted p of every comparison in the report (statsmodels
    ``multipletests``)."""
    from statsmodels.stats.multitest import multipletests

    cells = [c for entry in tasks.values() for per_run in entry["comparisons"].values() for c in per_run.values()
             if c["p"] is not None]  # None: too few documents for a test
    if cells:
        for method, key in (("holm", "p_holm"), ("fdr_bh", "p_bh")):
            for c, p in zip(cells, multipletests([c["p"] for c in cells], method=method)[1]):
                c[key] = float(p)


def report_data(runs, skipped, specs, settings, progress, workers=1) -> tuple[dict, dict]:
    """The report's numbers and ``{task: {figure name: PNG}}``; each task read, resampled and drawn by itself
    (in ``workers`` processes side by side)."""
    from .render import task_figures
    from .workers import each

    def work(task):
        having = [run.with_task(task, specs[task]) for run in runs if task in run.samples]
        entry = task_report(task, specs[task], having, settings["baseline"], settings)
        return entry, task_figures(task, entry, settings["baseline"])

    tasks = task_names(runs)
    sizes = {task: sum(run.samples[task].stat().st_size for run in runs if task in run.samples) for task in tasks}
    done = each(work, tasks, sizes, workers, progress)
    entries = {task: entry for task, (entry, _) in done.items()}
    adjust(entries)
    data = {"settings": settings,
            "runs": {run.name: {"path": run.path, "model": run.model, "results_file": run.results_file,
                                "harness": run.harness, "source": run.results_file} for run in runs},
            "tasks": entries, "skipped": skipped}
    return data, {task: images for task, (_, images) in done.items()}


def task_names(runs) -> list:
    return sorted({t for run in runs for t in run.samples})
