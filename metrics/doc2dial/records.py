"""Checking the metric's inputs before `evaluate` stores them: one ValueError naming the record and the field."""

import math
import numbers
import re
import struct

_SURROGATE = re.compile("[\ud800-\udfff]")
_INT32 = (-(2**31), 2**31 - 1)

FIELDS = {
    "subtask1": {"predictions": ("id", "prediction_text", "no_answer_probability"), "references": ("id", "answers")},
    "subtask2": {"predictions": ("id", "utterance"), "references": ("id", "utterance")},
}
OPTIONS = {"subtask1": ("no_answer_threshold",), "subtask2": ()}


def clean_records(records, side, fields):
    """``records`` (a list of dicts) reduced to ``fields``, each checked; extra keys (e.g. the other columns of a
    ``doc2dial_rc`` row) are dropped. ``side`` is "prediction" or "reference", for the messages."""
    if not isinstance(records, (list, tuple)):
        raise ValueError(f"doc2dial: {side}s must be a list of dicts with {', '.join(fields)}, got {type(records).__name__}")
    return [_clean(index, record, side, fields) for index, record in enumerate(records)]


def _clean(index, record, side, fields):
    where = f"doc2dial: {side} {index}"
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected a dict with {', '.join(fields)}, got {type(record).__name__}")
    where = f"{where} (id {record.get('id')!r})"
    missing = [key for key in fields if key not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    for key in fields:
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
