"""LIMUR's source files and their rows, without `datasets`: read once here, for the builder beside it (``limur.py``,
which yields these rows) and for ``qahub evaluate limur --data-dir`` (or a task file given to ``--references``),
which scores against them without importing `datasets`, pandas or pyarrow."""

import json
import os
import re
import string
from functools import lru_cache
from itertools import repeat
from operator import itemgetter

from qahub.readers import SourceDataError, read_json, read_jsonl, record_error

LETTERS = ["А", "Б", "В", "Г", "Д", "Е", "Ё", "Ж", "З"]
OPTION_KEYS = [f"option_{c}" for c in "abcdefghi"]
INPUT_KEYS = ["question", "context", "reference", *OPTION_KEYS]
_INPUT_KEY_SET = set(INPUT_KEYS)
_INPUT_VALUES, _OPTION_VALUES = itemgetter(*INPUT_KEYS), itemgetter(*OPTION_KEYS)  # a record's values, in order
TASK_TYPES = ["rwsd", "kusdra"]
CONFIGS = {"all": None, "rwsd": "rwsd", "kusdra": "kusdra"}  # each config's task type (None: both)
CONTEXT_TYPES = ["текст", "диалог"]

# JSON Lines file of each split, as MERA publishes tasks; ``dev`` is the validation split
SPLIT_FILES = {
    "train.jsonl": "train",
    "dev.jsonl": "validation",
    "validation.jsonl": "validation",
    "test.jsonl": "test",
    "shots.jsonl": "shots",
}
TASK_FILE = "task.json"
TASK_SPLITS = {"train": "train", "dev": "validation", "validation": "validation", "test": "test", "shots": "shots"}
_INT32 = (-(2**31), 2**31 - 1)


def kept_sources(sources, task_type, where):
    """``{split: path}`` of the ``sources`` that hold a record of ``task_type`` (all of them for None): a split with
    none is left out rather than built empty, after every record of it is validated; none left is an error."""
    kept = {split: path for split, path in sources.items() if holds_task_type(path, split, task_type)}
    if not kept:
        raise SourceDataError(f"{where}: no {task_type} records in any split ({', '.join(sources)})")
    return kept


def split_rows(filepath, split, task_type=None):
    """The rows of one split, of ``task_type`` only (all for None), one at a time, as the builder yields them."""
    return (row for row in iter_rows(filepath, split) if wanted(row, task_type))


def local_rows(sources, split, task_type, where, no_split):
    """The rows of ``split`` of the ``sources`` (``find_sources`` or ``file_sources``), as the builder yields them,
    without `datasets`; ``no_split`` (its ``{found}``: the splits there) when the split has no such record."""
    path = sources.get(split)
    if path is None or not holds_task_type(path, split, task_type):
        found = kept_sources(sources, task_type, where)
        raise ValueError(no_split.replace("{found}", ", ".join(found)))
    return list(split_rows(path, split, task_type))


def wanted(row, task_type):
    return task_type in (None, row["meta"]["task_type"])


def holds_task_type(filepath, split, task_type):
    """Whether the split holds a record of ``task_type`` (any, for None); one that does not is validated here."""
    if task_type is None:
        return True
    for _, record in read_split_records(filepath, split):
        meta = record.get("meta") if isinstance(record, dict) else None
        if isinstance(meta, dict) and meta.get("task_type") == task_type:
            return True
    read_rows(filepath, split)
    return False


def read_rows(filepath, split):
    """Every record of one split as a validated row; ids must be unique within the split."""
    return list(iter_rows(filepath, split))


