"""One question scored: the per-example code shared by the `evaluate` metric and the harness tasks."""

from .replies import ABSTAINED, ANSWERED, UNPARSEABLE, parse_reply
from .russian_meteor import THRESHOLD


def score_example(reply, gold, value, meteor, order="official", threshold=THRESHOLD, abstain=False):
    """``reply`` (any object) against ``gold``; ``value``: the question's value (``None``: no game score, 0).

    ``abstain``: the caller abstains for this question (e.g. a confidence below the threshold). An abstention,
    including an unparseable reply, gets METEOR 0 and game score 0.
    """
    answer, status = parse_reply(reply)
    if abstain and status == ANSWERED:
        status = ABSTAINED
    if status != ANSWERED:
        return {"answer": answer, "status": status, "meteor": 0.0, "correct": False, "abstained": True,
                "unparseable": status == UNPARSEABLE, "game_score": 0}
    value_of = meteor.score(answer, gold, order)
    correct = value_of > threshold
    game = 0 if value is None else (value if correct else -value)
    return {"answer": answer, "status": status, "meteor": value_of, "correct": correct, "abstained": False,
            "unparseable": False, "game_score": game}


def score_questions(replies, answers, values, skip, meteor, order="official", threshold=THRESHOLD):
    """Every question scored and summed up: the result of the `evaluate` metric. ``values``: each question's
    value, or ``None`` (no game score); ``skip``: per question, True where the caller abstains."""
    examples = [score_example(reply, gold, None if values is None else values[i], meteor, order, threshold, skip[i])
                for i, (reply, gold) in enumerate(zip(replies, answers, strict=True))]
    result = _counts(examples)
    if values is not None:
        result["score"] = result["game_score"] = sum(example["game_score"] for example in examples)
        result["max_score"] = sum(values)
    result.update(
        meteor_per_example=[e["meteor"] for e in examples], correct=[e["correct"] for e in examples],
        abstained=[e["abstained"] for e in examples], status=[e["status"] for e in examples],
        answers=[e["answer"] for e in examples],
        order=order, threshold=threshold, tokenizer=meteor.tokenizer, preprocessing=meteor.description,
    )
    return result


def _counts(examples):
    total = len(examples)  # never 0: no question is an error before scoring
    num_correct = sum(e["correct"] for e in examples)
    num_abstained = sum(e["abstained"] for e in examples)
    num_unparseable = sum(e["unparseable"] for e in examples)
    return {
        "meteor": sum(e["meteor"] for e in examples) / total,
        "accuracy": num_correct / total,
        "num_questions": total,
        "num_answered": total - num_abstained,
        "num_abstained": num_abstained,
        "num_unparseable": num_unparseable,
        "num_correct": num_correct,
        "num_wrong": total - num_abstained - num_correct,
        "abstention_rate": num_abstained / total,
        "unparseable": num_unparseable / total,
    }
