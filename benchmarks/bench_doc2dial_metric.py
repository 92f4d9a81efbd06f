"""doc2dial metric (`evaluate.load(...).compute`) against two plain-code baselines, on synthetic examples made
from the sample release's documents: 100,000 grounding turns (subtask 1) and 10,000 dialogues' agent turns
(subtask 2; sacreBLEU makes 100,000 impractical).

- own loop: the metric's own scoring functions called in a plain loop (no checks, no id join). Target: the
  metric takes at most 2x the loop's time.
- official recipe: scripts/sharedtask_utils.py of doc2dial/sharedtask-dialdoc2021 written as plain code: the
  references filtered by the predicted ids, the SQuAD v2 evaluation script (the `squad_v2` metric; its
  probabilities stored as float32) and `sacrebleu.corpus_bleu`. Target: the metric at least as fast, same numbers.
"""

from __future__ import annotations

import collections
import hashlib
import json
import random
import re
import string

from _common import measure, met, row

GROUNDING, DIALOGUES = 100_000, 10_000
SCORE_KEYS = ("score", "counts", "totals", "precisions", "bp", "sys_len", "ref_len")


# --- inputs (untimed)


def _sentences():
    from qahub.registry import samples_dir

    path = samples_dir("doc2dial") / "doc2dial/v1.0.1/doc2dial_doc.json"
    docs = json.loads(path.read_text(encoding="utf-8"))["doc_data"]
    text = " ".join(doc["doc_text"] for by_id in docs.values() for doc in by_id.values())
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+", text) if len(s.split()) > 3]


def grounding_inputs():
    """``doc2dial_rc``-shaped references (one in ten without grounding) and noisy predictions, ids shuffled."""
    rng, sentences = random.Random(13), _sentences()
    references, predictions = [], []
    for n in range(GROUNDING):
        gold = rng.choice(sentences)
        answers = {"text": [], "answer_start": []} if n % 10 == 0 else {"text": [gold], "answer_start": [n % 500]}
        references.append({"id": f"dial{n // 5:06d}_{n % 5 * 2 + 1}", "title": "doc", "context": gold,
                           "question": "user: what now?", "answers": answers, "domain": "dmv"})
        words = gold.split()
        guess = rng.choice(["", gold, gold.lower(), " ".join(words[rng.randrange(len(words)):]), rng.choice(sentences)])
        predictions.append({"id": references[-1]["id"], "prediction_text": guess,
                            "no_answer_probability": rng.randrange(100) / 100})
    rng.shuffle(predictions)
    return predictions, references


def generation_inputs():
    """``dialogue_domain``-shaped rows and a noisy prediction for each agent turn, ids shuffled."""
    rng, sentences = random.Random(14), _sentences()
    dialogues, predictions = [], []
    for n in range(DIALOGUES):
        turns = [{"turn_id": t + 1, "role": "user" if t % 2 == 0 else "agent", "da": "respond", "references": [],
                  "utterance": rng.choice(sentences)} for t in range(rng.randrange(2, 9))]
        dialogues.append({"dial_id": f"dial{n:06d}", "doc_id": "doc", "domain": "dmv", "turns": turns})
        for turn in turns[1::2]:
            words = turn["utterance"].split()
            predictions.append({"id": f"dial{n:06d}_{turn['turn_id'] - 1}",
                                "utterance": " ".join(words[rng.randrange(len(words)):])})
    rng.shuffle(predictions)
    return predictions, dialogues


def _inputs(task):
    return grounding_inputs() if task == "subtask1" else generation_inputs()


def _summary(task, result):
    """The numbers, rounded to nothing: a digest of all of them and the headline figure."""
    keys = SCORE_KEYS if task == "subtask2" else sorted(k for k in result if k not in ("unparseable", "missing_ignored"))
    numbers = {key: result[key] for key in keys}
    digest = hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()[:16]
    head = result["score"] if task == "subtask2" else result["f1"]
    return f"{task} {head!r} all numbers {digest}"


# --- the metric through evaluate


def prepare_metric(task):
    import warnings

    from qahub import registry

    warnings.simplefilter("ignore")
    return (registry.load_metric("doc2dial", config_name=task), task, *_inputs(task))


def metric(module, task, predictions, references) -> str:
    return _summary(task, module.compute(predictions=predictions, references=references))


# --- the metric's own scoring functions in a plain loop


def prepare_own_loop(task):
    import sys

    from qahub import registry

    sys.path.insert(0, str(registry.metric_dir("doc2dial")))
    import bleu_scoring  # noqa: F401
    import squad_v2_scoring  # noqa: F401

    return (task, *_inputs(task))


def own_loop(task, predictions, references) -> str:
    import struct

    from bleu_scoring import corpus_sacrebleu
    from squad_v2_scoring import squad_v2_scores

    if task == "subtask2":
        by_id = {p["id"]: p["utterance"] for p in predictions}
        pairs = [(by_id[f"{d['dial_id']}_{t['turn_id'] - 1}"], t["utterance"])
                 for d in references for t in d["turns"] if t["role"] == "agent"]
        return _summary(task, corpus_sacrebleu([p for p, _ in pairs], [g for _, g in pairs]))
    texts, probs = {}, {}
    for p in predictions:
        texts[p["id"]] = p["prediction_text"]
        probs[p["id"]] = struct.unpack("<f", struct.pack("<f", p["no_answer_probability"]))[0]
    return _summary(task, squad_v2_scores(texts, probs, {r["id"]: r["answers"]["text"] for r in references}))


