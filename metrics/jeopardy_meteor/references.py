"""Gold answers for ``jeopardy_meteor``: plain strings, or the builder's rows as they are (a ``datasets.Dataset``
or a list of row dicts of the ``extended`` or ``qa`` config), and their compact form in `evaluate`'s cache."""

import json
import math
import numbers
from collections.abc import Mapping


def read_references(references):
    """``(answers, question_numbers)``: each gold answer, and the ``question_number`` of its row (``None`` for
    a gold string or a row without that field). A wrong reference is an error naming it."""
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
    return answer, _number(where, reference.get("question_number"))


def _name(index, row):
    qid = row.get("question_id")
    if qid is None:
        return f"reference {index}"
    return f"reference {index} (question_id {qid if isinstance(qid, int) else repr(qid)[:60]})"


def _number(where, value):
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        if float(value).is_integer():
            return int(value)
    raise ValueError(f"{where}: question_number must be an integer, got {type(value).__name__} {value!r}")


def row_numbers(question_numbers):
    """The rows' question numbers when every reference has one, ``None`` when none has."""
    missing = [index for index, number in enumerate(question_numbers) if number is None]
    if len(missing) == len(question_numbers):
        return None
    if missing:
        first = next(index for index, number in enumerate(question_numbers) if number is not None)
        raise ValueError(f"reference {missing[0]}: no question_number, while reference {first} has one: "
                         "give every row a question_number, or pass question_numbers=")
    return question_numbers


# `evaluate` stores predictions and references as strings in an Arrow file before `_compute` reads them back:
# a reply of any type and any text (lone surrogates too, which UTF-8 cannot hold) and a reference with its
# question number are stored as JSON (ASCII escapes), and read back exactly.

def encode_reply(reply):
    return json.dumps(reply) if isinstance(reply, str) else "null"


def decode_reply(stored):
    return json.loads(stored)


def encode_reference(answer, number):
    return json.dumps([answer, number])


def decode_reference(stored):
    answer, number = json.loads(stored)
    return answer, number
