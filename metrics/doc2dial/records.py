"""Checking the metric's inputs before `evaluate` stores them: one ValueError naming the record and the field.

References are structured input: a wrong one raises. A prediction's text (``prediction_text``, ``utterance``) is a
model's reply: it never raises; what cannot be read (None, not a string, lone surrogates) is stored as ``""`` with
``unparseable`` set."""

import math
import numbers
import re
import struct

import datasets

from .dialogues import agent_turn_references, is_dialogue
from .replies import read_reply

_SURROGATE = re.compile("[\ud800-\udfff]")
_INT32 = (-(2**31), 2**31 - 1)

FIELDS = {
    "subtask1": {"predictions": ("id", "prediction_text", "no_answer_probability"), "references": ("id", "answers")},
    "subtask2": {"predictions": ("id", "utterance"), "references": ("id", "utterance")},
}
REPLY_FIELD = {"subtask1": "prediction_text", "subtask2": "utterance"}
OPTIONAL = {"no_answer_probability": 0.0}  # a prediction without one is a confident answer (or no answer)
OPTIONS = {"subtask1": ("no_answer_threshold", "no_answer_text"), "subtask2": ()}


def clean_predictions(records, task):
    """Predictions reduced to their fields plus ``unparseable`` (0/1); the reply text read by ``read_reply``."""
    fields, reply = FIELDS[task]["predictions"], REPLY_FIELD[task]
    cleaned = []
    for index, record in enumerate(as_rows(records, "prediction", fields)):
        if isinstance(record, dict):
            record = {**{key: value for key, value in OPTIONAL.items() if key not in record}, **record}
        record = _clean(f"doc2dial: prediction {index}", record, fields, checked=[k for k in fields if k != reply])
        record[reply], unparseable = read_reply(record[reply])
        cleaned.append({**record, "unparseable": int(unparseable)})
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
    if isinstance(records, datasets.Dataset):
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
    where = f"{where} (id {record.get('id')!r})"
    missing = [key for key in fields if key not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    for key in checked:
        problem = _CHECKS[key](record[key])
        if problem:
            raise ValueError(f"{where}: {key!r} {problem}")
    return {key: record[key] for key in fields}


def check_options(config_name, options):
    """Only the config's keyword arguments; ``no_answer_threshold`` a finite number."""
    unknown = sorted(set(options) - set(OPTIONS[config_name]))
    if unknown:
        allowed = ", ".join(OPTIONS[config_name]) or "none"
        raise ValueError(f"doc2dial {config_name}: unknown keyword argument(s) {', '.join(unknown)} (accepted: {allowed})")
    if "no_answer_threshold" in options:
        value = options["no_answer_threshold"]
        if not _is_real(value) or not math.isfinite(value):
            raise ValueError(f"doc2dial subtask1: no_answer_threshold must be a finite number, got {value!r}")
    if options.get("no_answer_text") is not None and _text_problem(options["no_answer_text"]):
        raise ValueError(f"doc2dial subtask1: no_answer_text must be a string or None, got {options['no_answer_text']!r}")


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
    if not _is_real(value) or not math.isfinite(value) or not _fits_float32(value):
        return f"must be a finite number (it is stored as float32), got {value!r}"
    return None


def _fits_float32(value):
    try:
        struct.pack("<f", value)
    except OverflowError:
        return False
    return True


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
