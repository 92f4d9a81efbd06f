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
_FIELD_SET, _ROW_SET, _META_SET = frozenset(FIELDS), frozenset(ROW_FIELDS), frozenset(META_FIELDS)


def check_inputs(predictions, references):
    """Predictions and references given to ``compute`` directly, checked once: ``(replies, records)``."""
    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(f"limur: {len(predictions)} predictions but {len(references)} references; "
                         "give one reply for each reference")
    records = normalise_references(references)
    check_added(records)
    return check_predictions(predictions), records


def check_added(records):
    """What checking each reference alone cannot tell: that there is something to score, and that no two
    references share an id (across add_batch calls too)."""
    if not records:
        raise ValueError("limur: nothing to score: no predictions and no references were given")
    seen = {}
    for index, ref in enumerate(records):
        if ref["id"] in seen:
            raise ValueError(f"reference {index} (id {ref['id']}): id {ref['id']} is also the id of "
                             f"reference {seen[ref['id']]}")
        seen[ref["id"]] = index


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
    if "outputs" in ref or "meta" in ref:
        record = _from_row(index, ref)
    else:
        record = {field: ref[field] for field in FIELDS if field in ref}
    check_reference(index, record)
    return record


def _from_row(index, row):
    meta = row.get("meta")
    where = (index, meta.get("id") if isinstance(meta, dict) else None)
    if not row.keys() >= _ROW_SET:
        _fail(where, f"lacks {', '.join(field for field in ROW_FIELDS if field not in row)}")
    if not isinstance(meta, dict):
        _fail(where, f"meta must be a dict, got {type(meta).__name__}")
    if not meta.keys() >= _META_SET:
        _fail(where, f"lacks {', '.join(f'meta.{field}' for field in META_FIELDS if field not in meta)}")
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
    if type(outputs) is str:
        return outputs
    if isinstance(outputs, numbers.Integral) and not isinstance(outputs, bool):
        _expect(-1 <= outputs < len(LETTERS), where, f"outputs {outputs!r} is not a letter's ClassLabel id")
        return "" if outputs == -1 else LETTERS[outputs]
    if not isinstance(outputs, str):
        _fail(where, f"outputs must be a string, got {outputs!r}"[:300])
    return outputs


def _label_name(value, names):
    """A ClassLabel integer of an older export as its name; anything else as it is (checked later)."""
    if type(value) is str:
        return value
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
    """The task as the model saw it, as MERA's judge sees it: a ``Task`` of ``instruction`` and ``inputs``, else
    the row's ``prompt``."""
    instruction, inputs = row.get("instruction"), row.get("inputs")
    if isinstance(instruction, str) and isinstance(inputs, dict):
        return Task(instruction, inputs)
    _expect("prompt" in row, where, "lacks prompt (or instruction and inputs)")
    return row["prompt"]


class Task:
    """The task text of a dataset row, made only when asked for (by the judge, or to store the reference in
    evaluate's Arrow cache): ``instruction.format(**inputs)``, or the instruction when it cannot be filled."""

    __slots__ = ("instruction", "inputs")

    def __init__(self, instruction, inputs):
        self.instruction, self.inputs = instruction, inputs

    def __str__(self):
        try:
            return self.instruction.format_map(self.inputs)
        except (KeyError, IndexError, ValueError, AttributeError):
            return self.instruction

    def pieces(self):
        """The texts the task is made of, to check: the instruction and the text inputs, joined."""
        try:
            return self.instruction, "".join(self.inputs.values())
        except TypeError:  # an input that is not text is written with str(), and holds no lone surrogate
            return self.instruction, "".join(value for value in self.inputs.values() if isinstance(value, str))


def task_text(prompt):
    """A record's ``prompt`` as text."""
    return prompt if isinstance(prompt, str) else str(prompt)


def storable(records):
    """The records with their task text made, as evaluate's Arrow cache stores them."""
    return [{**record, "prompt": task_text(record["prompt"])} for record in records]


def check_reference(index, ref):
    """Raise a ValueError naming the reference when ``ref`` is not a valid internal record. Each message is
    made only when its check fails: this runs once per example."""
    if not isinstance(ref, dict):
        raise ValueError(f"reference {index}: expected a dict, got {type(ref).__name__}")
    where = (index, ref.get("id"))
    if not ref.keys() >= _FIELD_SET:
        _fail(where, f"lacks {', '.join(field for field in FIELDS if field not in ref)}")
    record_id, options, answer, prompt = ref["id"], ref["options"], ref["answer"], ref["prompt"]
    if not (type(record_id) is int or isinstance(record_id, numbers.Integral) and not isinstance(record_id, bool)) \
            or not _INT64[0] <= record_id <= _INT64[1]:
        _fail(where, f"id must be an integer, got {record_id!r}")
    option_text = _joined(options) if isinstance(options, (list, tuple)) else None
    if option_text is None:
        _fail(where, f"options must be a list of strings, got {options!r}"[:300])
    if not isinstance(answer, str):
        _fail(where, f"gold answer must be a string, got {answer!r}"[:300])
    letter = answer.strip()
    if letter:  # "" is a closed answer: scored 0 and counted
        if len(letter) != 1 or letter not in LETTERS:
            _fail(where, f"gold answer {answer!r} is not one of the letters {' '.join(LETTERS)}")
        if LETTERS.index(letter) >= len(options):
            _fail(where, f"gold answer {answer!r} names no option (it has {len(options)})")
    if ref["task_type"] not in TASK_TYPES:
        _fail(where, f"task_type is {ref['task_type']!r}, expected one of {', '.join(TASK_TYPES)}")
    if ref["context_type"] not in CONTEXT_TYPES:
        _fail(where, f"context_type is {ref['context_type']!r}, expected one of {', '.join(CONTEXT_TYPES)}")
    if not isinstance(prompt, (str, Task)):
        _fail(where, f"prompt must be a string, got {type(prompt).__name__}")
    task = (prompt,) if isinstance(prompt, str) else prompt.pieces()
    # Arrow stores UTF-8, which cannot hold the lone surrogates a Python string may. Encoding is the fastest test:
    # UTF-16 refuses exactly the lone surrogates, as UTF-8 does, at a third of its cost on Cyrillic text
    try:
        for text in (*task, answer, option_text):
            text.encode("utf-16")
    except UnicodeEncodeError:
        texts = [("prompt", "".join(task)), ("gold answer", answer),
                 *((f"option {n}", o) for n, o in enumerate(options))]
        what, match = next((what, m) for what, text in texts if (m := _SURROGATE.search(text)))
        _fail(where, f"{what} is not valid Unicode text (lone surrogate at position {match.start()})")


def _joined(texts):
    """The texts joined, or None when one is not a string."""
    try:
        return "".join(texts)
    except TypeError:
        return None


def _expect(condition, where, problem):
    if not condition:
        _fail(where, problem)


def _fail(where, problem):
    """``where``: the reference's (index, id)."""
    index, record_id = where
    raise ValueError(f"reference {index} (id {record_id!r}): {problem}")
