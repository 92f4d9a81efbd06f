"""JEMHopQA metric: exact assignment with cached tokenization (ours) vs the official way (one pulp/CBC integer
program per question and dimension, no caching), on noisy predictions for the real dev set; plus ours alone on
the 1,059 train questions. The Sudachi dictionary is loaded before timing starts on both sides."""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from pathlib import Path

from _common import SHARED_DATA, measure, row

ROOT = Path(__file__).resolve().parents[1]
SHARED = SHARED_DATA / "jemhopqa"
sys.path.insert(0, str(ROOT / "tests"))


def _inputs(relpath: str):
    from jemhopqa_predictions import make_predictions

    refs = json.loads((SHARED / relpath).read_text(encoding="utf-8"))
    official = make_predictions(refs, "noisy")
    preds = [{"qid": qid, "answer": official["answer"][qid], "derivations": official["derivations"][qid]}
             for qid in official["answer"]]
    return refs, preds


def _prepare(relpath: str, solver: str, cache: bool):
    from qahub import registry

    warnings.simplefilter("ignore")
    metric = registry.load_metric("jemhopqa")
    warm = {"qid": "w", "answer": "はい", "derivations": [["x", "y", ["z"]]]}
    metric.compute(predictions=[warm], references=[warm], dictionary="core", synonyms="none")  # loads Sudachi
    refs, preds = _inputs(relpath)
    return metric, refs, preds, solver, cache


def score(metric, refs, preds, solver, cache) -> str:
    result = metric.compute(predictions=preds, references=refs, dictionary="core", synonyms="none",
                            solver=solver, cache=cache)
    scores = {dim: {k: round(v, 12) for k, v in result[dim].items()} for dim in ("a", "e", "r", "er")}
    digest = hashlib.sha256(json.dumps(scores, sort_keys=True).encode()).hexdigest()[:16]
    return f"{len(refs)} q, er f1 {result['er']['f1']:.6f}, all scores {digest}"


def prepare_ours(relpath):
    return _prepare(relpath, "assignment", True)


def ours(*state):
    return score(*state)


def prepare_baseline(relpath):
    return _prepare(relpath, "ilp", False)


def baseline(*state):
    return score(*state)


def run() -> list[dict]:
    if not SHARED.is_dir():
        print("bench_jemhopqa_metric: ../shared/data/jemhopqa absent; nothing measured")
        return []
    dev = "corpus_ver1.2/dev_ver1.2.json"
    ours_m = measure("bench_jemhopqa_metric:ours", dev)
    base_m = measure("bench_jemhopqa_metric:baseline", dev)
    assert ours_m[2] == base_m[2], f"scores differ:\n{ours_m[2]}\n{base_m[2]}"
    rows = [row("jemhopqa metric, 120 dev q (ours / ilp no cache)", ours_m, base_m, "same scores")]
    train = "corpus_ver1.2/train_ver1.2.json"
    train_m = measure("bench_jemhopqa_metric:ours", train)
    rows.append(row("jemhopqa metric, 1059 train q (ours only)", train_m, None, "target: well under 1 s"))
    return rows


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
