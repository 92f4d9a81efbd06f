"""JEMHopQA's upstream files and their rows, without `datasets`: read once here, for the builder beside it
(``jemhopqa.py``, which yields these rows) and for ``qahub evaluate jemhopqa --data-dir`` and an upstream file
given to ``--references``, which score against them without importing `datasets`, pandas or pyarrow."""

import re

from qahub.readers import is_str_list, read_json, record_error, source_file

# upstream file of each split, per version
FILES = {
    "v1.0": {"train": "corpus/train.json", "validation": "corpus/dev.json"},
    "v1.1": {"train": "corpus_ver1.1/train_ver1.1.json", "validation": "corpus_ver1.1/dev_ver1.1.json"},
    "v1.2": {"train": "corpus_ver1.2/train_ver1.2.json", "validation": "corpus_ver1.2/dev_ver1.2.json"},
}
TYPES = ["compositional", "comparison"]
_SURROGATE = re.compile("[\ud800-\udfff]")
_KEYS = ("qid", "type", "question", "answer", "derivations", "page_ids", "time_dependent")


def local_file(data_dir, config: str, split: str) -> str:
    """The upstream file of ``config``'s ``split`` in a local copy (the builder's ``data_dir`` layout)."""
    return source_file(data_dir, FILES[config][split])


def read_rows(filepath):
    """The rows of one upstream file, in their stored form (``type`` as its ClassLabel number)."""
    for index, record in enumerate(_read_records(filepath)):
        yield parse_record(filepath, index, record)


def _read_records(filepath):
    records = read_json(filepath)
    if not isinstance(records, list):
        raise record_error(filepath, "-", f"expected a JSON list of questions, got {type(records).__name__}")
    if not records:
        raise record_error(filepath, "-", "no questions (an empty list)")
    return records


def parse_record(filepath, index, record):
    if not isinstance(record, dict):
        raise record_error(filepath, index, f"expected an object, got {type(record).__name__}")
    where = f"{index} (qid {record.get('qid')!r})"
    missing = [key for key in _KEYS if key not in record]
    if missing:
        raise record_error(filepath, where, f"missing key(s) {', '.join(missing)}")
    # each message is formatted only on failure: a repr of every record would be most of the build's time
    for key in ("qid", "question", "answer"):
        if not isinstance(record[key], str):
            raise record_error(filepath, where, f"{key!r} must be a string, got {record[key]!r}")
    if record["type"] not in TYPES:
        raise record_error(filepath, where, f"unknown type {record['type']!r} (expected one of {TYPES})")
    if not isinstance(record["time_dependent"], bool):
        raise record_error(filepath, where, f"'time_dependent' must be true or false, got {record['time_dependent']!r}")
    if not is_str_list(record["page_ids"]):
        raise record_error(filepath, where, f"'page_ids' must be a list of strings, got {record['page_ids']!r}")
    row = {
        "qid": record["qid"],
        "type": TYPES.index(record["type"]),
        "question": record["question"],
        "answer": record["answer"],
        "derivations": [_parse_step(filepath, where, step) for step in _derivation_list(filepath, where, record)],
        "page_ids": record["page_ids"],
        "time_dependent": record["time_dependent"],
    }
    _check_texts(filepath, where, row)
    return row


def _check_texts(filepath, where, row):
    """Lone surrogates (JSON allows "\\ud800") are not Unicode text: Arrow cannot store them."""
    texts = [row["qid"], row["question"], row["answer"], *row["page_ids"]]
    for step in row["derivations"]:
        texts += [step["subject"], step["relation"], *step["objects"]]
    if not _SURROGATE.search("".join(texts)):
        return
    text = next(text for text in texts if _SURROGATE.search(text))
    raise record_error(filepath, where, f"{text[:60]!r} holds a lone surrogate (not valid Unicode)")


def _derivation_list(filepath, where, record):
    steps = record["derivations"]
    if not isinstance(steps, list):
        raise record_error(filepath, where, f"'derivations' must be a list, got {steps!r}")
    return steps


def _parse_step(filepath, where, step):
    ok = isinstance(step, list) and len(step) == 3 and isinstance(step[0], str) and isinstance(step[1], str)
    if not ok:
        raise record_error(filepath, where, f"derivation step {step!r} must be [subject, relation, [objects...]]")
    if not is_str_list(step[2]):
        raise record_error(filepath, where, f"objects of derivation step {step!r} must be a list of strings")
    return {"subject": step[0], "relation": step[1], "objects": step[2]}
