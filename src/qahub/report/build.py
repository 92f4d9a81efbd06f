"""The numbers of a report: scores with bootstrap intervals, breakdowns by category, paired comparisons."""

from __future__ import annotations

import math
import os

import numpy as np

from .alike import Pairings
from .judges import JUDGE_METRICS, same_judge_only
from .model import TaskReport
from .ranks import ranking
from .runs import ReportError, numbers, task_metrics
from .stats import (
    MIN_UNITS,
    Bleu,
    Clusters,
    Distinct,
    Linear,
    Mean,
    Sum,
    bleu_statistics,
    bootstrap,
    bootstrap_p,
    clopper_pearson,
    clustered_stderr,
    detectable,
    effective_size,
    fewest_units,
    interval,
    mcnemar_p,
    permutation_p,
    plural,
    sacrebleu_p,
    sign_test_p,
    smallest_p,
    unit_statistics,
    wilson,
)
from .variance import constant, negligible, same_nonzero

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


FEW_FOR_PERCENTILE = 4
"""The fewest independent units a percentile bootstrap interval is given from. Over 2 or 3 units (dialogues,
themes, documents) a bootstrap has 3 or 10 distinct resamples: its quantiles are the sample's extremes, and a
run whose units are all 0 gets [0, 0] beside a nonzero run's wide one. The score is given with no interval,
and ``no_interval`` says why; the tests that suit few units (sign-flip, sign) still run."""


def cell(value, draws, n, confidence, wilson_of=None, units=None, bounds=None):
    """A score, its interval and count: the Wilson interval of ``wilson_of`` (a binary Mean estimator, its
    metric's scale) where given, else the percentile interval of the draws; inside the metric's range
    ``bounds`` and holding the value (``fitted``). ``units``: (count, word) of the independent units the score
    stands on; fewer than 2 (or, for a percentile interval, ``FEW_FOR_PERCENTILE``), or a percentile interval of
    zero width: no interval, and ``no_interval`` says why."""
    found = {"value": _number(value), "ci": [None, None], "n": int(n)}
    if units is not None and units[0] < 2:
        return {**found, "no_interval": f"{plural(*units)}: no interval"}
    if wilson_of is not None:
        est, scale = wilson_of
        ci = [scale * bound for bound in wilson(int((est.x[:, 0] != 0).sum()), est.n(), confidence)]
        return {**found, "ci": fitted(ci, value, bounds) if est.n() else [None, None]}
    why = no_percentile(units, draws, confidence)
    if why:
        return {**found, "no_interval": why}
    return {**found, "ci": fitted(interval(draws, confidence), value, bounds)}


def no_percentile(units, draws, confidence) -> str | None:
    """Why a percentile bootstrap interval of ``draws`` is not given, or None: too few units
    (``FEW_FOR_PERCENTILE``), or an interval of zero width (``variance.negligible``: a false certainty)."""
    if units is not None and units[0] < FEW_FOR_PERCENTILE:
        return (f"{plural(*units)}: a percentile bootstrap over fewer than {FEW_FOR_PERCENTILE} gives no sensible "
                "interval (its resamples are a handful of the same few)")
    low, high = interval(draws, confidence)
    if low is not None and negligible(high - low, max(abs(low), abs(high))):
        return f"the resamples give the zero-width interval [{low:.4g}, {high:.4g}]: no interval"
    return None


def fitted(ci, value, bounds=None) -> list:
    """The interval ``ci`` inside ``bounds`` (the metric's range, None: none) and holding ``value``: a Wilson
    bound of 5.55e-17 for 0 of 7 is 0, a percentile or centred interval that misses its point is widened to
    it."""
    low, high = ci
    if low is None or value is None or not math.isfinite(value):
        return list(ci)
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return [float(min(low, value)), float(max(high, value))]


def _number(value):
    return None if value is None or not math.isfinite(value) else float(value)


def task_report(task, spec, runs, baseline, settings) -> dict:
    """A task's entry of report.json: every run's scores, the comparisons with the baseline, the ranking and the
    leader test, each pair of runs paired once (``alike.Pairings``) and every estimator resampled in one pass per
    design."""
    metrics = task_metrics(spec)
    entry = new_entry(task, spec, metrics, runs)
    found = {run.name: design(run.tasks[task]) for run in runs}
    designs = {name: clusters for name, (clusters, _) in found.items()}
    estimators, jobs = run_estimators(task, metrics, runs, designs, entry)
    entry["cluster"] = cluster_entry(runs, task, found, estimators)
    entry["intervals"] = intervals(metrics, runs, task, designs, estimators, entry["cluster"]["field"])
    entry["notes"] += cluster_notes(entry["cluster"], entry["main_metric"])
    pairings = Pairings(task, designs)
    base = next((r for r in runs if r.name == baseline), None)
    pairs = baseline_pairs(task, base, runs, pairings, entry)
    matches = {name: matched(name, baseline, pair, estimators) for name, pair in pairs.items()}
    same_judge_only(task, base, matches, runs, entry)
    # the pair's documents are the same: clustered as whichever run records their clusters
    paired_designs = {name: _taken(designs.get(baseline), pair.base_index) or _taken(designs[name], pair.run_index)
                      for name, pair in pairs.items()}
    jobs += [(len(pair.base_index), paired_designs[name], comparison_estimators(name, matches[name]))
             for name, pair in pairs.items()]
    draws = resampled(jobs, settings)
    scores(entry, runs, task, estimators, draws, settings["confidence"], metrics, designs)
    for name, pair in pairs.items():
        entry["comparisons"][name] = compare(name, metrics, matches[name], len(pair.base_index), draws, settings,
                                             paired_designs[name], entry["cluster"]["field"])
        for c in entry["comparisons"][name].values():  # a pair that is not like with like is never starred
            if c["no_star"] is None and pair.caveats:
                c["no_star"] = "not like with like: " + "; ".join(pair.caveats)
    shown_facts(entry, task, runs, baseline)
    entry["ranking"] = ranking(task, spec, runs, baseline, estimators, designs, draws, settings["confidence"],
                               pairings)
    entry["leader"] = leader_test(task, spec, metrics, runs, baseline, estimators, pairings,
                                  entry["cluster"]["field"], settings, draws)
    return entry


