"""JEMHopQA metric: ``evaluate.load(...).compute`` against a plain per-example loop of the metric's own scoring
functions at 100,000 questions (issue 14: at most 2x), and the exact assignment with cached tokenization
against the official way (one pulp/CBC integer program per question and dimension, no caching) on the real
dev set. Questions are the real v1.2 dev and train questions (the bundled sample when ../shared/data is
absent), repeated under new qids, with deterministic noisy predictions. The Sudachi dictionary is loaded
before timing starts on both sides."""

from __future__ import annotations

import hashlib
import json
import warnings

from _common import SHARED_DATA, measure, met, row

SHARED = SHARED_DATA / "jemhopqa"
SCALE = 100_000
TARGET = 2.0
OPTIONS = {"dictionary": "core", "synonyms": "none"}


def _rows(relpaths):
    from qahub import registry

    root = SHARED if SHARED.is_dir() else registry.samples_dir("jemhopqa")
    return [r for relpath in relpaths for r in json.loads((root / relpath).read_text(encoding="utf-8"))]


def _noisy(gold: dict, other: dict, index: int) -> dict:
    """A prediction: the gold answer or derivations, changed in one of several ways by ``index``."""
    answer, steps = gold["answer"], [[s, r, list(o)] for s, r, o in gold["derivations"]]
    answers = [answer, answer[:-1], f"「{answer}」", None, other["answer"], ""]
    derivations = [steps, steps[:-1], steps[::-1], [], [[s, r + "の", o] for s, r, o in steps], other["derivations"]]
    return {"qid": gold["qid"], "answer": answers[index % 6], "derivations": derivations[(index // 6) % 6]}


def _inputs(n=None, relpaths=("corpus_ver1.2/dev_ver1.2.json", "corpus_ver1.2/train_ver1.2.json")):
    rows = _rows(relpaths)
    n = n or len(rows)
    refs = [{**rows[i % len(rows)], "qid": f"{rows[i % len(rows)]['qid']}-{i}"} for i in range(n)]
    preds = [_noisy(gold, refs[(i + 1) % n], i * 7) for i, gold in enumerate(refs)]
    return refs, preds


def digest(scores: dict) -> str:
    rounded = {part: {k: round(v, 12) for k, v in values.items()} for part, values in scores.items()}
    return hashlib.sha256(json.dumps(rounded, sort_keys=True).encode()).hexdigest()[:16]


def _metric():
    from qahub import registry

    warnings.simplefilter("ignore")
    metric = registry.load_metric("jemhopqa")
    warm = {"qid": "w", "answer": "はい", "derivations": [["x", "y", ["z"]]]}
    metric.compute(predictions=[warm], references=[warm], **OPTIONS)  # loads Sudachi
    return metric


# --- compute vs the plain loop at SCALE questions


def prepare_compute(n):
    return (_metric(), *_inputs(n))


def compute(metric, refs, preds) -> str:
    result = metric.compute(predictions=preds, references=refs, **OPTIONS)
    return f"{len(refs)} q, " + digest({part: result[part] for part in ("a", "e", "r", "er", "llm_jp_eval")})


def prepare_plain_loop(n):
    from qahub.metrics.jemhopqa.tokens import get_tokenizer

    warnings.simplefilter("ignore")
    get_tokenizer(OPTIONS["dictionary"], OPTIONS["synonyms"]).tokens("はい")  # loads Sudachi
    return _inputs(n)


def plain_loop(refs, preds) -> str:
    """The metric's recipe written as a plain loop: its own per-question scorers, then the means."""
    from qahub.metrics.jemhopqa.llm_jp_eval import aggregate, example_scores
    from qahub.metrics.jemhopqa.scoring import Similarity, question_row, summarize
    from qahub.metrics.jemhopqa.tokens import get_tokenizer

    sim = Similarity(get_tokenizer(OPTIONS["dictionary"], OPTIONS["synonyms"]), True)
    rows = []
    for gold, pred in zip(refs, preds, strict=True):
        scores = question_row(sim, pred, gold)
        scores.update(example_scores(pred["answer"], gold["answer"]))
        rows.append(scores)
    return f"{len(refs)} q, " + digest({**summarize(rows), "llm_jp_eval": aggregate(rows)})


# --- the official way (ILP, no caching) on the dev set


def prepare_assignment(relpath):
    return _metric(), *_inputs(None, [relpath]), "assignment", True


def prepare_official_ilp(relpath):
    return _metric(), *_inputs(None, [relpath]), "ilp", False


def assignment(metric, refs, preds, solver, cache) -> str:
    result = metric.compute(predictions=preds, references=refs, solver=solver, cache=cache, **OPTIONS)
    return f"{len(refs)} q, " + digest({part: result[part] for part in ("a", "e", "r", "er")})


official_ilp = assignment


def run() -> list[dict]:
    ours = measure("bench_jemhopqa_metric:compute", SCALE)
    loop = measure("bench_jemhopqa_metric:plain_loop", SCALE)
    assert ours[2] == loop[2], f"scores differ:\n{ours[2]}\n{loop[2]}"
    slowdown = ours[0] / loop[0]
    verdict = met(slowdown <= TARGET)
    rows = [row(f"jemhopqa metric compute vs plain loop, {SCALE:,} q", ours, loop,
                f"compute takes {slowdown:.2f}x the loop (target <= {TARGET:g}x: {verdict}); same scores")]
    if SHARED.is_dir():
        dev = "corpus_ver1.2/dev_ver1.2.json"
        fast = measure("bench_jemhopqa_metric:assignment", dev)
        slow = measure("bench_jemhopqa_metric:official_ilp", dev)
        assert fast[2] == slow[2], f"scores differ:\n{fast[2]}\n{slow[2]}"
        rows.append(row("jemhopqa metric, 120 dev q (assignment / official ilp, no cache)", fast, slow, "same scores"))
    return rows


if __name__ == "__main__":
    from _common import print_table

    print_table(run())