def iter_rows(filepath, split):
    """``read_rows`` one row at a time."""
    seen, instructions = {}, {}
    for where, record in read_split_records(filepath, split):
        row = parse_record(filepath, where, record)
        # the records share a few instructions: one string per distinct one, which Arrow then encodes once
        row["instruction"] = instructions.setdefault(row["instruction"], row["instruction"])
        record_id = row["meta"]["id"]
        if record_id in seen:
            raise record_error(filepath, f"{where} (id {record_id})",
                               f"duplicate meta 'id' {record_id}: record {seen[record_id]} has it too")
        seen[record_id] = where
        yield row
    if not seen:
        raise record_error(filepath, "-", f"the {split} split holds no records")


def find_sources(data_dir):
    """``{split: path}`` for the split files present in ``data_dir`` (JSON Lines files or ``task.json``)."""
    data_dir = os.path.expanduser(str(data_dir))
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"{data_dir}: data_dir is not a folder")
    present = [name for name in SPLIT_FILES if os.path.isfile(os.path.join(data_dir, name))]
    task_file = os.path.join(data_dir, TASK_FILE)
    if os.path.isfile(task_file):
        if present:
            raise SourceDataError(f"{data_dir}: holds both {TASK_FILE} and {', '.join(present)}; keep one layout")
        return {split: task_file for split in _task_splits(task_file)}
    if not present:
        raise FileNotFoundError(f"{data_dir}: no LIMUR files found (expected {', '.join(SPLIT_FILES)} or {TASK_FILE})")
    if "dev.jsonl" in present and "validation.jsonl" in present:
        raise SourceDataError(f"{data_dir}: holds both dev.jsonl and validation.jsonl (both are the validation split)")
    return {SPLIT_FILES[name]: os.path.join(data_dir, name) for name in present}


def file_sources(path, name):
    """``{split: path}`` of one file read as if it were named ``name`` in a folder (``task.json``: its splits)."""
    path = str(path)
    if name == TASK_FILE:
        return {split: path for split in _task_splits(path)}
    return {SPLIT_FILES[name]: path}


def _task_splits(task_file):
    data = _load_task_file(task_file)
    splits = []
    for key in data:
        if key not in TASK_SPLITS:
            raise record_error(task_file, "-", f"unknown split {key!r} under 'data' (expected {', '.join(TASK_SPLITS)})")
        splits.append(TASK_SPLITS[key])
    if len(set(splits)) != len(splits):
        raise record_error(task_file, "-", "'data' holds both 'dev' and 'validation'")
    return splits


def _load_task_file(task_file):
    task = read_json(task_file)
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        raise record_error(task_file, "-", 'expected a MERA task file {"data": {split: [records]}}')
    return task["data"]


def read_split_records(filepath, split):
    """``(where, record)`` pairs of one split: ``where`` names the line (JSON Lines) or index (task.json)."""
    if os.path.basename(filepath) == TASK_FILE:
        yield from _task_records(filepath, split)
    else:
        yield from _jsonl_records(filepath)


def _task_records(filepath, split):
    data = _load_task_file(filepath)
    keys = [k for k in data if TASK_SPLITS.get(k) == split]
    if not keys:
        raise record_error(filepath, "-", f"no {split} split under 'data' (found {', '.join(data) or 'none'})")
    key = keys[0]
    records = data[key]
    if not isinstance(records, list):
        raise record_error(filepath, "-", f"'data'.{key!r} must be a list of records, got {type(records).__name__}")
    for index, record in enumerate(records):
        yield f"{key}[{index}]", record


def _jsonl_records(filepath):
    for number, record in read_jsonl(filepath):
        yield f"line {number}", record


def json_problem(err):
    """What the JSON parser objected to: a syntax error, an integer too long to convert, or too deep a nesting."""
    if isinstance(err, json.JSONDecodeError):
        return f"{err.msg}; line {err.lineno} column {err.colno}"
    if isinstance(err, RecursionError):
        return "nested too deeply"
    return str(err)[:200]