def new_entry(task, spec, metrics, runs) -> dict:
    """A task's entry before its numbers: its main metric, each metric's range and the notes of how it was read."""
    entry = {"main_metric": spec.headline, "scores": {}, "breakdown": {}, "comparisons": {}, "notes": [],
             "warnings": [], "best": None, "caveats": {}, "not_compared": {},
             "ranges": {name: list(m.range) if m.range else None for name, m in metrics.items()}}
    entry["notes"] += [bleu_note(metric) for metric in metrics.values() if metric.kind == "bleu"]
    entry["notes"] += [f"{run.name}: {note}" for run in runs for note in run.tasks[task].notes]
    return entry


def run_estimators(task, metrics, runs, designs, entry) -> tuple[dict, list]:
    """``{run: {metric: estimator}}`` and the resampling jobs ``(documents, clusters, {key: (estimator,
    index)})`` of each run's scores and its category breakdowns."""
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
    return estimators, jobs


def baseline_pairs(task, base, runs, pairings, entry) -> dict:
    """``{run: Pairing}`` of each run compared with the baseline (its verdict recorded in ``entry``)."""
    pairs = {}
    for run in runs:
        if base is not None and run is not base:
            pair = pairings(base, run)
            pair.record(entry)
            if pair.compared:
                pairs[run.name] = pair
    return pairs


def resampled(jobs, settings) -> dict:
    """The draws of every job's estimators; resamples depend on the document count and clusters only: one pass
    per design."""
    by_design = {}
    for n, clusters, keyed in jobs:
        by_design.setdefault((n, clusters.key if clusters else None), (clusters, {}))[1].update(keyed)
    draws = {}
    for (n, _), (clusters, keyed) in by_design.items():
        draws.update(bootstrap(keyed, n, settings["seed"], settings["resamples"], clusters))
    return draws


def shown_facts(entry, task, runs, baseline):
    """What the first screen shows beside the numbers: each run's ``run_facts`` and, on each comparison,
    ``paired_of``, the documents each run scored with a value of the metric (fewer paired than that is marked)."""
    entry["run_facts"] = {run.name: run_facts(run.tasks[task], run.harness) for run in runs}
    for name, per in entry["comparisons"].items():
        for m, c in per.items():
            c["paired_of"] = {"baseline": entry["scores"][baseline][m]["n"], "run": entry["scores"][name][m]["n"]}


def run_facts(task_run, harness) -> dict:
    """What a run of a task read and how, for the report's run table: the dataset, config and split its harness
    recorded (a local folder by its name only: a local path is never shown; its name alone, as publishing cuts it,
    so a run reads the same here and from its published copy), shots, how prompts were sent, the documents it
    scored and its document limit (lm-eval's --limit, lighteval's --max-samples)."""
    path, config, split = (*task_run.dataset, None, None, None)[:3]
    if isinstance(path, str) and os.path.isabs(path):
        path = os.path.basename(path.rstrip(os.sep))
    return {"harness": harness, "dataset": path, "config": config, "split": split, "n_shot": task_run.n_shot,
            "prompt_format": task_run.prompt_format, "documents": len(task_run.keys), "limit": task_run.limit}


