"""Checks of the ``limur`` metric's inputs: every problem with a reference is a ValueError naming the record.

References are the rows of the ``limur`` dataset as ``load_dataset`` yields them (``outputs``, ``meta``,
``options``, ``instruction`` + ``inputs`` and/or ``prompt``), or the older flat records (``id``, ``answer``,
``options``, ``task_type``, ``context_type``, ``prompt``). Both become one internal record. Predictions are
model replies: never an error.
"""

import numbers
import re

LETTERS = "АБВГДЕЁЖЗ"
TASK_TYPES = ("rwsd", "kusdra")
CONTEXT_TYPES = ("текст", "диалог")
FIELDS = ("id", "answer", "options", "task_type", "context_type", "prompt")
ROW_FIELDS = ("outputs", "meta")
META_FIELDS = ("id", "task_type", "context_type")
OPTION_KEYS = [f"option_{c}" for c in "abcdefghi"]
_INT64 = (-(2**63), 2**63 - 1)
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_predictions(predictions):
    """The replies as text Arrow can store: None and non-strings become "" (unreadable, scored 0), lone
    surrogates become U+FFFD (they cannot be stored; neither can be part of a readable answer)."""
    return [_SURROGATE.sub("\ufffd", p) if isinstance(p, str) else "" for p in predictions]


def normalise_references(references):
    """Each reference (a dataset row or an old flat record) as the metric's internal record, checked."""
    return [normalise_reference(index, ref) for index, ref in enumerate(references)]


def normalise_reference(index, ref):
    if not isinstance(ref, dict):
        raise ValueError(f"reference {index}: expected a dict (a dataset row), got {type(ref).__name__}")
    record = _from_row(index, ref) if any(field in ref for field in ROW_FIELDS) else dict(ref)
    check_reference(index, record)
    return {field: record[field] for field in FIELDS}


def _from_row(index, row):
    meta = row.get("meta")
    where = f"reference {index} (id {meta.get('id') if isinstance(meta, dict) else None!r})"
    missing = [field for field in ROW_FIELDS if field not in row]
    _expect(not missing, where, f"lacks {', '.join(missing)}")
    _expect(isinstance(meta, dict), where, f"meta must be a dict, got {type(meta).__name__}")
    missing = [f"meta.{field}" for field in META_FIELDS if field not in meta]
    _expect(not missing, where, f"lacks {', '.join(missing)}")
    return {
        "id": meta["id"],
        "answer": _gold(where, row["outputs"]),
        "options": _row_options(where, row),
        "task_type": _label_name(meta["task_type"], TASK_TYPES),
        "context_type": _label_name(meta["context_type"], CONTEXT_TYPES),
        "prompt": _task_text(where, row),
    }


def _gold(where, outputs):
    """The raw ``outputs`` string; a ClassLabel integer (an older export) as its letter, -1 as ""."""
    if isinstance(outputs, numbers.Integral) and not isinstance(outputs, bool):
        _expect(-1 <= outputs < len(LETTERS), where, f"outputs {outputs!r} is not a letter's ClassLabel id")
        return "" if outputs == -1 else LETTERS[outputs]
    _expect(isinstance(outputs, str), where, f"outputs must be a string, got {outputs!r}"[:300])
    return outputs


def _label_name(value, names):
    """A ClassLabel integer of an older export as its name; anything else as it is (checked later)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    return value


def _row_options(where, row):
    if "options" in row:
        return row["options"]
    inputs = row.get("inputs")
    _expect(isinstance(inputs, dict), where, "lacks options (and inputs to take them from)")
    values = [inputs.get(key) or "" for key in OPTION_KEYS]
    _expect(all(isinstance(v, str) for v in values), where, "inputs options must be strings")
    return [v for v in values if v.strip()]


def _task_text(where, row):
    """The task as the model saw it, as MERA's judge sees it: ``instruction.format(**inputs)`` (the
    instruction itself when it cannot be filled), else the row's ``prompt``."""
    instruction, inputs = row.get("instruction"), row.get("inputs")
    if isinstance(instruction, str) and isinstance(inputs, dict):
        try:
            return instruction.format(**inputs)
        except (KeyError, IndexError, ValueError, AttributeError):
            return instruction
    _expect("prompt" in row, where, "lacks prompt (or instruction and inputs)")
    return row["prompt"]


def check_references(references, unique=True):
    seen = {}
    for index, ref in enumerate(references):
        check_reference(index, ref)
        if unique:
            if ref["id"] in seen:
                raise ValueError(f"reference {index} (id {ref['id']}): id {ref['id']} is also the id of "
                                 f"reference {seen[ref['id']]}")
            seen[ref["id"]] = index


def check_reference(index, ref):
    if not isinstance(ref, dict):
        raise ValueError(f"reference {index}: expected a dict, got {type(ref).__name__}")
    where = f"reference {index} (id {ref.get('id')!r})"
    missing = [field for field in FIELDS if field not in ref]
    _expect(not missing, where, f"lacks {', '.join(missing)}")
    record_id = ref["id"]
    _expect(isinstance(record_id, numbers.Integral) and not isinstance(record_id, bool)
            and _INT64[0] <= record_id <= _INT64[1], where, f"id must be an integer, got {record_id!r}")
    options = ref["options"]
    _expect(isinstance(options, (list, tuple)) and all(isinstance(o, str) for o in options), where,
            f"options must be a list of strings, got {options!r}"[:300])
    answer = ref["answer"]
    _expect(isinstance(answer, str), where, f"gold answer must be a string, got {answer!r}"[:300])
    letter = answer.strip()
    if letter:  # "" is a closed answer: scored 0 and counted
        _expect(letter in LETTERS and len(letter) == 1, where,
                f"gold answer {answer!r} is not one of the letters {' '.join(LETTERS)}")
        _expect(LETTERS.index(letter) < len(options), where,
                f"gold answer {answer!r} names no option (it has {len(options)})")
    _expect(ref["task_type"] in TASK_TYPES, where,
            f"task_type is {ref['task_type']!r}, expected one of {', '.join(TASK_TYPES)}")
    _expect(ref["context_type"] in CONTEXT_TYPES, where,
            f"context_type is {ref['context_type']!r}, expected one of {', '.join(CONTEXT_TYPES)}")
    _expect(isinstance(ref["prompt"], str), where, f"prompt must be a string, got {type(ref['prompt']).__name__}")
    _expect_text(ref["prompt"], where, "prompt")
    _expect_text(answer, where, "gold answer")
    for number, option in enumerate(options):
        _expect_text(option, where, f"option {number}")


def _expect_text(text, where, what):
    """Strings Arrow can store: no lone surrogates (which Python strings may hold, UTF-8 cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{where}: {what} is not valid Unicode text (lone surrogate at position {err.start})") from None


def _expect(condition, where, problem):
    if not condition:
        raise ValueError(f"{where}: {problem}")
