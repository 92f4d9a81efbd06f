"""``qahub evaluate doc2dial``: the DialDoc21 shared-task scores of a prediction file.

Predictions use the shared task's format: a JSON list of ``{"id", "prediction_text", "no_answer_probability"}``
(subtask1; ``no_answer_probability`` may be left out: 0.0) or ``{"id", "utterance"}`` (subtask2). A prediction's
text is a model's reply: ``null``, a non-string or a lone surrogate is counted as ``unparseable`` and scored as
empty, never an error. References are a JSON list of ``{"id", "answers"}`` / ``{"id", "utterance"}`` (or rows of
the ``doc2dial_rc`` / ``dialogue_domain`` configs), or, with ``--split``, the split's rows built from the release by
the doc2dial builder, passed to the metric as they are. Every reference needs a prediction (a missing id is an
error listing them); with ``--ignore-missing`` the references are restricted to the predicted ids, as the official
scorer does, and the output says how many were left out (``missing_ignored``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from qahub.files import loads_strict

# the one expansion of a dialogue_domain row into subtask 2 references: the metric's (also for older callers)
from qahub.metrics.doc2dial.dialogues import agent_turn_references, is_dialogue

HELP = "DialDoc21 shared-task scores on doc2dial: subtask1 grounding (SQuAD v2 EM/F1), subtask2 generation (sacreBLEU)"
_FIELDS = {
    "subtask1": {"predictions": ("id", "prediction_text"), "references": ("id", "answers")},
    "subtask2": {"predictions": ("id", "utterance"), "references": ("id", "utterance")},
}
_REPLY = {"subtask1": "prediction_text", "subtask2": "utterance"}


def add_arguments(parser):
    parser.add_argument("--task", choices=sorted(_FIELDS), required=True,
                        help="subtask1: grounding span of the next agent turn; subtask2: the next agent turn")
    parser.add_argument("--predictions", required=True, help="JSON list in the shared task's prediction format")
    refs = parser.add_mutually_exclusive_group(required=True)
    refs.add_argument("--references", help="JSON list of {id, answers} (subtask1) or {id, utterance} (subtask2), "
                                           "or rows of the doc2dial_rc / dialogue_domain configs")
    refs.add_argument("--split", choices=("train", "validation"),
                      help="build the references of this split of doc2dial v1.0.1")
    parser.add_argument("--data-dir", help="with --split: the unpacked release zip (doc2dial/v1.0.1/...) instead of downloading")
    parser.add_argument("--mirror-url", help="with --split: download the zip from <mirror>/doc2dial/ instead")
    parser.add_argument("--cache-dir", help="with --split: datasets cache folder")
    parser.add_argument("--ignore-missing", action="store_true",
                        help="score only the references that have a prediction (the official scorer's behaviour); "
                             "the output's missing_ignored counts the others. Default: a missing prediction is an error")
    parser.add_argument("--no-answer-threshold", type=float, default=1.0,
                        help="subtask1: predictions with a larger no_answer_probability count as empty (default 1.0)")
    parser.add_argument("--no-answer-text", default=None,
                        help="subtask1: a prediction_text that SQuAD-normalises to this text counts as empty "
                             "(the harness task's replies: --no-answer-text 'NO ANSWER'); default: none")


def run(args) -> dict:
    from qahub import registry

    predictions = read_records(Path(args.predictions), _FIELDS[args.task]["predictions"], _REPLY[args.task])
    if args.split:
        references = split_references(args)
        source = f"doc2dial {args.split} split"
    else:
        references = read_records(Path(args.references), (), None)
        source = args.references
    extra = {}
    if args.ignore_missing:
        expanded = per_turn_references(args.task, references)
        predicted = {p["id"] for p in predictions}
        references = [r for r in expanded if r["id"] in predicted]
        extra["missing_ignored"] = len(expanded) - len(references)
    metric = registry.load_metric("doc2dial", config_name=args.task)
    kwargs = {}
    if args.task == "subtask1":
        kwargs = {"no_answer_threshold": args.no_answer_threshold, "no_answer_text": getattr(args, "no_answer_text", None)}
    try:
        scores = metric.compute(predictions=predictions, references=references, **kwargs)
    except ValueError as err:
        hint = " (--ignore-missing scores only the predicted ids)" if "references without a prediction" in str(err) else ""
        raise ValueError(f"scoring {args.predictions} against {source}: {err}{hint}") from None
    return {"task": args.task, "references": source, **extra, **scores}


def read_records(path: Path, fields, reply) -> list:
    """The JSON list in ``path``; with ``fields``, each record must be an object with them (``reply`` may hold
    anything: the metric reads it); ``no_answer_probability``, when present, must be a finite number."""
    try:
        records = loads_strict(path.read_text(encoding="utf-8"), str(path))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of objects")
    for index, record in enumerate(records):
        if fields:
            _check_record(path, index, record, fields, reply)
    return records


def _check_record(path, index, record, fields, reply):
    where = f"{path}: record {index}"
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected an object, got {type(record).__name__}")
    where = f"{where} (id {record.get('id')!r})"
    missing = [key for key in fields if key not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    if not isinstance(record["id"], str):
        raise ValueError(f"{where}: 'id' must be a string, got {record['id']!r}")
    if "no_answer_probability" in record and not _is_finite(record["no_answer_probability"]):
        raise ValueError(f"{where}: 'no_answer_probability' must be a finite number, got {record['no_answer_probability']!r}")


def _is_finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def split_references(args):
    """The split's rows in dataset order (the order in which the official scorer collects the references):
    ``doc2dial_rc`` rows for subtask1, ``dialogue_domain`` rows for subtask2, as the metric takes them."""
    import qahub

    config = "doc2dial_rc" if args.task == "subtask1" else "dialogue_domain"
    return qahub.load("doc2dial", config, data_dir=args.data_dir, cache_dir=args.cache_dir,
                      mirror_url=args.mirror_url)[args.split]


def per_turn_references(task, references) -> list[dict]:
    """References one per id: subtask 2 dialogue rows expanded by the metric's own ``agent_turn_references``."""
    expanded = []
    for index, record in enumerate(references):
        if task == "subtask2" and is_dialogue(record):
            expanded += agent_turn_references(record, f"doc2dial: reference {index}")
        elif not isinstance(record, dict) or not isinstance(record.get("id"), str):
            raise ValueError(f"doc2dial: reference {index}: expected an object with a string 'id', got {record!r}"[:300])
        else:
            expanded.append(record)
    return expanded