def leader_test(task, spec, metrics, runs, baseline, estimators, pairings, field, settings, draws=None):
    """Whether the leader beats every run besides the baseline (its comparison with the baseline is among
    ``comparisons``): with three runs or more and a leader (the best main-metric value, no tie) other than the
    baseline, its paired test of the main metric with each other run, the same test as a comparison's,
    Holm-adjusted among themselves and starred as a comparison is: ``{"run": leader, "against": {run: cell}}``
    (a cell's delta is the run minus the leader), else None. "Best" is then the intersection of those claims,
    each at level alpha: no further adjustment is owed (the intersection-union test)."""
    main, alpha = spec.headline, 1 - settings["confidence"]
    points = {run.name: estimators[run.name][main].point() for run in runs if main in estimators[run.name]}
    higher = {**spec.metrics, **spec.judge_metrics}[main].higher_is_better
    ranked = sorted(points, key=points.get, reverse=higher)
    if len(ranked) < 3 or ranked[0] == baseline or points[ranked[0]] == points[ranked[1]]:
        return None
    lead = next(run for run in runs if run.name == ranked[0])
    against = {}
    for run in runs:
        if run.name in (lead.name, baseline):
            continue
        pair = pairings(lead, run)
        if not pair.alike or main not in estimators[run.name]:
            return None  # not compared, or not like with like: no best
        against[run.name] = leader_cell(pair, metrics, main, estimators, pairings.designs, field, settings, draws)
    tested = [c for c in against.values() if c["p"] is not None]
    if tested:
        for c, p in zip(tested, adjusted([c["p"] for c in tested], "holm")):
            c["p_holm"] = float(p)
    for c in against.values():
        c["star"] = c["p_holm"] is not None and c["p_holm"] < alpha and c["no_star"] is None
    return {"run": lead.name, "against": against}


def leader_cell(pair, metrics, main, estimators, designs, field, settings, draws) -> dict:
    """The leader's paired test of ``main`` with one other run (``pair``: the leader is its base)."""
    match = {main: matched(pair.run, pair.base, pair, estimators)[main]}
    clusters = _taken(designs.get(pair.base), pair.base_index) or _taken(designs.get(pair.run), pair.run_index)
    found = reused(draws, pair, main, match[main]) or bootstrap(
        comparison_estimators(pair.run, match), len(pair.base_index), settings["seed"], settings["resamples"],
        clusters)
    return compare(pair.run, metrics, match, len(pair.base_index), found, settings, clusters, field)[main]


def reused(draws, pair, m, match):
    """The leader's and the other run's draws of ``m`` from the task's own pass, as the pair's ``bootstrap`` would
    draw them, or None. The same: the pair is the two runs' own estimators (the same documents in the same order,
    every one with a value), the runs resampled alike (``pair.same_design``), and each estimator's draws not a
    matrix product's of other columns beside it: one that is not linear is drawn by itself, and a linear one's
    sums of whole numbers (BLEU's statistics, a 0/1 metric's values, Jeopardy's game score) are exact in any
    order. Saves a resampling pass a run (BLEU's is long)."""
    eb, er, index = match
    lead, name = pair.base, pair.run
    if draws is None or not (pair.same_order and index is None and pair.same_design):  # not the runs' own
        return None
    if not all(not isinstance(est, Linear) or est.halved or whole(est.x) for est in (eb, er)):
        return None
    own = (draws.get((lead, m, None, None)), draws.get((name, m, None, None)))
    if own[0] is None or own[1] is None:
        return None
    return {("vs", name, m, "b"): own[0], ("vs", name, m, "r"): own[1]}


def whole(x) -> bool:
    """Every value a whole number small enough that any order of summing it is exact."""
    return bool(np.all(np.mod(x, 1) == 0) and np.abs(x).sum() < 2 ** 40)


def design(task_run):
    """(the ``Clusters`` a run's documents are resampled by, None: one by one; why one by one, None when the
    task's clusters are used). A clustered task is resampled by document when the run records no cluster
    (``clusters`` None: e.g. an inspect log written before clusters were recorded) or no document has one
    (Jeopardy's ``qa`` rows have no theme): never a cluster line that is not true."""
    name, keys = task_run.cluster_name, task_run.clusters
    if name is None:
        return None, "the task declares no cluster (its documents do not share a context)"
    if keys is None:
        return None, f"the run records no {name}"
    if all(key is None for key in keys):
        return None, f"no document has a {name}"
    return Clusters.of(keys), None


def unit_count(clusters, docs) -> int:
    """How many independent units the documents ``docs`` (indices) are: their clusters, or themselves."""
    docs = np.asarray(docs, dtype=np.int64)
    if clusters is None:
        return len(docs)
    key = (clusters.key, docs.tobytes())  # every run's every category asks again: counted once
    if key not in _UNITS:
        if len(_UNITS) > 10_000:
            _UNITS.clear()
        _UNITS[key] = len(np.unique(clusters.ids[docs]))
    return _UNITS[key]


_UNITS = {}


def _taken(clusters, index):
    return None if clusters is None else clusters.take(index)


def cluster_entry(runs, task, found, estimators) -> dict:
    """The task's cluster field (None: the task declares none), and per run the count of clusters (None: its
    documents are resampled one by one, ``by_document`` says why) and documents and each mean metric's design
    effect: its clustered variance / its per-document variance."""
    field = next((run.tasks[task].cluster_name for run in runs if run.tasks[task].cluster_name), None)
    per_run = {}
    for run in runs:
        (clusters, why), n = found[run.name], len(run.tasks[task].keys)
        effects = {}
        for m, est in estimators[run.name].items():
            if isinstance(est, Mean) and est.n() > 1 and (clusters is None or clusters.count > 1):
                kept = np.flatnonzero(est.x[:, 1] > 0)
                values = est.x[kept, 0]
                plain = clustered_stderr(values)
                effects[m] = (clustered_stderr(values, _taken(clusters, kept)) / plain) ** 2 if plain else None
        count = None if why else n if clusters is None else clusters.count  # n: every cluster one document
        per_run[run.name] = {"clusters": count, "documents": n, "by_document": why, "design_effect": effects}
    return {"field": field, "runs": per_run}


