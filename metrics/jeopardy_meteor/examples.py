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
