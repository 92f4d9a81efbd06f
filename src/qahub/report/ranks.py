"""A task's ranking with intervals: each run's rank on the main metric and the marginal confidence set of that
rank, from the report's own bootstrap resamples (no pairwise test of every pair of runs).

The method is the single-step, two-sided marginal confidence set for ranks of Mogstad, Romano, Shaikh and Wilhelm,
"Inference for Ranks with Applications to Mobility across Neighborhoods and Academic Achievement across
Countries", Review of Economic Studies 91(1), 2024 (doi:10.1093/restud/rdad006), as R's ``csranks(simul=FALSE,
stepdown=FALSE)`` computes it, with one change: the differences' joint distribution is the report's nonparametric
(cluster) bootstrap of the runs' scores on the same resampled documents, not ``csranks``' normal draws. For a run
j, the differences of its score with every other run's get simultaneous intervals (the max-|t| quantile over them);
its rank is at least 1 + the runs surely above it and at most the count of runs - those surely below it. Such a set
covers the run's own rank with the stated probability (approximately: the bootstrap's); it is not a joint statement
about every run at once. Runs are ranked together only where they share the resamples: the same documents in the
same order, resampled alike (the same clusters), and like with like (the same shots and prompts)."""

from __future__ import annotations

import numpy as np

from .alike import Pairings
from .stats import MIN_UNITS, plural
from .variance import negligible

METHOD = ("marginal 95 % confidence set of each run's rank (Mogstad, Romano, Shaikh & Wilhelm, Review of "
          "Economic Studies 2024: single-step, two-sided, as R's csranks), the score differences' joint "
          "distribution from the report's own bootstrap resamples of the documents (clusters where the task has "
          "them), which the runs ranked together share; for each run alone, not for every run at once")
MIN_RANKED = 3  # fewer runs than this ranked together: the comparisons with the baseline say it all


def ranking(task, spec, runs, baseline, estimators, designs, draws, confidence, pairings=None) -> dict | None:
    """``{"metric", "reference", "method", "runs": {run: {"rank", "ci", "value"}} best first, "not_ranked":
    {run: why}}`` of a task's main metric, rank 1 the best; None when fewer than ``MIN_RANKED`` runs have it.
    The runs ranked are the reference (the baseline, else the task's first run) and those scored on the same
    documents in the same order, resampled alike and like with like with the reference *and* with every run
    ranked before them (``unlike``: like with like is not transitive, a field one run does not record matches
    any). ``pairings``: the task's ``alike.Pairings`` (each pair paired once)."""
    main = spec.headline
    having = [run for run in runs if main in estimators[run.name]]
    if len(having) < MIN_RANKED:
        return None
    reference = next((run for run in having if run.name == baseline), having[0])
    pairings = pairings or Pairings(task, designs)
    ranked, not_ranked = [reference], {}
    for run in runs:
        if run is not reference:
            why = unlike(reference, run, main, estimators, pairings, ranked[1:])
            if why:
                not_ranked[run.name] = why
            else:
                ranked.append(run)
    ranked = [run.name for run in ranked]
    values = np.array([estimators[name][main].point() for name in ranked])
    found = {"metric": main, "reference": reference.name, "method": METHOD.replace("95 %", f"{confidence:.0%}"),
             "runs": {}, "not_ranked": not_ranked}
    if len(ranked) < MIN_RANKED or not np.isfinite(values).all():
        found["note"] = f"fewer than {MIN_RANKED} runs with a {main} value ranked together: no ranking"
        return found
    units = unit_word(reference.tasks[task], designs.get(reference.name))
    if units[0] < MIN_UNITS:  # the star rule's: a handful of units is no evidence that one run is above another
        found["note"] = f"{plural(*units)}: too few to rank (at least {MIN_UNITS})"
        return found
    found["runs"] = ranks_of(spec, main, ranked, values, draws, confidence)
    return found


def ranks_of(spec, main, ranked, values, draws, confidence) -> dict:
    """``{run: {"rank", "ci", "value"}}`` best first, of the runs ``ranked`` together."""
    higher = {**spec.metrics, **spec.judge_metrics}[main].higher_is_better
    sign = 1.0 if higher else -1.0
    draws = np.column_stack([draws[(name, main, None, None)] for name in ranked])
    low, high = rank_sets(sign * values, sign * draws, confidence)
    rank = point_ranks(sign * values)
    return {ranked[i]: {"rank": int(rank[i]), "ci": [int(low[i]), int(high[i])], "value": float(values[i])}
            for i in sorted(range(len(ranked)), key=lambda i: (rank[i], i))}


def unlike(reference, run, main, estimators, pairings, others=()) -> str | None:
    """Why ``run`` is not ranked with ``reference`` (and the runs ``others`` already ranked with it), or None: its
    ``Pairing`` with the reference (the same documents in the same order, resampled alike, like with like) and
    with each of the others (like with like)."""
    if main not in estimators[run.name]:
        return f"no {main}"
    pair = pairings(reference, run)
    if not pair.compared:
        return f"not compared with {reference.name}: {pair.not_compared}"
    if not pair.same_order:
        return f"other documents than {reference.name} (not the same documents in the same order)"
    for other, with_other in ((reference, pair), *((o, pairings(o, run)) for o in others)):
        if with_other.caveats:
            return f"not like with like with {other.name}: " + "; ".join(with_other.caveats)
    if not pair.same_design:
        return f"resampled otherwise than {reference.name} (its documents' clusters differ)"
    return None


def unit_word(task_run, clusters) -> tuple[int, str]:
    """(count, word) of the independent units the ranked runs' documents are: their clusters, or themselves."""
    if clusters is None:
        return len(task_run.keys), "document"
    return clusters.count, task_run.cluster_name


def point_ranks(values) -> np.ndarray:
    """1 + how many values are above each (ties share the better rank: 1, 2, 2, 4)."""
    values = np.asarray(values, dtype=float)
    return 1 + (values[None, :] > values[:, None]).sum(axis=1)


def rank_sets(values, draws, confidence) -> tuple[np.ndarray, np.ndarray]:
    """(lowest, highest) rank of each of J scores (higher is better; rank 1 the best) in its marginal confidence
    set: for each j, the differences values[j] - values[k] get simultaneous intervals d +- z * sd, sd the
    bootstrap standard deviation of the difference and z the ``confidence`` quantile of max over k of
    |(bootstrap difference - d) / sd| (a difference that does not vary in the resamples is known: its interval is
    the point). ``draws``: resamples x J, every run's score on the same resample in a row (a row with a
    non-finite score left out)."""
    values = np.asarray(values, dtype=float)
    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws).all(axis=1)]
    count = len(values)
    centred = draws - values  # each run's resampled score about its own
    low, high = np.ones(count, dtype=int), np.full(count, count)
    for j in range(count):
        d = values[j] - values
        spread = centred[:, [j]] - centred  # resampled difference - observed difference
        sd = spread.std(axis=0, ddof=1) if len(spread) > 1 else np.zeros(count)
        varies = ~negligible(sd, d)
        varies[j] = False
        z = np.quantile((np.abs(spread[:, varies]) / sd[varies]).max(axis=1), confidence) if varies.any() else 0.0
        half = np.where(varies, z * sd, 0.0)
        others = np.arange(count) != j
        low[j] = 1 + int(((d + half < 0) & others).sum())  # surely below another run: that run is above it
        high[j] = count - int(((d - half > 0) & others).sum())
    return low, high