def cluster_notes(cluster, main) -> list:
    """``resampled by conversation: 3 conversations of 60 documents`` or ``resampled by document: why`` (one line
    when every run has the same)."""
    field, lines = cluster["field"], {}
    for name, c in cluster["runs"].items():
        lines.setdefault(cluster_line(field, c, main), []).append(name)
    if len(lines) == 1:
        return list(lines)
    return [f"{', '.join(names)}: {text}" for text, names in lines.items()]


def cluster_line(field, c, main) -> str:
    if c["by_document"]:
        return f"resampled by document: {c['by_document']}"
    count, effect = c["clusters"], c["design_effect"].get(main)
    text = f"resampled by {field}: {plural(count, field)} of {plural(c['documents'], 'document')}"
    if effect is not None:
        text += f", design effect of {main} {effect:.2f}"
    if count < 2:
        return text + f" (no interval, test or MDE: at least 2 {field}s are needed)"
    if count < MIN_UNITS:
        return text + f" (approximate, and too few for a star: at least {MIN_UNITS} {field}s)"
    if count < FEW_CLUSTERS:
        text += f" (approximate: fewer than {FEW_CLUSTERS} {field}s)"
    return text


FEW_CLUSTERS = 30  # fewer clusters than this: a cluster bootstrap is approximate, the sign-flip test replaces its p
WILSON = "Wilson score interval"  # the method of a metric's intervals that ``cell`` makes with ``wilson``


def intervals(metrics, runs, task, designs, estimators, field) -> dict:
    """How each metric's intervals are made: Wilson for a 0/1 metric whose documents are not clustered (every
    run's values 0 or the metric's scale), half-samples for distinct-n, else the percentile bootstrap."""
    clustered = any(design is not None for design in designs.values())
    unit = f"{field}s" if clustered else "documents"
    fewest = min((d.count for d in designs.values() if d is not None), default=None)
    few = "" if fewest is None or fewest >= FEW_CLUSTERS else f" (approximate: fewer than {FEW_CLUSTERS} {field}s)"
    few += f"; none from 1 {field}" if fewest == 1 else ""
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


def scores(entry, runs, task, estimators, draws, confidence, metrics, designs=None):
    wilson_ones = {m for m, method in entry["intervals"].items() if method == WILSON}
    flat = set()  # the metrics of which a cell got ``flat_cell``'s interval
    still = set()  # the metrics of which a cell's resamples did not vary (BLEU, distinct-n): no interval

    def made(m, est, value, key, n, units):
        every = None if m in wilson_ones or units[0] < 2 else flat_value(est)
        if every is None and m not in wilson_ones and units[0] >= 2 and not isinstance(est, Mean) \
                and does_not_vary(draws[key]):  # BLEU or distinct-n: no [v, v] of resamples that cannot vary
            still.add(m)
            return {"value": _number(value), "ci": [None, None], "n": int(n),
                    "no_interval": f"every resample gives {value:.4g} (no variance): no interval"}
        if every is None:
            return cell(value, draws[key], n, confidence, (est, metrics[m].scale) if m in wilson_ones else None,
                        units, metrics[m].range)
        flat.add(m)
        clustered = (designs or {}).get(key[0]) is not None
        effect = entry["cluster"]["runs"][key[0]]["design_effect"].get(m)
        return flat_cell(metrics[m], value, every, n, units, clustered, effect, confidence)

    for run in runs:
        tr, clusters = run.tasks[task], (designs or {}).get(run.name)
        word = entry["cluster"]["field"] if clusters is not None else "document"
        every = np.arange(len(tr.keys))
        entry["scores"][run.name] = {m: made(m, e, tr.values[m], (run.name, m, None, None), count(e, len(tr.keys)),
                                             score_units(e, every, clusters, word))
                                     for m, e in estimators[run.name].items()}
        for m, c in entry["scores"][run.name].items():  # a breakdown cell's is its run's (its documents: its n)
            c["signature"] = tr.signature.of_metric(m, m in JUDGE_METRICS).to_dict() if tr.signature else None
        for field, cats in category_index(tr).items():
            for cat, index in cats.items():
                slot = entry["breakdown"].setdefault(field, {}).setdefault(cat, {}).setdefault(run.name, {})
                for m, e in estimators[run.name].items():
                    part = e.take(index)
                    slot[m] = made(m, part, part.point(), (run.name, m, field, cat), count(part, len(index)),
                                   score_units(part, index, clusters, word))
    for m in sorted(flat):
        entry["intervals"][m] += f"; {flat_method(metrics[m], entry['cluster']['field'])}"
    for m in sorted(still):
        entry["intervals"][m] += "; no interval where every resample gives the same value"


