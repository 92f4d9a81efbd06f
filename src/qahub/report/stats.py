"""Bootstrap over documents, vectorised: each chunk of resamples is a matrix of document multiplicities ``W``
(resamples x documents) and a statistic is computed for every row at once (``W @ columns`` for means, sums
and BLEU's sufficient statistics; n-gram presence for distinct-n). Paired tests: McNemar's exact test
(statsmodels), sacrebleu's paired bootstrap for BLEU (its algorithm and seed, so ``sacrebleu --paired-bs``
gives the same p), a paired bootstrap of the difference for the rest, the exact sign test where the
per-document differences are all equal (a bootstrap of them does not vary), and scipy's sign-flip permutation
test of the per-unit summed differences where the units (clusters, or documents) are few (``permutation_p``)."""

from __future__ import annotations

import functools

import numpy as np

CELLS = 2_000_000  # documents x resamples per chunk: bounds the memory of a multiplicity matrix
KEPT_CELLS = 10_000_000  # the resamples of one document count are kept for the next task up to this size
_kept = {}

MIN_UNITS = 10
"""The fewest independent units a difference is starred from: clusters of a clustered task, discordant documents
(McNemar) or documents whose values differ (sign and paired tests) of an unclustered one. Below it the interval
and p are given, never a star. Clustered inference is unreliable with few clusters: inspect_ai's clustered
standard error (Miller, "Adding Error Bars to Evals", arXiv:2411.00640, Appendix A) needs at least two and uses a
t critical value with clusters - 1 degrees of freedom for few; Cameron & Miller, "A Practitioner's Guide to
Cluster-Robust Inference" (J. Human Resources 50(2), 2015) show cluster-robust tests over-reject with "few"
clusters (from under 20 to under 50, depending on the design). 10 is a floor, not a guarantee: the report flags
fewer than ``FEW_CLUSTERS`` (build.py) as approximate too. With fewer than 2 units there is no interval, test
or minimum detectable difference at all."""
EXACT_UNITS = 16  # up to this many units the sign-flip test enumerates all 2 ** units sign patterns


def plural(count: int, word: str) -> str:
    """``1 conversation``, ``3 conversations``."""
    return f"{count} {word}" + ("" if count == 1 else "s")


def chunks(seed: int, n: int, resamples: int):
    """Multiplicity matrices of ``resamples`` bootstrap resamples of ``n`` documents, a few rows at a time.

    The indices are ``default_rng(seed).choice(n, size=(resamples, n))`` (drawn chunk by chunk: the same
    stream), which is what sacrebleu's paired bootstrap draws; so every task of ``n`` documents gets the same
    resamples, and the last ones drawn are kept for the next task of that size."""
    key = (seed, n, resamples)
    if key in _kept:
        yield from _kept[key]
        return
    rng, size, made = np.random.default_rng(seed), max(1, min(resamples, CELLS // max(n, 1))), []
    for start in range(0, resamples, size):
        rows = min(size, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))  # = rng.choice(n, size=(rows, n), replace=True)
        w = np.empty((rows, n))
        for row, drawn in enumerate(idx):  # one bincount a resample: it stays in cache, one flat one does not
            w[row] = np.bincount(drawn, minlength=n)
        if n * resamples <= KEPT_CELLS:
            made.append(w)
        yield w
    _kept.clear()
    if made:
        _kept[key] = made


class Clusters:
    """Which cluster each of a task's documents is in: ``ids`` (0 .. count - 1, numbered in order of first
    appearance) and ``count``; ``of`` gives None when every cluster is a single document."""

    def __init__(self, ids):
        self.ids = np.asarray(ids, dtype=np.int64)
        self.count = int(self.ids.max(initial=-1)) + 1
        self.key = (self.count, self.ids.tobytes())

    @classmethod
    def of(cls, keys):
        """The clusters of per-document keys (None: the document is a cluster of its own), or None."""
        numbers, ids = {}, []
        for key in keys:
            key = object() if key is None else tuple(key) if isinstance(key, list) else key  # None: its own
            ids.append(numbers.setdefault(key, len(numbers)))
        return None if len(numbers) == len(ids) else cls(ids)

    def take(self, index):
        """The clusters of the documents ``index`` (renumbered in order of first appearance, as ``of`` numbers
        them), or None when each is then alone."""
        ids = self.ids[index]
        _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        if len(first) == len(ids):
            return None
        number = np.empty(len(first), dtype=np.int64)
        number[np.argsort(first)] = np.arange(len(first))
        return Clusters(number[inverse.reshape(-1)])

    def sums(self, x):
        """Per-cluster column sums of ``x`` (documents x k)."""
        out = np.zeros((self.count, x.shape[1]))
        np.add.at(out, self.ids, x)
        return out


def clustered_stderr(values, clusters=None) -> float:
    """Standard error of the mean of ``values``, clustered (Liang-Zeger with the finite-cluster correction
    C / (C - 1), as inspect_ai's ``stderr(cluster=...)``); without clusters each document is one, which is the
    sample standard deviation / sqrt(n). 0 for fewer than two clusters."""
    values = np.asarray(values, dtype=float)
    clusters = clusters or Clusters(np.arange(len(values)))
    count = clusters.count
    if count < 2:
        return 0.0
    deviations = np.bincount(clusters.ids, weights=values - values.mean(), minlength=count)
    return float(np.sqrt((deviations ** 2).sum() * count / (count - 1)) / len(values))


def wilson(successes: int, n: int, confidence: float) -> list:
    """Wilson score interval of a proportion (statsmodels ``proportion_confint(method="wilson")``)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    return [float(low), float(high)]


def clopper_pearson(successes: float, n: float, confidence: float) -> list:
    """Clopper-Pearson's exact interval of a proportion (statsmodels ``proportion_confint(method="beta")``;
    Clopper & Pearson, Biometrika 26(4), 1934). ``n`` may be an effective sample size (not an integer)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="beta")
    return [float(low), float(high)]