# --- the official recipe (sharedtask_utils.py + the squad_v2 script + sacrebleu.corpus_bleu) as plain code


def prepare_official(task):
    import numpy  # noqa: F401
    import sacrebleu  # noqa: F401

    return (task, *_inputs(task))


def official(task, predictions, references) -> str:
    import numpy as np
    import sacrebleu

    if task == "subtask2":
        by_id = {p["id"]: p["utterance"] for p in predictions}
        preds, refs = [], []
        for dialogue in references:
            for turn in dialogue["turns"]:
                qid = f"{dialogue['dial_id']}_{turn['turn_id'] - 1}"
                if turn["role"] == "agent" and qid in by_id:
                    preds.append(by_id[qid])
                    refs.append(turn["utterance"])
        result = sacrebleu.corpus_bleu(preds, [refs])
        return _summary(task, {**vars(result), "counts": list(result.counts), "totals": list(result.totals),
                               "precisions": list(result.precisions)})
    predicted = {p["id"] for p in predictions}
    references = [{"id": r["id"], "answers": r["answers"]} for r in references if r["id"] in predicted]
    assert len(predictions) == len(references)
    texts = {p["id"]: p["prediction_text"] for p in predictions}
    probs = {p["id"]: float(np.float32(p["no_answer_probability"])) for p in predictions}
    return _summary(task, squad_v2_official(references, texts, probs))


def squad_v2_official(references, preds, na_probs, threshold=1.0):
    has_ans = {r["id"]: bool(r["answers"]["text"]) for r in references}
    exact_raw, f1_raw = {}, {}
    for r in references:
        golds = [a for a in r["answers"]["text"] if _normalize(a)] or [""]
        exact_raw[r["id"]] = max(int(_normalize(a) == _normalize(preds[r["id"]])) for a in golds)
        f1_raw[r["id"]] = max(_compute_f1(a, preds[r["id"]]) for a in golds)
    exact = {q: float(not has_ans[q]) if na_probs[q] > threshold else s for q, s in exact_raw.items()}
    f1 = {q: float(not has_ans[q]) if na_probs[q] > threshold else s for q, s in f1_raw.items()}
    out = _eval_dict(exact, f1)
    has_ans_qids = [k for k, v in has_ans.items() if v]
    no_ans_qids = [k for k, v in has_ans.items() if not v]
    if has_ans_qids:
        _merge(out, _eval_dict(exact, f1, qids=has_ans_qids), "HasAns")
    if no_ans_qids:
        _merge(out, _eval_dict(exact, f1, qids=no_ans_qids), "NoAns")
    best_exact, exact_thresh = _best_thresh(preds, exact_raw, na_probs, has_ans)
    best_f1, f1_thresh = _best_thresh(preds, f1_raw, na_probs, has_ans)
    out.update(best_exact=best_exact, best_exact_thresh=exact_thresh, best_f1=best_f1, best_f1_thresh=f1_thresh)
    return out


def _merge(main_eval, new_eval, prefix):
    for k in new_eval:
        main_eval[f"{prefix}_{k}"] = new_eval[k]


def _normalize(s):
    exclude = set(string.punctuation)
    s = "".join(ch for ch in s.lower() if ch not in exclude)
    return " ".join(re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", s).split())


def _compute_f1(a_gold, a_pred):
    gold_toks = _normalize(a_gold).split() if a_gold else []
    pred_toks = _normalize(a_pred).split() if a_pred else []
    num_same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision, recall = 1.0 * num_same / len(pred_toks), 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def _eval_dict(exact, f1, qids=None):
    if qids is None:
        return {"exact": 100.0 * sum(exact.values()) / len(exact), "f1": 100.0 * sum(f1.values()) / len(f1),
                "total": len(exact)}
    return {"exact": 100.0 * sum(exact[k] for k in qids) / len(qids), "f1": 100.0 * sum(f1[k] for k in qids) / len(qids),
            "total": len(qids)}


def _best_thresh(preds, scores, na_probs, has_ans):
    cur = best = sum(1 for k in has_ans if not has_ans[k])
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        cur += scores[qid] if has_ans[qid] else (-1 if preds[qid] else 0)
        if cur > best:
            best, best_thresh = cur, na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


# --- the table


def _versus_loop(name, ours, loop):
    times = ours[0] / loop[0]
    same = "same numbers" if ours[2] == loop[2] else "NUMBERS DIFFER"
    return row(name, ours, loop, f"{same}; takes {times:.2f}x the loop (target <= 2x: {met(times <= 2)})")


def _versus_official(name, ours, recipe):
    ratio = recipe[0] / ours[0]
    same = ours[2] == recipe[2]
    ok = met(ratio >= 1 and same)
    return row(name, ours, recipe, f"{'same numbers' if same else 'NUMBERS DIFFER'}; {ratio:.2f}x (target >= 1x, same numbers: {ok})")


def run() -> list[dict]:
    rows = []
    for task, size in (("subtask1", f"{GROUNDING:,} turns"), ("subtask2", f"{DIALOGUES:,} dialogues")):
        ours = measure("bench_doc2dial_metric:metric", task)
        loop = measure("bench_doc2dial_metric:own_loop", task)
        recipe = measure("bench_doc2dial_metric:official", task)
        rows.append(_versus_loop(f"doc2dial metric {task}, {size} (vs own loop)", ours, loop))
        rows.append(_versus_official(f"doc2dial metric {task}, {size} (vs official recipe)", ours, recipe))
    return rows