def same_difference(diffs, delta) -> bool:
    """Whether every finite resampled difference is the nonzero ``delta`` (``variance.same_nonzero``): the paired
    test and the comparison's interval decide it alike."""
    return same_nonzero(diffs, delta)


def does_not_vary(draws) -> bool:
    """Whether the finite resampled values are all one value (``variance.constant``)."""
    return constant(draws)


FLAT = "Clopper-Pearson"  # the method of a cell whose values are all 0 or all the scale (``flat_cell``)


def flat_value(est):
    """The one value every document of a mean's (or sum's) cell has, else None: a cell a resample cannot vary."""
    if not isinstance(est, Mean):
        return None
    values = est.x[est.x[:, 1] > 0, 0]
    return float(values[0]) if constant(values) else None


def flat_cell(metric, value, every, n, units, clustered, effect, confidence):
    """The interval of a cell whose documents all have the value ``every``, where a percentile bootstrap gives
    ``[every, every]``, a false certainty. At a bound of a mean in [0, scale] (0, or the scale), Clopper-Pearson's
    exact interval of 0 (or all) successes in the cell's effective sample size (``effective_size``): exact for
    any values in [0, scale], not only 0/1 (a mean mu makes each value 0 with probability at most 1 - mu/scale,
    so n zeros have at most the probability they have in the 0/1 case), and, over the clusters, for n = the
    clusters (each cluster's first document). Elsewhere (0.5 on every document, a sum, a mean of no known
    range) nothing bounds the mean: no interval, and ``no_interval`` says why."""
    found = {"value": _number(value), "ci": [None, None], "n": int(n)}
    at_bound = metric.kind == "mean" and metric.bounded and every in (0.0, metric.scale)
    if not at_bound:
        found["no_interval"] = f"every value is {every:g} (no variance), a value no known range bounds: no interval"
        return found
    size = effective_size(n, units[0] if clustered else None, effect)
    low, high = clopper_pearson(size if every else 0, size, confidence)
    if not clustered:
        how = f"n = {plural(n, 'document')}"
    elif effect is None:
        how = f"n = {plural(units[0], units[1])}, the conservative bound (no design effect: no variance)"
    else:
        how = f"n = {n} documents / design effect {effect:.2f}, between {plural(units[0], units[1])} and {n}"
    found.update(ci=fitted([metric.scale * low, metric.scale * high], value, metric.range), n_effective=size,
                 method=f"{FLAT}, every value {every:g} (no variance): {how}")
    return found


def flat_method(metric, field) -> str:
    """What ``entry["intervals"]`` adds for a metric some of whose cells are ``flat_cell``'s."""
    among = f"documents / the run's design effect, or its {field}s where that is not estimable" if field else \
        "its documents"
    return (f"{FLAT} where every value of a score is 0 or every one {metric.scale:g} (no variance: a resample "
            f"cannot vary), n its effective sample size ({among}); no interval where every value is another one")


def score_units(est, index, clusters, word):
    """(count, word) of the independent units of the documents ``index`` that have a value of ``est``."""
    docs = index[est.x[:, 1] > 0] if isinstance(est, Mean) else index
    return unit_count(clusters, docs), word


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


def matched(name, baseline, pair, estimators) -> dict:
    """``{metric: (baseline estimator, run estimator, index)}`` on the paired documents of the ``Pairing`` ``pair``,
    index None for all."""
    ib, ir = pair.pairs
    # the same documents in the same order: the runs' own estimators
    take = (lambda est, index: est) if pair.same_order else (lambda est, index: est.take(index))  # noqa: E731
    return {m: paired(take(est, ib), take(estimators[name][m], ir)) for m, est in estimators[baseline].items()
            if m not in NOT_COMPARED and m in estimators[name]}


def comparison_estimators(name, matches) -> dict:
    keyed = {}
    for m, (eb, er, index) in matches.items():
        keyed[("vs", name, m, "b")], keyed[("vs", name, m, "r")] = (eb, index), (er, index)
    return keyed