def parse_record(filepath, where, record):
    """One MERA record as a row, validated; every problem is a ``SourceDataError`` naming the record id."""
    if not isinstance(record, dict):
        raise record_error(filepath, where, f"expected an object, got {type(record).__name__}")
    meta = _parse_meta(filepath, where, record)
    where = f"{where} (id {meta['id']})"
    instruction = _string_field(filepath, where, record, "instruction")
    inputs = _parse_inputs(filepath, where, record)
    options = _options(filepath, where, inputs)
    label = _parse_answer(filepath, where, record, options)
    return {
        "instruction": instruction,
        "inputs": inputs,
        "outputs": record["outputs"],
        "meta": meta,
        "options": options,
        "prompt": _fill_prompt(filepath, where, instruction, inputs, len(options)),
        "label": label,
    }


def _parse_meta(filepath, where, record):
    meta = record.get("meta")
    if not isinstance(meta, dict):
        raise record_error(filepath, where, f"'meta' must be an object, got {meta!r}")
    record_id = meta.get("id")
    # here and below each message is formatted only on failure: formatting them for every record (a repr of
    # the inputs) was most of the build's time
    if not (type(record_id) is int and _INT32[0] <= record_id <= _INT32[1]):
        raise record_error(filepath, where, f"meta 'id' must be a 32-bit integer, got {record_id!r}")
    for key, allowed in (("task_type", TASK_TYPES), ("context_type", CONTEXT_TYPES)):
        if meta.get(key) not in allowed:
            raise record_error(filepath, f"{where} (id {record_id})",
                               f"meta {key!r} is {meta.get(key)!r}, expected one of {', '.join(allowed)}")
    return {"id": record_id, "task_type": meta["task_type"], "context_type": meta["context_type"]}


def _string_field(filepath, where, record, key):
    value = record.get(key)
    if not isinstance(value, str):
        raise record_error(filepath, where, f"{key!r} must be a string, got {value!r}")
    return value


def _parse_inputs(filepath, where, record):
    inputs = record.get("inputs")
    if not isinstance(inputs, dict):
        raise record_error(filepath, where, f"'inputs' must be an object, got {inputs!r}")
    if inputs.keys() != _INPUT_KEY_SET:
        missing = [key for key in INPUT_KEYS if key not in inputs]
        _expect(not missing, filepath, where, f"'inputs' lacks {', '.join(missing)}")
        extra = [key for key in inputs if key not in INPUT_KEYS]
        _expect(not extra, filepath, where, f"'inputs' has unknown key(s) {', '.join(extra)}")
    values = _INPUT_VALUES(inputs)
    if not all(map(isinstance, values, repeat(str))):
        key = next(key for key, value in zip(INPUT_KEYS, values) if not isinstance(value, str))
        raise record_error(filepath, where, f"inputs {key!r} must be a string, got {inputs[key]!r}")
    return dict(zip(INPUT_KEYS, values))


def _options(filepath, where, inputs):
    """The non-empty options, which must come first: no empty option before a non-empty one."""
    values = _OPTION_VALUES(inputs)
    filled = list(map(bool, map(str.strip, values)))
    count = sum(filled)
    _expect(count > 0, filepath, where, "all nine options are empty")
    if not all(filled[:count]):
        gap = filled.index(False)
        raise record_error(filepath, where, f"options are not contiguous: {OPTION_KEYS[gap]} ({LETTERS[gap]}) "
                                            "is empty but a later option is not")
    return list(values[:count])


def _parse_answer(filepath, where, record, options):
    """The answer's position (``label``); empty ``outputs`` (a closed test split) gives -1, ClassLabel's
    "no label". ``outputs`` itself is kept as the source has it."""
    answer = _string_field(filepath, where, record, "outputs").strip()
    if not answer:
        return -1
    if answer not in LETTERS:
        raise record_error(filepath, where, f"answer {answer!r} is not one of the letters {' '.join(LETTERS)}")
    position = LETTERS.index(answer)
    if position >= len(options):
        raise record_error(filepath, where, f"answer {answer!r} points at {OPTION_KEYS[position]}, which is empty "
                                            f"(options: {' '.join(LETTERS[:len(options)])})")
    return position


