"""The inputs of ``jeopardy_meteor``, each checked once: the options, the gold answers (plain strings, or the
builder's rows as they are: a ``datasets.Dataset`` or a list of row dicts of the ``extended`` or ``qa``
config), the question numbers (values) and confidences, and the compact form of replies and references in
`evaluate`'s cache. Replies are never an error: the reply parser counts what it cannot read."""

import json
import math
import numbers
import warnings
from collections.abc import Mapping

from .russian_meteor import ORDERS
from .spacy_like import TOKENIZERS

NOTHING_TO_SCORE = "nothing to score: no predictions and no references were given"


def check_options(order, threshold, tokenizer):
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {tokenizer!r}")
    check_number("threshold", threshold)


def read_pairs(predictions, references):
    """``(replies, answers, numbers)`` of a batch: the replies as given, each gold answer, and the
    ``question_number`` of its row (``None`` for a gold string or a row without that field)."""
    replies = list(predictions)
    answers, question_numbers = read_references(references)
    if len(replies) != len(answers):
        raise ValueError(f"got {len(replies)} predictions for {len(answers)} references")
    return replies, answers, question_numbers


def read_references(references):
    """``(answers, question_numbers)``; a wrong reference is an error naming it."""
    columns = getattr(references, "column_names", None)
    if columns is not None:
        references = _dataset_rows(references, columns)
    answers, question_numbers = [], []
    for index, reference in enumerate(references):
        answer, number = _reference(index, reference)
        answers.append(answer)
        question_numbers.append(number)
    return answers, question_numbers


def _dataset_rows(dataset, columns):
    """The fields the metric reads, column by column (much faster than row by row)."""
    if "answer" not in columns:
        raise ValueError(f"references: the dataset has no 'answer' column (columns: {', '.join(columns)})")
    wanted = [name for name in ("answer", "question_number", "question_id") if name in columns]
    values = [dataset[name] for name in wanted]
    return [dict(zip(wanted, row, strict=True)) for row in zip(*values, strict=True)]


def _reference(index, reference):
    if isinstance(reference, str):
        if not reference.strip():
            raise ValueError(f"reference {index}: the gold answer is empty")
        return reference, None
    if not isinstance(reference, Mapping):
        raise TypeError(f"reference {index}: expected a gold answer (str) or a row (dict), "
                        f"got {type(reference).__name__} {reference!r}"[:300])
    where = _name(index, reference)
    if "answer" not in reference:
        raise ValueError(f"{where}: the row has no 'answer' field (fields: {', '.join(map(str, reference))})")
    answer = reference["answer"]
    if not isinstance(answer, str):
        raise ValueError(f"{where}: 'answer' must be a string, got {type(answer).__name__} {answer!r}"[:300])
    if not answer.strip():
        raise ValueError(f"{where}: the gold answer is empty")
    return answer, _row_number(where, reference.get("question_number"))


def _name(index, row):
    qid = row.get("question_id")
    if qid is None:
        return f"reference {index}"
    return f"reference {index} (question_id {qid if isinstance(qid, int) else repr(qid)[:60]})"


def _row_number(where, value):
    if value is None or _integral(value) is not None:
        return None if value is None else int(value)
    raise ValueError(f"{where}: question_number must be an integer, got {type(value).__name__} {value!r}")


def values_and_skips(count, row_numbers, question_numbers=None, confidences=None, confidence_threshold=None,
                     value_multiplier=1):
    """``(values, skip)`` for ``count`` questions: each question's value (``None``: no game score) and, per
    question, True where its confidence is below the threshold (the system abstains). No question is an error."""
    if count == 0:
        raise ValueError(NOTHING_TO_SCORE)
    skip = _low_confidence(count, confidences, confidence_threshold)
    if question_numbers is None:
        question_numbers = _all_or_none(row_numbers)
        value_multiplier = _multiplier(value_multiplier)
        return (None if question_numbers is None else _values(question_numbers, value_multiplier)), skip
    question_numbers = [_question_number(index, number) for index, number in enumerate(question_numbers)]
    if len(question_numbers) != count:
        raise ValueError(f"got {len(question_numbers)} question numbers for {count} predictions")
    return _values(question_numbers, _multiplier(value_multiplier)), skip


def _all_or_none(question_numbers):
    """The rows' question numbers when every reference has one, ``None`` when none has."""
    missing = [index for index, number in enumerate(question_numbers) if number is None]
    if len(missing) == len(question_numbers):
        return None
    if missing:
        first = next(index for index, number in enumerate(question_numbers) if number is not None)
        raise ValueError(f"reference {missing[0]}: no question_number, while reference {first} has one: "
                         "give every row a question_number, or pass question_numbers=")
    return question_numbers


def _values(question_numbers, multiplier):
    """The value of each question: its number in the topic (1-5) times ``multiplier``; others warn."""
    outside = [index for index, number in enumerate(question_numbers) if not 1 <= number <= 5]
    if outside:
        shown = ", ".join(f"{i} ({question_numbers[i]})" for i in outside[:5])
        warnings.warn(f"{len(outside)} question number(s) outside 1-5, scored as given: {shown}", stacklevel=4)
    values = [number * multiplier for number in question_numbers]
    try:  # every game score is at most this sum, so it must fit a float (JSON readers read scores as floats)
        finite = math.isfinite(float(sum(abs(value) for value in values)))
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise ValueError(f"the game score overflows: question numbers x value_multiplier {multiplier!r} "
                         "are not finite numbers")
    return values


def _multiplier(value):
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"value_multiplier must be a finite positive number, got {value!r}")
    return value


def _low_confidence(count, confidences, confidence_threshold):
    if (confidences is None) != (confidence_threshold is None):
        raise ValueError("confidences and confidence_threshold go together: give both or neither")
    if confidences is None:
        return [False] * count
    check_number("confidence_threshold", confidence_threshold)
    confidences = list(confidences)
    if len(confidences) != count:
        raise ValueError(f"got {len(confidences)} confidences for {count} predictions")
    for index, confidence in enumerate(confidences):
        if not _is_real(confidence):
            raise TypeError(f"confidence {index}: expected a number, got {confidence!r}")
    return [confidence < confidence_threshold for confidence in confidences]


def check_number(name, value):
    """``value`` must be a real, finite number (not a bool)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def _question_number(index, number):
    value = _integral(number)
    if value is None:
        raise TypeError(f"question number {index}: expected an integer, got {type(number).__name__} {number!r}")
    return value


def _integral(number):
    """An int, or a float with an integral value (2.0) as int; ``None`` for anything else."""
    if isinstance(number, numbers.Integral) and not isinstance(number, bool):
        return int(number)
    if isinstance(number, numbers.Real) and not isinstance(number, bool) and math.isfinite(number):
        if float(number).is_integer():
            return int(number)
    return None


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)


# `evaluate` stores predictions and references as strings in an Arrow file before `_compute` reads them back:
# a reply of any type and any text (lone surrogates too, which UTF-8 cannot hold) and a reference with its
# question number are stored as JSON (ASCII escapes), and read back exactly.

def encode_pairs(replies, answers, question_numbers):
    return ([json.dumps(reply) if isinstance(reply, str) else "null" for reply in replies],
            [json.dumps([answer, number]) for answer, number in zip(answers, question_numbers, strict=True)])


def decode_pairs(stored_replies, stored_references):
    """``(replies, answers, numbers)`` as `encode_pairs` got them."""
    replies = [json.loads(stored) for stored in stored_replies]
    pairs = [json.loads(stored) for stored in stored_references]
    return replies, [answer for answer, _ in pairs], [number for _, number in pairs]