def compare(name, metrics, matches, n_pairs, draws, settings, clusters=None, field=None) -> dict:
    """Delta, its interval, p and the test of each metric, the minimum detectable difference, the independent
    units (clusters, or documents) and why a star would be withheld (``no_star``: fewer than ``MIN_UNITS``
    units; ``adjust`` keeps it only where p_holm < alpha and sets ``star``). Fewer than 2 units: no interval, test
    or MDE. The BLEU test is sacrebleu's paired bootstrap, on the resamples it draws (default_rng(seed).choice
    over the paired documents; over the clusters when the documents are clustered)."""
    result, alpha = {}, 1 - settings["confidence"]
    for m, (eb, er, index) in matches.items():
        db, dr = draws[("vs", name, m, "b")], draws[("vs", name, m, "r")]
        delta, diffs = er.point() - eb.point(), dr - db
        n = n_pairs if index is None else len(index)
        design = clusters if index is None else _taken(clusters, index)
        units = n if design is None else design.count
        c = {"delta": _number(delta), "ci": [None, None], "p": None, "p_holm": None, "p_bh": None, "test": None,
             "n": n, "units": units, "mde": None, "mde_note": None, "underpowered": None, "star": False,
             "no_star": None}
        if units < 2:
            c["test"] = c["mde_note"] = f"{plural(units, field if clusters is not None else 'document')}: " \
                                        "no interval, test or MDE"
        else:
            test, p, exact, (count, word) = paired_test(metrics[m], eb, er, db, dr, n, design, field, settings)
            se = paired_stderr(eb, er, diffs, design)
            c.update(test=test, p=p, **delta_interval(diffs, delta, (units, word_of(design, field)),
                                                      metrics[m].range, settings["confidence"]))
            if p is not None and count < MIN_UNITS:
                c["no_star"] = f"{plural(count, word)}: too few for a star (at least {MIN_UNITS})"
            mde, c["mde_note"], c["underpowered"] = power(delta, se, alpha, exact, n, design, field,
                                                          metrics[m].scale if test == MCNEMAR else None)
            c["mde"] = _number(mde)
            if c["no_star"] and not c["underpowered"]:  # whatever p, the star rule withholds a star here
                c["underpowered"] = f"underpowered: {c['no_star']}, so no difference can be starred"
        result[m] = c
    return result


def delta_interval(diffs, delta, units, bounds, confidence) -> dict:
    """``{"ci": ...}`` of a comparison, or ``{"ci": [None, None], "no_interval": why}``: every resample the same
    difference d != 0 (every document differs alike; the paired test decides it alike: ``same_difference``)
    would be a false certainty [d, d]; identical scores on every resample (the same replies) keep [0, 0], which
    is exact; fewer units than ``FEW_FOR_PERCENTILE`` or a zero-width interval give none (``no_percentile``).
    Inside the difference's range (that of the metric's ``bounds``) and holding ``delta``."""
    if same_difference(diffs, delta):
        return {"ci": [None, None], "no_interval": "every resample gives the same difference: no interval"}
    constant_zero = constant(diffs) and negligible(abs(delta))
    why = None if constant_zero else no_percentile(units, diffs, confidence)
    if why:
        return {"ci": [None, None], "no_interval": why}
    width = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
    return {"ci": fitted(interval(diffs, confidence), delta, width)}


def word_of(clusters, field) -> str:
    return "document" if clusters is None else field


def power(delta, se, alpha, exact, n, clusters, field, scale=None):
    """(minimum detectable difference, why there is none, the underpowered sentence). An exact test of
    ``exact`` (count, word) non-tied units whose smallest p is not below alpha can detect nothing; a zero
    standard error gives no MDE (McNemar's has the exact test's own: ``fewest_units`` documents discordant one
    way)."""
    if exact is not None and exact[0] == 0:  # Δ 0 from a test that cannot reject is not "the two are equal"
        return None, "not estimable: the paired values do not differ", \
            f"underpowered: no difference can be significant ({plural(*exact)}: the paired values do not differ)"
    if exact is not None and smallest_p(exact[0]) >= alpha:
        why = f"the exact test's smallest p with {plural(*exact)} is {smallest_p(exact[0]):.3g}"
        return None, f"not estimable: {why}", f"underpowered: no difference can be significant ({why})"
    if not negligible(se, delta):  # not a standard error of rounding noise (differences that do not vary)
        mde = detectable(se, alpha)
        return mde, None, underpowered(delta, mde, n, clusters, field)
    if scale is not None:  # McNemar's (``scale``: the metric's): every document discordant the same way
        k = fewest_units(alpha)
        mde = scale * k / n
        return mde, (f"the exact test's smallest detectable difference: {k} of {n} documents discordant one way"), \
            underpowered(delta, mde, n, clusters, field)
    return None, "not estimable: the paired differences do not vary (standard error 0)", None


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
    where = f"{n} documents" + (f" ({plural(clusters.count, field)})" if clusters is not None else "")
    return f"underpowered: a difference below {mde:.3g} cannot be seen with {where}"


MCNEMAR = "McNemar exact"


def zero_or_scale(metric, *ests) -> bool:
    """Whether every value of the estimators is 0 or the metric's scale (an epoch mean of 0.5 is not)."""
    return all(type(e) in (Mean, Sum) and np.isin(e.x[e.x[:, 1] > 0, 0], [0.0, metric.scale]).all() for e in ests)


