"""Jeopardy! scores without ``evaluate`` around them: what ``compute(predictions=..., references=...)`` returns,
for ``qahub evaluate jeopardy_meteor`` (which never imports ``evaluate``, nor what it pulls in) and for the metric."""

from .examples import score_questions
from .inputs import check_options, read_pairs, values_and_skips
from .russian_meteor import THRESHOLD, shared


def score_answers(predictions, references, question_numbers=None, confidences=None, confidence_threshold=None,
                  order="official", threshold=THRESHOLD, value_multiplier=1, tokenizer="auto"):
    """The metric without `evaluate` around it (same arguments, result and errors as `compute`)."""
    check_options(order, threshold, tokenizer)
    return score_checked(*read_pairs(predictions, references), question_numbers, confidences, confidence_threshold,
                   order, threshold, value_multiplier, tokenizer)


def score_checked(replies, answers, row_numbers, question_numbers=None, confidences=None, confidence_threshold=None,
            order="official", threshold=THRESHOLD, value_multiplier=1, tokenizer="auto"):
    values, skip = values_and_skips(len(replies), row_numbers, question_numbers, confidences, confidence_threshold,
                                    value_multiplier)
    return score_questions(replies, answers, values, skip, shared(tokenizer), order, threshold)


score = score_answers
