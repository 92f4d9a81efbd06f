"""``qahub evaluate doc2dial``: the DialDoc21 shared-task scores of a prediction file.

Predictions use the shared task's format: a JSON list of ``{"id", "prediction_text", "no_answer_probability"}``
(subtask1) or ``{"id", "utterance"}`` (subtask2). References are a JSON list of ``{"id", "answers"}`` /
``{"id", "utterance"}``, or, with ``--split``, built from the release by the doc2dial builder as the official
scorer builds them. Every reference needs a prediction (a missing id is an error listing them); with
``--ignore-missing`` the references are restricted to the predicted ids, as the official scorer does, and the
output says how many were left out (``missing_ignored``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

HELP = "DialDoc21 shared-task scores on doc2dial: subtask1 grounding (SQuAD v2 EM/F1), subtask2 generation (sacreBLEU)"
_FIELDS = {
    "subtask1": {"predictions": ("id", "prediction_text", "no_answer_probability"), "references": ("id", "answers")},
    "subtask2": {"predictions": ("id", "utterance"), "references": ("id", "utterance")},
}


def add_arguments(parser):
    parser.add_argument("--task", choices=sorted(_FIELDS), required=True,
                        help="subtask1: grounding span of the next agent turn; subtask2: the next agent turn")
    parser.add_argument("--predictions", required=True, help="JSON list in the shared task's prediction format")
    refs = parser.add_mutually_exclusive_group(required=True)
    refs.add_argument("--references", help="JSON list of {id, answers} (subtask1) or {id, utterance} (subtask2)")
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


def run(args) -> dict:
    from qahub import registry

    predictions = read_records(Path(args.predictions), _FIELDS[args.task]["predictions"])
    if args.split:
        references = split_references(args)
        source = f"doc2dial {args.split} split"
    else:
        references = read_records(Path(args.references), _FIELDS[args.task]["references"])
        source = args.references
    extra = {}
    if args.ignore_missing:
        predicted = {p["id"] for p in predictions}
        kept = [r for r in references if r["id"] in predicted]
        extra["missing_ignored"] = len(references) - len(kept)
        references = kept
    metric = registry.load_metric("doc2dial", config_name=args.task)
    kwargs = {"no_answer_threshold": args.no_answer_threshold} if args.task == "subtask1" else {}
    try:
        scores = metric.compute(predictions=predictions, references=references, **kwargs)
    except ValueError as err:
        hint = " (--ignore-missing scores only the predicted ids)" if "references without a prediction" in str(err) else ""
        raise ValueError(f"scoring {args.predictions} against {source}: {err}{hint}") from None
    return {"task": args.task, "references": source, **extra, **scores}


def read_records(path: Path, fields) -> list[dict]:
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of objects with {', '.join(fields)}")
    for index, record in enumerate(records):
        _check_record(path, index, record, fields)
    return [{key: record[key] for key in fields} for record in records]


def _check_record(path, index, record, fields):
    where = f"{path}: record {index}"
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected an object, got {type(record).__name__}")
    where = f"{where} (id {record.get('id')!r})"
    missing = [key for key in fields if key not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    for key in ("id", "prediction_text", "utterance"):
        if key in fields and not isinstance(record[key], str):
            raise ValueError(f"{where}: {key!r} must be a string, got {record[key]!r}")
    if "no_answer_probability" in fields and not _is_finite(record["no_answer_probability"]):
        raise ValueError(f"{where}: 'no_answer_probability' must be a finite number, got {record['no_answer_probability']!r}")
    if "answers" in fields and not _is_answers(record["answers"]):
        raise ValueError(f"{where}: 'answers' must be {{\"text\": [str], \"answer_start\": [int]}} of equal lengths, "
                         f"got {record['answers']!r}")


def _is_finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_answers(value):
    return (isinstance(value, dict) and isinstance(value.get("text"), list) and isinstance(value.get("answer_start"), list)
            and all(isinstance(t, str) for t in value["text"]) and all(_is_int(s) for s in value["answer_start"])
            and len(value["text"]) == len(value["answer_start"]))


def split_references(args) -> list[dict]:
    """The split's references in dataset order (the order in which the official scorer collects them)."""
    import qahub

    config = "doc2dial_rc" if args.task == "subtask1" else "dialogue_domain"
    rows = qahub.load("doc2dial", config, data_dir=args.data_dir, cache_dir=args.cache_dir,
                      mirror_url=args.mirror_url)[args.split]
    if args.task == "subtask1":
        return [{"id": row["id"], "answers": row["answers"]} for row in rows]
    return [reference for row in rows for reference in agent_turn_references(row)]


def agent_turn_references(dialogue) -> list[dict]:
    """Each agent turn as a subtask 2 reference, its id ``{dial_id}_{turn_id - 1}`` (the official convention)."""
    return [
        {"id": f"{dialogue['dial_id']}_{turn['turn_id'] - 1}", "utterance": turn["utterance"]}
        for turn in dialogue["turns"]
        if turn["role"] == "agent"
    ]