def effective_size(documents: int, clusters: int | None, effect: float | None) -> float:
    """Kish's effective sample size of ``documents`` in ``clusters`` (None: not clustered): documents / design
    effect (L. Kish, Survey Sampling, 1965, section 8.2), kept between the clusters (every document of a cluster
    alike: the conservative bound) and the documents; the clusters where the design effect is not estimable
    (``effect`` None: the values do not vary)."""
    if clusters is None:
        return float(documents)
    if effect is None or not np.isfinite(effect) or effect <= 0:
        return float(clusters)
    return float(min(documents, max(clusters, documents / effect)))


def unit_statistics(est, ids, count: int) -> np.ndarray:
    """The statistic of each unit's documents alone (``ids``: each document's unit, 0 .. ``count`` - 1): the
    estimator applied to 0/1 rows as a resample's, a unit a row, a few rows at a time."""
    ids = np.asarray(ids)
    size, found = max(1, CELLS // max(len(ids), 1)), []
    for start in range(0, count, size):
        units = np.arange(start, min(count, start + size))
        found.append(np.asarray(est((ids[None, :] == units[:, None]).astype(float)), dtype=float))
    return np.concatenate(found) if found else np.zeros(0)


POWER = 0.8  # the power the minimum detectable difference is given at


def detectable(se: float, alpha: float, power: float = POWER) -> float:
    """Minimum detectable difference of a two-sided test at level ``alpha`` with ``power``, for an estimate of
    standard error ``se`` (normal approximation: (z_{1-alpha/2} + z_power) x se)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    return float((z(1 - alpha / 2) + z(power)) * se)


class Linear:
    """A statistic of column sums: ``finish(sums)`` of ``W @ x`` (x: documents x k)."""

    halved = False

    def __init__(self, x):
        self.x = np.asarray(x, dtype=float)

    def take(self, index):
        return type(self)(self.x[index])

    def point(self):
        return float(self.finish(self.x.sum(0)[None, :])[0])

    def __call__(self, w):
        return self.finish(w @ self.x)


class Mean(Linear):
    @classmethod
    def of(cls, values, mask):
        return cls(np.column_stack([values * mask, mask.astype(float)]))

    def n(self):
        return int(self.x[:, 1].sum())

    def finish(self, sums):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(sums[:, 1] > 0, sums[:, 0] / np.where(sums[:, 1] > 0, sums[:, 1], 1), np.nan)


class Sum(Mean):
    def finish(self, sums):
        return sums[:, 0]


@functools.cache
def _bleu():
    from sacrebleu.metrics import BLEU

    return BLEU()  # the defaults both tasks score with: 13a, exp smoothing, one reference


def bleu_statistics(pairs) -> np.ndarray:
    """sacrebleu's per-segment sufficient statistics of (hypothesis, reference) pairs (documents x 10)."""
    from .ngrams import bleu_statistics as statistics

    pairs = [(str(h), str(r)) for h, r in pairs]
    return statistics([h for h, _ in pairs], [r for _, r in pairs], _bleu())


class Bleu(Linear):
    """Corpus BLEU of the resampled documents' summed statistics, scored as sacrebleu's bootstrap scores them
    (float32 sums), by the task's own function of the statistics (``score``; None: sacrebleu's ``BLEU()``)."""

    score = None

    @classmethod
    def scored_by(cls, score):
        """The estimator class that scores with ``score`` (``take`` and the bootstrap keep the class)."""
        return cls if score is None else type(cls.__name__, (cls,), {"score": staticmethod(score)})

    def _one(self, row):
        return float(self.score(row)) if self.score else _bleu()._compute_score_from_stats(row).score

    def point(self):
        sums = [int(v) for v in self.x.sum(0)]
        return self._one(sums) if sums[1] else float("nan")

    def finish(self, sums):
        return np.array([self._one(row) if row[1] else np.nan for row in sums.astype(np.float32)])


class Distinct:
    """Distinct n-grams of the resampled documents / their n-grams (the Topical-Chat metric's distinct-n):
    an n-gram found in one document only counts when that document is drawn; the others through a sparse
    document x n-gram matrix.

    Resampled on half-samples without replacement, not the bootstrap: a document drawn twice adds n-grams but
    no distinct ones, so a with-replacement resample's distinct-n is biased low (the point value fell outside
    its percentile interval). See ``halves`` and ``_centred``."""

    halved = True

    def __init__(self, single, shared, totals):
        self.single, self.shared, self.totals = single, shared, totals

    @classmethod
    def of(cls, texts, order):
        from scipy import sparse

        from .ngrams import distinct_table

        rows, cols, totals = distinct_table(_tokenizer_13a(), [str(text).lower() for text in texts], order)
        docs = np.bincount(cols)
        alone = docs[cols] == 1
        single = np.bincount(rows[alone], minlength=len(texts)).astype(np.float32)
        shared_ids = np.unique(cols[~alone], return_inverse=True)[1]
        shared = sparse.csr_matrix((np.ones(len(shared_ids), dtype=np.float32), (shared_ids, rows[~alone])),
                                   shape=(int(shared_ids.max(initial=-1)) + 1, len(texts)))
        return cls(single, shared, totals.astype(float))

    def take(self, index):
        return Distinct(self.single[index], self.shared[:, index], self.totals[index])

    def point(self):
        return float(self(np.ones((1, len(self.totals))))[0])

    def __call__(self, w):
        drawn = _drawn(w)
        unique = drawn @ self.single + (np.asarray(self.shared @ drawn.T) > 0).sum(0)
        total = w @ self.totals
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, unique / np.where(total > 0, total, 1), 0.0)