def paired_test(metric, eb, er, db, dr, n, clusters=None, field=None, settings=None):
    """(test, p, exact, (count, word)): ``exact`` (count, word) of the non-tied units of an exact test (None for
    a bootstrap), ``count`` the units the star rule counts (clusters; discordant or non-tied documents;
    documents).

    McNemar's exact test for a 0/1 metric (every value 0 or its scale) of independent documents. A bootstrap
    whose differences do not vary (the same difference on every document; for BLEU and distinct-n, in every
    resample) says nothing: the exact sign test over the documents (over the clusters where they are clustered)
    does (``unit_sign_test``). Fewer than ``FEW_CLUSTERS`` units
    that differ: the sign-flip permutation test of the per-unit summed differences (a paired bootstrap of few
    units cannot reach small p honestly); else the paired (cluster) bootstrap."""
    settings = settings or {}
    over = "" if clusters is None else f" over {field}s"
    if metric.binary and clusters is None and zero_or_scale(metric, eb, er):
        discordant = int(((eb.x[:, 0] > 0) != (er.x[:, 0] > 0)).sum())
        counted = (discordant, "discordant document")
        return MCNEMAR, mcnemar_p(eb.x[:, 0], er.x[:, 0]), counted, counted
    delta = er.point() - eb.point()
    if isinstance(eb, Mean):  # per-document differences (Sum is a Mean)
        per_doc = per_doc_differences(eb, er)
        units = per_doc if clusters is None else np.bincount(clusters.ids, weights=per_doc, minlength=clusters.count)
        differing = (int((units != 0).sum()), "non-tied document" if clusters is None else f"differing {field}")
        counted = (clusters.count, field) if clusters is not None else differing
        if constant(per_doc):  # the one rule (``variance``): the interval is dropped alike (``same_difference``)
            return (f"sign test{over} (exact: the per-document differences are all equal)", sign_test_p(units),
                    differing, counted)
        if differing[0] < FEW_CLUSTERS:  # a unit whose difference is 0 flips to itself: left out, the same test
            p, exact = permutation_p(units[units != 0], settings.get("seed", 0), settings.get("resamples", 1000))
            how = "exact" if exact else f"{settings.get('resamples', 1000)} random sign patterns"
            return f"sign-flip permutation test{over} ({how})", p, differing, counted
        return f"paired bootstrap{over}", bootstrap_p(dr - db, delta, clusters), None, counted
    counted = (clusters.count, field) if clusters is not None else (n, "document")
    diffs = (dr - db)[np.isfinite(dr - db)]
    if not len(diffs) or not math.isfinite(delta):
        return f"no test: no resample gives both runs a {metric.name}", None, None, counted
    if same_difference(diffs, delta):
        return unit_sign_test(metric, eb, er, n, clusters, field)
    if metric.kind == "bleu":
        return f"sacrebleu paired bootstrap{over}", sacrebleu_p(db, dr, eb.point(), er.point()), None, counted
    return f"paired bootstrap{over}", bootstrap_p(dr - db, delta, clusters), None, counted


def per_doc_differences(eb, er) -> np.ndarray:
    """The run's value minus the baseline's on each document, rounding noise (``variance.negligible`` beside the
    values) set to the 0 it is."""
    per_doc = er.x[:, 0] - eb.x[:, 0]
    scale = float(np.abs(np.concatenate([eb.x[:, 0], er.x[:, 0]])).max(initial=0.0))
    return np.where(negligible(np.abs(per_doc), scale), 0.0, per_doc)


def unit_sign_test(metric, eb, er, n, clusters=None, field=None):
    """The test of a BLEU or distinct-n whose resampled difference is the same in every resample (BLEU 0 against
    100 on every document, one reply repeated in every document of each run): a bootstrap then has nothing to
    measure, whatever the number of documents. The exact sign test of the units' own differences (each
    cluster's, or document's, statistic of its documents alone) does, with the smallest p its units allow.
    Returns ``paired_test``'s (test, p, exact, counted)."""
    ids, count = (np.arange(n), n) if clusters is None else (clusters.ids, clusters.count)
    per_unit = unit_statistics(er, ids, count) - unit_statistics(eb, ids, count)
    per_unit = per_unit[np.isfinite(per_unit)]
    word = "document" if clusters is None else field
    differing = (int((per_unit != 0).sum()), "non-tied document" if clusters is None else f"differing {field}")
    counted = (clusters.count, field) if clusters is not None else differing
    test = (f"sign test of each {word}'s own {metric.name} (exact: the resampled differences do not vary, "
            f"{plural(count, word)})")
    return test, sign_test_p(per_unit), differing, counted


def adjust(tasks: dict, alpha: float = 0.05):
    """Holm- and Benjamini-Hochberg-adjusted p of every comparison in the report (statsmodels
    ``multipletests``), then each cell's verdict: ``star`` where p_holm < ``alpha`` and nothing withholds it
    (``no_star`` kept only there), and no "underpowered" where the test rejected."""
    every = [c for entry in tasks.values() for per_run in entry["comparisons"].values() for c in per_run.values()]
    cells = [c for c in every if c["p"] is not None]  # None: too few documents for a test
    if cells:
        for method, key in (("holm", "p_holm"), ("fdr_bh", "p_bh")):
            for c, p in zip(cells, adjusted([c["p"] for c in cells], method)):
                c[key] = float(p)
    for c in every:
        rejected = c["p_holm"] is not None and c["p_holm"] < alpha
        c["no_star"] = c.get("no_star") if rejected else None
        c["star"] = rejected and c["no_star"] is None
        if rejected:
            c["underpowered"] = None


