"""The scores of the official JEMHopQA ``evaluate.py``: answer normalization, token-level similarity, derivation
alignment and per-question precision/recall/F1."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import re
import sys
import warnings
from pathlib import Path

import Levenshtein
import numpy as np

DIMENSIONS = ("e", "r", "er")
COLUMNS = ("a_em", "a_score", "e_p", "e_r", "e_f", "r_p", "r_r", "r_f", "er_p", "er_r", "er_f")
_BRACKETED = re.compile(r"\s*[\(（].+?[\)）]\s*")
_QUOTES = re.compile(r"[『』「」]")
CACHE_LIMIT = 500_000  # cached similarities


def normalize_answer(text: str) -> str:
    if text == "はい":
        text = "YES"
    elif text == "いいえ":
        text = "NO"
    return " ".join(_QUOTES.sub("", _BRACKETED.sub("", text)).split())


def letters(gold_tokens: list, pred_tokens: list):
    """The official greedy mapping: each gold token in turn takes the first free predicted token it shares a
    string with, and both get the same letter; the rest get letters of their own (unpaired gold tokens first).
    The official script uses a-z and fails beyond 26 letters; any distinct characters give the same ratio, so
    we continue past 'z' (and give lists of numbers when even Unicode runs out)."""
    paired = _greedy_pairs(gold_tokens, pred_tokens)
    gold_ids, pred_ids = [None] * len(gold_tokens), [None] * len(pred_tokens)
    for n, (i, j) in enumerate(paired):
        gold_ids[i] = pred_ids[j] = n
    n = len(paired)
    for ids in (gold_ids, pred_ids):
        for i, found in enumerate(ids):
            if found is None:
                ids[i], n = n, n + 1
    if n + 97 > sys.maxunicode:
        return gold_ids, pred_ids
    return "".join([chr(97 + i) for i in gold_ids]), "".join([chr(97 + i) for i in pred_ids])


def _greedy_pairs(gold_tokens: list, pred_tokens: list) -> list:
    """(gold index, predicted index) of the official greedy pairing, in gold order."""
    if len(gold_tokens) * len(pred_tokens) <= 1024:
        return _greedy_pairs_scan(gold_tokens, pred_tokens)
    return _greedy_pairs_indexed(gold_tokens, pred_tokens)


def _greedy_pairs_scan(gold_tokens, pred_tokens):
    taken, pairs = [False] * len(pred_tokens), []
    for i, gold in enumerate(gold_tokens):
        for j, pred in enumerate(pred_tokens):
            if not taken[j] and not gold.isdisjoint(pred):
                taken[j] = True
                pairs.append((i, j))
                break
    return pairs


def _greedy_pairs_indexed(gold_tokens, pred_tokens):
    """The same pairing for long texts: per string, the predicted tokens holding it, in order, with a pointer
    past the taken ones (linear instead of quadratic time)."""
    holders = {}
    for j, pred in enumerate(pred_tokens):
        for string in pred:
            holders.setdefault(string, []).append(j)
    start = dict.fromkeys(holders, 0)
    taken, pairs = [False] * len(pred_tokens), []
    for i, gold in enumerate(gold_tokens):
        best = None
        for string in gold:
            js = holders.get(string)
            if js is None:
                continue
            k = start[string]
            while k < len(js) and taken[js[k]]:
                k += 1
            start[string] = k
            if k < len(js) and (best is None or js[k] < best):
                best = js[k]
        if best is not None:
            taken[best] = True
            pairs.append((i, best))
    return pairs


class Similarity:
    """``sim(pred, gold)``: the official ``editdist``; pairs are cached when ``cache`` is true."""

    def __init__(self, tokenizer, cache: bool = True):
        self.tokenizer = tokenizer
        self._cache = {} if cache else None

    def __call__(self, pred: str, gold: str) -> float:
        if self._cache is None:
            return self._compute(pred, gold)
        key = (pred, gold)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= CACHE_LIMIT:  # a long run (harness, training) should not grow it without end
                self._cache.clear()
            found = self._cache[key] = self._compute(pred, gold)
        return found

    def _compute(self, pred: str, gold: str) -> float:
        norm_pred, norm_gold = normalize_answer(pred), normalize_answer(gold)
        # as official: only a literal "Yes"/"No" prediction is checked ("はい" normalizes to "YES")
        if norm_pred in ("Yes", "No") and norm_pred != norm_gold:
            return 0.0
        gold_letters, pred_letters = letters(self.tokenizer.tokens(norm_gold), self.tokenizer.tokens(norm_pred))
        return Levenshtein.ratio(gold_letters, pred_letters)


def answer_scores(sim: Similarity, pred, gold: str) -> tuple[float, float]:
    """(exact match, similarity); empty or non-string predictions score 0."""
    if not pred or not isinstance(pred, str):
        return 0.0, 0.0
    em = 1.0 if normalize_answer(pred) == normalize_answer(gold) else 0.0
    return em, sim(pred, gold)


def flatten(derivations: list) -> list:
    """One (subject, relation, object) triple per object."""
    return [(subject, relation, obj) for subject, relation, objects in derivations for obj in objects]


def weights(sim: Similarity, pred: list, gold: list) -> dict:
    """The alignment weight of every (pred, gold) triple pair, per dimension, as the official np.mean of
    [subject sim, object sim] (e), [relation sim] (r) or [subject, object, relation] (er)."""
    shape = (len(pred), len(gold))
    out = {dim: np.zeros(shape) for dim in DIMENSIONS}
    for i, (ps, pr, po) in enumerate(pred):
        for j, (gs, gr, go) in enumerate(gold):
            subject, obj, relation = sim(ps, gs), sim(po, go), sim(pr, gr)
            out["e"][i, j] = (subject + obj) / 2
            out["r"][i, j] = relation
            out["er"][i, j] = (subject + obj + relation) / 3
    return out


def matched_weight(matrix: np.ndarray, solver: str) -> float:
    """The largest sum of weights of a one-to-one alignment (the official integer program's optimum)."""
    if matrix.size == 0 or not (matrix > 0).any():
        return 0.0
    if solver == "ilp":
        return _ilp(matrix)
    rows, cols = linear_sum_assignment()(matrix, maximize=True)
    total = 0.0
    for i, j in zip(rows, cols, strict=True):  # row order, as the official objective sums its variables
        if matrix[i, j] > 0:
            total += float(matrix[i, j])
    return total


@functools.cache
def linear_sum_assignment():
    """scipy's ``linear_sum_assignment``, the same compiled function, read from its own extension module
    ``scipy/optimize/_lsap`` without running ``scipy.optimize``'s ``__init__``: that imports scipy.linalg, sparse,
    special and fft (about 1 s of the 1.5 s budget of ``qahub evaluate jemhopqa``, issue 44). Where scipy lays
    its files out otherwise, the public import."""
    scipy = importlib.util.find_spec("scipy")  # finds the package, runs none of it
    folder = Path(scipy.origin).parent / "optimize" if scipy and scipy.origin else None
    finder = folder and importlib.machinery.FileFinder(
        str(folder), (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES))
    spec = finder and finder.find_spec("scipy.optimize._lsap")
    if spec is None or "scipy.optimize._lsap" in sys.modules:
        from scipy.optimize import linear_sum_assignment as public

        return public
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.pop(spec.name, None)  # not imported as a package's part: a later `import scipy.optimize` is whole
    return module.linear_sum_assignment


def _ilp(matrix: np.ndarray) -> float:
    import pulp

    n_pred, n_gold = matrix.shape
    problem = pulp.LpProblem("alignment", pulp.LpMaximize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pulp 3.3 announces its 4.0 API
        x = [[_binary(problem, f"align_{i}_{j}") for j in range(n_gold)] for i in range(n_pred)]
        solver = pulp.PULP_CBC_CMD(msg=0)
    for i in range(n_pred):
        problem.addConstraint(pulp.lpSum(x[i]) <= 1)
    for j in range(n_gold):
        problem.addConstraint(pulp.lpSum(x[i][j] for i in range(n_pred)) <= 1)
    problem.setObjective(pulp.lpSum(float(matrix[i, j]) * x[i][j]
                                    for i in range(n_pred) for j in range(n_gold) if matrix[i, j] > 0))
    status = problem.solve(solver)
    if status != pulp.LpStatusOptimal:
        raise RuntimeError(f"the ILP solver ended with status {pulp.LpStatus[status]} on a {n_pred}x{n_gold} alignment")
    return float(pulp.value(problem.objective))


def _binary(problem, name):
    import pulp

    if hasattr(problem, "add_variable"):
        return problem.add_variable(name, 0, 1, cat=pulp.LpBinary)
    return pulp.LpVariable(name, 0, 1, pulp.LpBinary)


def prf(matched: float, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    prec = matched / n_pred if n_pred > 0 else 0
    recall = matched / n_gold if n_gold > 0 else 0
    f1 = (2 * prec * recall) / (prec + recall) if prec + recall > 0 else 0
    return prec, recall, f1


def derivation_scores(sim: Similarity, pred: list, gold: list, solver: str) -> dict:
    """``{"e_p": ..., "er_f": ...}`` for one question's derivations (upstream nested form)."""
    pred_triples, gold_triples = flatten(pred), flatten(gold)
    matrices = weights(sim, pred_triples, gold_triples)
    out = {}
    for dim in DIMENSIONS:
        matched = matched_weight(matrices[dim], solver)
        # the official int 0 (no triples, or nothing matched) is kept: its -o file writes "0", not "0.0"
        p, r, f = prf(matched, len(pred_triples), len(gold_triples))
        out.update({f"{dim}_p": p, f"{dim}_r": r, f"{dim}_f": f})
    return out


def question_row(sim: Similarity, pred: dict, gold: dict, solver: str = "assignment") -> dict:
    """The official -o columns (COLUMNS) of one question; a part absent from ``pred`` (ignored) is None."""
    row = {}
    if "answer" in pred:
        row["a_em"], row["a_score"] = answer_scores(sim, pred["answer"], gold["answer"])
    else:
        row["a_em"] = row["a_score"] = None
    if "derivations" in pred:
        row.update(derivation_scores(sim, pred["derivations"], gold["derivations"], solver))
    else:
        row.update({column: None for column in COLUMNS[2:]})
    return row


def score_questions(questions, sim: Similarity, solver: str) -> list[dict]:
    """One row per reference question (``qid`` + COLUMNS); a part with no prediction (ignored) is None."""
    return [{"qid": qid, **question_row(sim, pred, gold, solver)} for qid, gold, pred in questions]


def summarize(rows: list[dict]) -> dict:
    """The official output: means over the questions that were scored; a part no question was scored on (with
    ignore_missing) is left out rather than given as NaN."""

    def mean(column):
        return float(np.mean([row[column] for row in rows if row[column] is not None]))

    out = {}
    if any(row["a_em"] is not None for row in rows):
        out["a"] = {"em": mean("a_em"), "score": mean("a_score")}
    if any(row["e_p"] is not None for row in rows):
        for dim in DIMENSIONS:
            out[dim] = {"prec": mean(f"{dim}_p"), "recall": mean(f"{dim}_r"), "f1": mean(f"{dim}_f")}
    return out
