"""The metric's one input check: options, fields and the id join, each record read once.

References are structured input: a wrong one raises a ValueError naming the record and the field. A prediction's
text (``prediction_text``, ``utterance``) is a model's reply: it never raises; what cannot be read (None, not a
string, lone surrogates) is stored as ``""`` with ``unparseable`` set. Predictions and references must have the
same ids, once each (``check_ids``); with ``ignore_missing`` the references without a prediction are left out
first, as the shared task's scorer does.
"""

import collections
import math
import numbers
import re
import struct
import sys

from .dialogues import agent_turn_references, is_dialogue
from .replies import read_reply

_SURROGATE = re.compile("[\ud800-\udfff]")
_INT32 = (-(2**31), 2**31 - 1)
_SHOWN = 10  # ids listed in an id error

FIELDS = {
    "subtask1": {"predictions": ("id", "prediction_text", "no_answer_probability"), "references": ("id", "answers")},
    "subtask2": {"predictions": ("id", "utterance"), "references": ("id", "utterance")},
}
REPLY_FIELD = {"subtask1": "prediction_text", "subtask2": "utterance"}
OPTIONS = {"subtask1": ("no_answer_threshold", "no_answer_text", "ignore_missing"), "subtask2": ("ignore_missing",)}


class IdMismatchError(ValueError):
    """Predictions and references do not have the same ids, one each (or there is nothing to score)."""


def checked_inputs(task, predictions, references, ignore_missing=False):
    """``(predictions, references, missing_ignored)``, each record checked once and the ids joined."""
    predictions = clean_predictions(predictions, task)
    return (predictions, *joined(predictions, clean_references(references, task), ignore_missing))


def joined(predictions, references, ignore_missing=False):
    """``(references, missing_ignored)`` of checked records whose ids match the predictions' (``check_ids``);
    ``missing_ignored`` is None without ``ignore_missing``."""
    missing = None
    if ignore_missing:
        predicted = {p["id"] for p in predictions}
        kept = [r for r in references if r["id"] in predicted]
        missing, references = len(references) - len(kept), kept
        if not predictions and missing:
            raise ValueError(f"doc2dial: nothing to score: no predictions (all {missing} references ignored as missing)")
    check_ids([p["id"] for p in predictions], [r["id"] for r in references])
    return references, missing


def clean_predictions(records, task):
    """Predictions reduced to their fields plus ``unparseable`` (0/1); the reply text read by ``read_reply``;
    ``no_answer_probability`` (default 0.0) rounded to float32, as the shared task's squad_v2 metric stores it."""
    fields, reply = FIELDS[task]["predictions"], REPLY_FIELD[task]
    cleaned = []
    for index, record in enumerate(as_rows(records, "prediction", fields)):
        if isinstance(record, dict) and task == "subtask1" and "no_answer_probability" not in record:
            record = {**record, "no_answer_probability": 0.0}  # no probability: a confident answer (or no answer)
        where = f"doc2dial: prediction {index}"
        record = _clean(where, record, fields, checked=[k for k in fields if k != reply])
        record[reply], unparseable = read_reply(record[reply])
        record["unparseable"] = int(unparseable)
        if task == "subtask1":
            record["no_answer_probability"] = _as_float32(record["no_answer_probability"])
        cleaned.append(record)
    return cleaned


def clean_references(records, task):
    """References reduced to their fields, each checked. For subtask 2 a ``dialogue_domain`` row stands for its
    agent turns (``{dial_id}_{turn_id - 1}``, utterance); other records need ``id`` and ``utterance``."""
    fields = FIELDS[task]["references"]
    cleaned = []
    for index, record in enumerate(as_rows(records, "reference", fields)):
        where = f"doc2dial: reference {index}"
        if task == "subtask2" and is_dialogue(record):
            cleaned += [_clean(where, turn, fields, fields) for turn in agent_turn_references(record, where)]
        else:
            cleaned.append(_clean(where, record, fields, fields))
    return cleaned


def as_rows(records, side, fields):
    """A list (or tuple) of records, or a ``datasets.Dataset`` (its rows; only ``fields`` when it has them all,
    so that e.g. the documents of ``doc2dial_rc`` rows are not read)."""
    # a Dataset comes from an imported `datasets`: a caller handing lists (qahub evaluate) never imports it (~1 s)
    datasets = sys.modules.get("datasets")
    if datasets is not None and isinstance(records, datasets.Dataset):
        if set(fields) <= set(records.column_names):
            records = records.select_columns(list(fields))
        return records.to_list()
    if not isinstance(records, (list, tuple)):
        raise ValueError(f"doc2dial: {side}s must be a list of dicts with {', '.join(fields)} (or a datasets.Dataset), "
                         f"got {type(records).__name__}")
    return records