def _fill_prompt(filepath, where, instruction, inputs, count):
    """The prompt as MERA's harness builds it: ``instruction.format(**inputs).strip()``, after checking the
    placeholders, their letter labels and the answer-format letter list against the ``count`` non-empty options."""
    problem = _template_problem(instruction, count)
    if problem:
        raise record_error(filepath, where, problem)
    try:
        return instruction.format_map(inputs).strip()  # as format(**inputs), without copying inputs
    except (IndexError, KeyError, ValueError, AttributeError) as err:
        raise record_error(filepath, where, f"instruction cannot be filled ({err!r})") from None


class _TemplateError(ValueError):
    pass


@lru_cache(maxsize=1024)
def _template_problem(instruction, count):
    """What is wrong with ``instruction`` as the template of a record with ``count`` options, or None.

    Cached: a task's records share a few instructions."""
    try:
        _check_template(instruction, count)
    except _TemplateError as err:
        return str(err)
    return None


def _check_template(instruction, count):
    placeholders, literal = _template(instruction)
    unknown = sorted({name for name, _ in placeholders} - set(INPUT_KEYS))
    _require(not unknown, lambda: f"instruction has unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}")
    used = sorted({name for name, _ in placeholders if name in OPTION_KEYS})
    expected = OPTION_KEYS[:count]
    _require(used == expected, lambda: f"instruction has placeholders for {', '.join(used) or 'no option'} but the "
                                       f"non-empty options are {', '.join(expected)}")
    for name, before in placeholders:
        if name in OPTION_KEYS:
            _check_label(name, before)
    _check_letter_lists(literal, count)


def _template(instruction):
    """``([(placeholder, literal text since the previous placeholder)], all literal text)``."""
    try:
        parsed = list(string.Formatter().parse(instruction))
    except ValueError as err:
        raise _TemplateError(f"instruction is not a valid template ({err})") from None
    placeholders, before, literal = [], "", ""
    for text, name, spec, conversion in parsed:
        before, literal = before + text, literal + text
        if name is None:
            continue
        if spec or conversion is not None:
            written = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise _TemplateError(f"instruction placeholder {{{written}}} must be a plain {{{name}}}")
        placeholders.append((name, before))
        before = ""
    return placeholders, literal


# an option line's letter label, right before its placeholder: «Б. {option_b}» or «Б) {option_b}»
_LABEL = re.compile(r"(?:^|\n)[ \t]*([^\s.)]+)[.)][ \t]*$")
# the answer-format list of letters: «(А, Б, В, Г)»
_LETTER_LIST = re.compile(r"\(\s*([А-ЯЁ](?:\s*,\s*[А-ЯЁ])*)\s*\)")


def _check_label(name, before):
    letter = LETTERS[OPTION_KEYS.index(name)]
    match = _LABEL.search(before)
    _require(match is not None,
             lambda: f"instruction has no letter label before {{{name}}} (expected a line «{letter}. {{{name}}}»)")
    _require(match.group(1) == letter, lambda: f"instruction labels {{{name}}} as {match.group(1)!r}, expected {letter!r}")


def _check_letter_lists(literal, count):
    expected = ", ".join(LETTERS[:count])
    lists = [", ".join(re.split(r"\s*,\s*", found)) for found in _LETTER_LIST.findall(literal)]
    _require(lists, lambda: f"instruction lists no answer letters (expected «({expected})»)")
    wrong = [found for found in lists if found != expected]
    _require(not wrong, lambda: f"instruction lists the answer letters ({wrong[0]}) but the non-empty options are "
                                f"({expected})")


def _require(condition, problem):
    if not condition:
        raise _TemplateError(problem())


def _expect(condition, filepath, where, problem):
    if not condition:
        raise record_error(filepath, where, problem)
