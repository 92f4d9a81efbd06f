"""The two shared-task results from checked inputs (``inputs.checked_inputs``): pure functions, no checks."""

from .bleu_scoring import corpus_sacrebleu
from .replies import span_reply
from .squad_v2_scoring import squad_v2_scores


def grounding_result(predictions, references, no_answer_threshold=1.0, no_answer_text=None):
    """Subtask 1: SQuAD v2 scores, sums in reference order, best thresholds over the predictions in their order."""
    texts = {p["id"]: span_reply(p["prediction_text"], no_answer_text)[0] for p in predictions}
    no_answer_probs = {p["id"]: p["no_answer_probability"] for p in predictions}
    gold = {r["id"]: r["answers"]["text"] for r in references}
    return {**squad_v2_scores(texts, no_answer_probs, gold, no_answer_threshold), "unparseable": _unparseable(predictions)}


def generation_result(predictions, references):
    """Subtask 2: corpus sacreBLEU of the predictions in reference order."""
    by_id = {p["id"]: p["utterance"] for p in predictions}
    result = corpus_sacrebleu([by_id[r["id"]] for r in references], [r["utterance"] for r in references])
    return {**result, "total": len(references), "unparseable": _unparseable(predictions)}


def _unparseable(predictions):
    return sum(p["unparseable"] for p in predictions)


RESULTS = {"subtask1": grounding_result, "subtask2": generation_result}
