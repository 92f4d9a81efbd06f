"""SQuAD v2.0 exact match and F1, as the official SQuAD v2 evaluation script (and the `squad_v2` metric the
DialDoc21 scorer loads) computes them: same normalisation, same no-answer handling, same order of sums."""

import collections
import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)  # the script's character filter, as one translate


def normalize_answer(text):
    """Lower case, drop ASCII punctuation, replace the articles a/an/the by a space, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text):
    return normalize_answer(text).split() if text else []


def exact_match(gold, prediction):
    return int(normalize_answer(gold) == normalize_answer(prediction))


def token_f1(gold, prediction):
    return _f1(answer_tokens(gold), answer_tokens(prediction))


def _f1(gold_tokens, pred_tokens):
    if not gold_tokens or not pred_tokens:
        return int(gold_tokens == pred_tokens)  # a no-answer scores 1 only against a no-answer
    same = sum((collections.Counter(gold_tokens) & collections.Counter(pred_tokens)).values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(pred_tokens)
    recall = 1.0 * same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def span_scores(prediction, gold_texts):
    """Exact match (0/1) and F1 (0-1) of one prediction: the best over the gold texts that normalise to
    something (else against "", i.e. right only for a prediction that normalises to nothing). The same values
    as ``exact_match`` and ``token_f1``, with the prediction normalised once."""
    golds = [gold for gold in map(normalize_answer, gold_texts) if gold] or [""]
    predicted = normalize_answer(prediction)
    pred_tokens = predicted.split()
    return (max(int(gold == predicted) for gold in golds),
            max(_f1(gold.split(), pred_tokens) for gold in golds))


def raw_scores(gold_texts, predictions):
    """Per id, ``span_scores`` of its prediction."""
    exact, f1 = {}, {}
    for qid, texts in gold_texts.items():
        exact[qid], f1[qid] = span_scores(predictions[qid], texts)
    return exact, f1


def apply_threshold(scores, no_answer_probs, has_answer, threshold):
    """A prediction whose no-answer probability exceeds ``threshold`` counts as a no-answer."""
    return {
        qid: float(not has_answer[qid]) if no_answer_probs[qid] > threshold else score
        for qid, score in scores.items()
    }


def summary(exact, f1, qids=None):
    """Mean exact match and F1 (in %) over ``qids`` (default: all ids, in order)."""
    if qids is None:
        exact_sum, f1_sum, total = sum(exact.values()), sum(f1.values()), len(exact)
    else:
        exact_sum, f1_sum, total = sum(exact[q] for q in qids), sum(f1[q] for q in qids), len(qids)
    return {"exact": 100.0 * exact_sum / total, "f1": 100.0 * f1_sum / total, "total": total}


def best_threshold(predictions, scores, no_answer_probs, has_answer):
    """The best score reachable by answering "" above some no-answer probability, and that probability."""
    score = sum(1 for qid in has_answer if not has_answer[qid])
    best, best_thresh = score, 0.0
    for qid in sorted(no_answer_probs, key=lambda k: no_answer_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            score += scores[qid]
        elif predictions[qid]:
            score += -1
        if score > best:
            best, best_thresh = score, no_answer_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def squad_v2_scores(predictions, no_answer_probs, gold_texts, threshold=1.0):
    """``predictions`` {id: text} and ``no_answer_probs`` {id: float} in prediction order; ``gold_texts``
    {id: [texts]} in reference order (the order of the sums, as in the official script)."""
    has_answer = {qid: bool(texts) for qid, texts in gold_texts.items()}
    exact_raw, f1_raw = raw_scores(gold_texts, predictions)
    exact = apply_threshold(exact_raw, no_answer_probs, has_answer, threshold)
    f1 = apply_threshold(f1_raw, no_answer_probs, has_answer, threshold)
    result = summary(exact, f1)
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [qid for qid, has in has_answer.items() if has is wanted]
        if qids:
            result.update({f"{prefix}_{key}": value for key, value in summary(exact, f1, qids).items()})
    result["best_exact"], result["best_exact_thresh"] = best_threshold(predictions, exact_raw, no_answer_probs, has_answer)
    result["best_f1"], result["best_f1_thresh"] = best_threshold(predictions, f1_raw, no_answer_probs, has_answer)
    return result
