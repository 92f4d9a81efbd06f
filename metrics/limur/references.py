"""Checks of the ``limur`` metric's inputs: every problem is a ValueError naming the record."""

import numbers

LETTERS = "АБВГДЕЁЖЗ"
TASK_TYPES = ("rwsd", "kusdra")
CONTEXT_TYPES = ("текст", "диалог")
FIELDS = ("id", "answer", "options", "task_type", "context_type", "prompt")
_INT64 = (-(2**63), 2**63 - 1)


def check_predictions(predictions):
    """The replies as strings: None is an empty reply (unparseable); anything else but a string is an error."""
    checked = []
    for index, prediction in enumerate(predictions):
        if prediction is None:
            prediction = ""
        if not isinstance(prediction, str):
            raise ValueError(f"prediction {index}: expected a string (or None), got {type(prediction).__name__}")
        _expect_text(prediction, f"prediction {index}", "")
        checked.append(prediction)
    return checked


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
    _expect(isinstance(answer, str) and len(answer) == 1 and answer in LETTERS, where,
            f"gold answer {answer!r} is not one of the letters {' '.join(LETTERS)}")
    _expect(LETTERS.index(answer) < len(options), where, f"gold answer {answer!r} names no option (it has {len(options)})")
    _expect(ref["task_type"] in TASK_TYPES, where,
            f"task_type is {ref['task_type']!r}, expected one of {', '.join(TASK_TYPES)}")
    _expect(ref["context_type"] in CONTEXT_TYPES, where,
            f"context_type is {ref['context_type']!r}, expected one of {', '.join(CONTEXT_TYPES)}")
    _expect(isinstance(ref["prompt"], str), where, f"prompt must be a string, got {type(ref['prompt']).__name__}")
    _expect_text(ref["prompt"], where, "prompt")
    for number, option in enumerate(options):
        _expect_text(option, where, f"option {number}")


def _expect_text(text, where, what):
    """Strings Arrow can store: no lone surrogates (which Python strings may hold, UTF-8 cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        subject = f"{what} is not" if what else "not"
        raise ValueError(f"{where}: {subject} valid Unicode text (lone surrogate at position {err.start})") from None


def _expect(condition, where, problem):
    if not condition:
        raise ValueError(f"{where}: {problem}")