def _clean(where, record, fields, checked):
    """``record`` reduced to ``fields``; a missing field, or a ``checked`` field of the wrong type, raises."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a dict with {', '.join(fields)}, got {type(record).__name__}")
    try:
        cleaned = {key: record[key] for key in fields}
    except KeyError:
        missing = [key for key in fields if key not in record]
        raise ValueError(f"{where} (id {record.get('id')!r}): missing key(s) {', '.join(missing)}") from None
    for key in checked:
        problem = _CHECKS[key](cleaned[key])
        if problem:
            raise ValueError(f"{where} (id {record.get('id')!r}): {key!r} {problem}")
    return cleaned


def check_ids(prediction_ids, reference_ids):
    """Raise ``IdMismatchError`` naming missing, extra and duplicate ids, or saying that nothing is scored."""
    if len(set(prediction_ids)) == len(prediction_ids) == len(reference_ids) and set(prediction_ids) == set(reference_ids):
        if reference_ids:
            return
        raise ValueError("doc2dial: nothing to score: no predictions and no references")
    problems = []
    for what, ids in (("prediction", prediction_ids), ("reference", reference_ids)):
        repeated = [i for i, n in collections.Counter(ids).items() if n > 1]
        if repeated:
            problems.append(f"duplicate {what} ids: {_listed(repeated)}")
    predicted, known = set(prediction_ids), set(reference_ids)
    missing = [i for i in dict.fromkeys(reference_ids) if i not in predicted]
    extra = [i for i in dict.fromkeys(prediction_ids) if i not in known]
    if missing:
        problems.append(f"references without a prediction: {_listed(missing)}")
    if extra:
        problems.append(f"predictions whose id is not in the references: {_listed(extra)}")
    raise IdMismatchError("doc2dial: predictions and references must have the same ids, once each; " + "; ".join(problems))


def _listed(ids):
    shown = ", ".join(repr(i) for i in ids[:_SHOWN])
    return f"{shown}, ... ({len(ids)} in all)" if len(ids) > _SHOWN else shown


def check_options(task, options):
    """Only the config's keyword arguments; ``no_answer_threshold`` a finite number, ``ignore_missing`` a bool."""
    unknown = sorted(set(options) - set(OPTIONS[task]))
    if unknown:
        raise ValueError(f"doc2dial {task}: unknown keyword argument(s) {', '.join(unknown)} "
                         f"(accepted: {', '.join(OPTIONS[task])})")
    if "no_answer_threshold" in options:
        value = options["no_answer_threshold"]
        if not _is_real(value) or not math.isfinite(value):
            raise ValueError(f"doc2dial subtask1: no_answer_threshold must be a finite number, got {value!r}")
    if options.get("no_answer_text") is not None and _text_problem(options["no_answer_text"]):
        raise ValueError(f"doc2dial subtask1: no_answer_text must be a string or None, got {options['no_answer_text']!r}")
    if not isinstance(options.get("ignore_missing", False), bool):
        raise ValueError(f"doc2dial {task}: ignore_missing must be True or False, got {options['ignore_missing']!r}")


def _text_problem(value):
    if not isinstance(value, str):
        return f"must be a string, got {value!r}"
    bad = _SURROGATE.search(value)
    if bad:
        return f"holds a lone surrogate {bad.group()!r} at character {bad.start()} (not encodable as UTF-8)"
    return None


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _probability_problem(value):
    if not _is_real(value) or not math.isfinite(value) or _as_float32(value) is None:
        return f"must be a finite number (it is stored as float32), got {value!r}"
    return None


def _as_float32(value):
    """``value`` rounded to the nearest float32; None when it does not fit."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return None


def _answers_problem(value):
    shape = '{"text": [str, ...], "answer_start": [int, ...]} of equal lengths'
    if not isinstance(value, dict) or not isinstance(value.get("text"), list) or not isinstance(value.get("answer_start"), list):
        return f"must be {shape}, got {value!r}"
    if len(value["text"]) != len(value["answer_start"]):
        return f"must be {shape}, got {len(value['text'])} texts and {len(value['answer_start'])} starts"
    for text in value["text"]:
        problem = _text_problem(text)
        if problem:
            return f"text {problem}"
    for start in value["answer_start"]:
        if not isinstance(start, numbers.Integral) or isinstance(start, bool) or not _INT32[0] <= start <= _INT32[1]:
            return f"answer_start must hold int32 integers, got {start!r}"
    return None


_CHECKS = {
    "id": _text_problem,
    "prediction_text": _text_problem,
    "utterance": _text_problem,
    "no_answer_probability": _probability_problem,
    "answers": _answers_problem,
}