@functools.cache
def _tokenizer_13a():
    """sacrebleu's 13a tokenizer, the one the Topical-Chat metric's distinct-n splits with (one instance: its own
    cache then serves distinct-2 the tokens distinct-1 made)."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()


def _drawn(w, _last=[None, None]):  # noqa: B006 - one chunk's matrix kept for the next estimator of it
    """1 where a resample drew the document (exact in float32: counts of documents)."""
    if _last[0] is not w:
        _last[:] = [w, (w > 0).astype(np.float32)]
    return _last[1]


def interval(draws, confidence: float) -> list:
    """Percentile interval of the bootstrap draws (NaN draws, e.g. a category absent from a resample, left out)."""
    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return [None, None]
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return [float(low), float(high)]


def bootstrap(estimators: dict, n: int, seed: int, resamples: int, clusters=None) -> dict:
    """``{key: draws}`` of every estimator on the same resamples of ``n`` documents. ``estimators`` maps a key
    to ``(estimator, index)``: the estimator is of the documents ``index`` (None: all) of the resampled ones.
    The linear ones share one matrix product per chunk (those of a subset spread over all ``n``). With
    ``clusters`` (a ``Clusters`` of the ``n`` documents) whole clusters are drawn: a linear estimator's rows
    summed per cluster (its sufficient statistics), the others given each document its cluster's draw.
    Estimators with ``halved`` set (distinct-n) are drawn on half-samples instead (``halves``)."""
    estimators = _spread(estimators, n)
    units = n if clusters is None else clusters.count
    groups = {}
    for key, (_, index) in estimators.items():
        groups.setdefault(_group(index), (index, []))[1].append(key)
    plans = [_plan(index, {key: estimators[key][0] for key in keys}, clusters) for index, keys in groups.values()]
    draws = {(_group(index), id(est)): [] for est, index in estimators.values()}
    for halved, source in ((False, chunks(seed, units, resamples)), (True, halves(seed, units, resamples, n))):
        wanted = [est.halved == halved for _, _, _, other in plans for _, est in other]
        if not any(wanted) and (halved or not any(linear for _, _, linear, _ in plans)):
            continue
        for w in source:
            per_doc = w if clusters is None else None
            for index, columns, linear, other in plans:
                if linear and not halved:
                    sums = w @ columns
                    for key, est, where in linear:
                        draws[(_group(index), key)].append(est.finish(sums[:, where]))
                for key, est in other:
                    if est.halved == halved:
                        if per_doc is None:
                            per_doc = w[:, clusters.ids]
                        draws[(_group(index), key)].append(est(per_doc if index is None else per_doc[:, index]))
    done = {(_group(index), id(est)): np.concatenate(draws[(_group(index), id(est))])
            for est, index in estimators.values()}
    return {key: _centred(est, done[(_group(index), id(est))], units) if getattr(est, "halved", False)
            else done[(_group(index), id(est))] for key, (est, index) in estimators.items()}


def halves(seed: int, units: int, resamples: int, documents: int):
    """0/1 matrices of ``resamples`` half-samples of ``units`` (documents or clusters) drawn without replacement:
    each row holds ``units // 2`` of them (a fresh stream of ``seed``: every run of a task, the same rows); as
    many rows at a time as a chunk of the ``documents`` they are spread over holds."""
    rng, m = np.random.default_rng([seed, 2]), units // 2
    size = max(1, min(resamples, CELLS // max(documents, 1)))
    for start in range(0, resamples, size):
        rows = min(size, resamples - start)
        if m == 0:
            yield np.zeros((rows, units))
            continue
        u = rng.random((rows, units))
        yield (u <= np.partition(u, m - 1, axis=1)[:, m - 1:m]).astype(float)


def _centred(est, draws, units: int) -> np.ndarray:
    """Half-sample draws as draws of the full sample's statistic: the deviations from their own mean (a ratio of
    distinct counts grows as the sample shrinks: that shift is not noise), rescaled by sqrt(m / (units - m)) (the
    variance of a without-replacement m-subsample's mean about the full mean is (1/m - 1/units) of a
    document's; for m = units // 2 the factor is 1, or just under for an odd count), around the point value."""
    m = units // 2
    finite = np.isfinite(draws)
    if m == 0 or not finite.any():
        return np.full(len(draws), est.point())
    scale = np.sqrt(m / (units - m))
    return est.point() + (draws - draws[finite].mean()) * scale


def _spread(estimators: dict, n: int) -> dict:
    """Each linear estimator of a subset of the documents as one of all ``n`` whose other rows are 0: the same
    sums, without copying the subset's columns of every chunk."""
    spread, made = {}, {}
    for key, (est, index) in estimators.items():
        if index is not None and isinstance(est, Linear):
            tag = (id(est), id(index))
            if tag not in made:
                x = np.zeros((n, est.x.shape[1]))
                x[index] = est.x
                made[tag] = type(est)(x)
            est, index = made[tag], None
        spread[key] = (est, index)
    return spread


def _group(index):
    return None if index is None else id(index)


def _plan(index, estimators, clusters=None):
    """Each estimator once (a comparison shares the runs' own), linear ones as columns of one matrix (summed
    per cluster when there are ``clusters``: the draws are of clusters)."""
    estimators = {id(est): est for est in estimators.values()}
    linear = [(key, est) for key, est in estimators.items() if isinstance(est, Linear) and not est.halved]
    other = [(key, est) for key, est in estimators.items() if not isinstance(est, Linear) or est.halved]
    columns = np.hstack([est.x for _, est in linear]) if linear else None
    if columns is not None and clusters is not None:
        columns = clusters.sums(columns)
    ends = np.cumsum([est.x.shape[1] for _, est in linear])
    slices = [slice(end - est.x.shape[1], end) for end, (_, est) in zip(ends, linear)]
    return index, columns, [(key, est, where) for (key, est), where in zip(linear, slices)], other


def mcnemar_p(base, other) -> float:
    """McNemar's exact test of two 0/1 vectors (success: value > 0) on the same documents."""
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.asarray(base) > 0, np.asarray(other) > 0
    table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
    return float(mcnemar(table, exact=True).pvalue)


def sign_test_p(differences) -> float:
    """Two-sided exact sign test of per-document differences (scipy ``binomtest``; ties left out, 1 if all tie)."""
    from scipy.stats import binomtest

    differences = np.asarray(differences, dtype=float)
    up, down = int((differences > 0).sum()), int((differences < 0).sum())
    return float(binomtest(up, up + down, 0.5).pvalue) if up + down else 1.0


def smallest_p(units: int) -> float:
    """The smallest two-sided p an exact sign test (McNemar's, or a sign-flip permutation test) of ``units``
    non-tied units can give: every one of them the same way, 2 / 2 ** units (1 with none)."""
    return min(1.0, 2.0 * 0.5 ** units)


def fewest_units(alpha: float) -> int:
    """The fewest non-tied units whose exact sign test can give p < ``alpha``."""
    units = 0
    while smallest_p(units) >= alpha:
        units += 1
    return units


def permutation_p(differences, seed: int, resamples: int) -> tuple[float, bool]:
    """(p, exact) of the paired sign-flip permutation test of per-unit summed differences (scipy
    ``permutation_test``, ``permutation_type="samples"`` on one sample: each unit's sign flipped), two-sided, on
    their sum: exact (all 2 ** units sign patterns) up to ``EXACT_UNITS`` units, else ``resamples`` random
    patterns drawn from ``seed``. A paired bootstrap of few units cannot reach small p honestly (one cluster:
    every resample is the sample, p = 1 / (resamples + 1)); this test's smallest p is ``smallest_p(units)``."""
    from scipy.stats import permutation_test

    differences = np.asarray(differences, dtype=float)
    if len(differences) < 2:  # scipy wants two: one unit's sign flipped is as far from 0 (p = 1)
        return 1.0, True
    exact = len(differences) <= EXACT_UNITS
    result = permutation_test((differences,), _total, permutation_type="samples", vectorized=True,
                              n_resamples=2 ** len(differences) if exact else resamples,
                              random_state=np.random.default_rng([seed, 3]))
    return min(1.0, float(result.pvalue)), exact


def _total(x, axis):
    return np.sum(x, axis=axis)


def bootstrap_p(draws, delta: float, clusters=None) -> float:
    """Two-sided p of a paired bootstrap: how often the centred resampled difference is as far from 0. Over
    clusters the centred differences are widened by sqrt(C / (C - 1)), the finite-cluster correction of the
    clustered standard error (a bootstrap of C clusters underestimates the variance by (C - 1) / C)."""
    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws)]
    widen = 1.0 if clusters is None or clusters.count < 2 else np.sqrt(clusters.count / (clusters.count - 1))
    return float((1 + np.sum(np.abs(draws - delta) * widen >= abs(delta))) / (len(draws) + 1))


def sacrebleu_p(base_draws, other_draws, base_score: float, other_score: float) -> float:
    """sacrebleu's paired bootstrap p (significance._paired_bs_test) from the two systems' resampled scores."""
    from sacrebleu.significance import _compute_p_value

    diffs = np.abs(np.asarray(other_draws) - np.asarray(base_draws))
    if base_score == other_score and not diffs.any():
        return 1.0  # the same hypotheses: sacrebleu's strict ">" would give 1/(resamples+1)
    return float(_compute_p_value(diffs - diffs.mean(), abs(base_score - other_score)))