def adjusted(pvalues, method):
    """statsmodels ``multipletests(pvalues, method=method)``'s adjusted p. Its Holm runs a full ``gc.collect()``,
    which walks every object the report holds (the runs' items: a second or so each time at 100 runs); the
    objects there are frozen out of the collector's sight meanwhile (``gc.freeze``), then given back."""
    import gc

    from statsmodels.stats.multitest import multipletests

    gc.freeze()
    try:
        return multipletests(pvalues, method=method)[1]
    finally:
        gc.unfreeze()


def best(entry, higher_is_better: bool, baseline: str):
    """The run whose main metric beats every other run of the task with a star, else None: the baseline when
    every other run is starred below it; another run when it is starred above the baseline and, with three
    runs or more, the leader's own tests (``leader_test``) star it above each of the others."""
    main, others = entry["main_metric"], [name for name in entry["scores"] if name != baseline]
    cells = [entry["comparisons"].get(name, {}).get(main) for name in others]
    if baseline not in entry["scores"] or not cells or any(c is None or not c["star"] for c in cells):
        return None
    above = [name for name, c in zip(others, cells) if (c["delta"] > 0) == higher_is_better]
    if not above:
        return baseline
    if len(others) == 1:
        return above[0]
    leader = entry.get("leader")
    if leader is None or leader["run"] not in above:
        return None
    rest = list(leader["against"].values())
    wins = len(rest) == len(others) - 1 and all(c["star"] and (c["delta"] < 0) == higher_is_better for c in rest)
    return leader["run"] if wins else None


def read_one(run, task, spec, keep):
    """``run`` with ``task`` read; without ``keep`` (no Hub files to write from them), not its documents' texts:
    a leaderboard's prompts, held for every run of a task at a time, were most of a worker's memory."""
    return run.with_task(task, spec, texts=keep)


def report_data(runs, skipped, specs, settings, progress, workers=1, keep=False) -> tuple[dict, dict, dict]:
    """The report's numbers (``data["tasks"]``: ``{task: model.TaskReport}``), ``{task: {figure name: PNG}}``
    and, with ``keep``, ``{task: {run: TaskRun}}``: the one reading of each task's samples, for what is written
    from them beside the report (the Hub files); each task read, resampled and drawn by itself (in ``workers``
    processes side by side)."""
    from .render import task_figures
    from .workers import each

    def work(task):
        having = [read_one(run, task, specs[task], keep) for run in runs if task in run.samples]
        entry = task_report(task, specs[task], having, settings["baseline"], settings)
        read = {run.name: run.tasks[task] for run in having} if keep else {}
        return entry, task_figures(task, entry, settings["baseline"]), read

    tasks = task_names(runs)
    sizes = {task: sum(run.samples[task].stat().st_size for run in runs if task in run.samples) for task in tasks}
    done = each(work, tasks, sizes, workers, progress)
    entries = {task: entry for task, (entry, _, _) in done.items()}
    adjust(entries, 1 - settings["confidence"])
    for task, entry in entries.items():
        metric = {**specs[task].metrics, **specs[task].judge_metrics}[entry["main_metric"]]
        entry["best"] = best(entry, metric.higher_is_better, settings["baseline"])
    # every decision about each task made: its typed report, made once here (``model``)
    reports = {task: TaskReport.from_json(entry) for task, entry in entries.items()}
    data = {"settings": settings,
            "runs": {run.name: {"path": run.path, "model": run.model, "results_file": run.results_file,
                                "harness": run.harness, "source": run.results_file} for run in runs},
            "tasks": reports, "skipped": skipped, "leaderboard": leaderboard(entries, [run.name for run in runs])}
    figures = {task: images for task, (_, images, _) in done.items()}
    return data, figures, {task: read for task, (_, _, read) in done.items()}


def leaderboard(tasks: dict, names: list) -> dict:
    """The runs by their mean rank over the tasks that rank runs (``ranking``), in report.json: ``{"tasks",
    "order": [run] best first, "mean_rank": {run: rank}, "unranked": {run: why}}``. A run is on it only when every
    one of those tasks ranks it: a run that did not run a task, or was not ranked there (fewer documents, not like
    with like), would otherwise be lifted by what it left out (its mean over its better tasks alone)."""
    ranked = {task: entry["ranking"]["runs"] for task, entry in tasks.items()
              if (entry.get("ranking") or {}).get("runs")}
    unranked = {}
    for name in names:
        missing = [task for task in ranked if name not in ranked[task]]
        if not ranked:
            unranked[name] = "no task ranks its runs"
        elif missing:
            unranked[name] = "not ranked on " + "; ".join(f"{task} ({not_ranked_why(tasks[task], name)})"
                                                           for task in missing)
    mean = {name: sum(ranked[task][name]["rank"] for task in ranked) / len(ranked)
            for name in names if name not in unranked}
    order = sorted(mean, key=lambda name: (mean[name], names.index(name)))
    return {"tasks": sorted(ranked), "order": order, "mean_rank": mean, "unranked": unranked}


def not_ranked_why(entry, name) -> str:
    """Why a task's ranking leaves ``name`` out."""
    if name not in entry["scores"]:
        return "it did not run it"
    return entry["ranking"]["not_ranked"].get(name, "not ranked")


def task_names(runs) -> list:
    return sorted({t for run in runs for t in run.samples})
