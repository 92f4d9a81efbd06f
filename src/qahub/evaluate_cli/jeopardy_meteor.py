"""``qahub evaluate jeopardy_meteor``: score Russian QA Jeopardy! replies, matched to gold answers by question id.

References are the builder's rows, handed to the metric as they are: ``--references`` an export (``qahub build --out``
or ``qahub.export``: a folder, or a Hub dataset id, read with ``datasets.load_dataset``), or ``--data-dir`` a
folder of upstream files, built with ``qahub.load("jeopardy", config, data_dir=...)`` (both through
``references.py``), with ``--config`` and ``--split``. Kept for compatibility: ``--references`` an upstream file
(the tab-separated ``Russian_QA_Jeopardy_dataset_extended.csv`` layout, or a ``QuestionText,Answer`` file whose
question ids are its 0-based rows) is built with the builder, a folder of upstream files is a ``--data-dir``, and
JSON / JSONL rows (``question_id``, ``answer``, optional ``question_number``) are read as rows.
Predictions: CSV with a header (``question_id``/``id``, ``prediction``/``answer``, optional ``confidence``),
a header-less ``id,answer`` CSV (the upstream ``deeppavlov_0_99_answers.csv``), JSON ``{id: reply}``, or
JSON / JSONL records with those keys. A prediction is a model's reply, read by the metric's reply parser: a
null or non-string one is counted unparseable and scored as an abstention; an empty one is an abstention.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
from pathlib import Path

from qahub.evaluate_cli.references import built_file_rows, built_rows, export_rows
from qahub.files import loads_strict

HELP = "Russian QA Jeopardy!: METEOR correctness (official recipe), accuracy and the game score"

ID_KEYS = ("question_id", "id", "QuestionID")
ANSWER_KEYS = ("prediction", "answer", "Answer")
SPLITS = ("validation", "train")  # the split read when none is named


def add_arguments(parser):
    parser.add_argument("--predictions", required=True, help="predictions file (.csv, .json or .jsonl)")
    refs = parser.add_mutually_exclusive_group(required=True)
    refs.add_argument("--references",
                      help="gold answers: an export folder or Hub dataset id (qahub build --out), with --config and "
                           "--split; also an upstream .csv/.tsv file or .json/.jsonl rows")
    refs.add_argument("--data-dir", help="folder of upstream files: the corpus is built from it (with --config, --split)")
    parser.add_argument("--config", choices=["extended", "qa"], help="config of the references (default extended)")
    parser.add_argument("--split", help="split of the references (default: validation, else train)")
    parser.add_argument("--order", choices=["official", "standard"], default="official",
                        help="official: meteor_score([prediction], gold) as the notebook; standard: the reverse")
    parser.add_argument("--threshold", type=finite_float, default=0.227743,
                        help="METEOR above which an answer is correct")
    parser.add_argument("--confidence-threshold", type=finite_float,
                        help="abstain on predictions whose confidence is below this")
    parser.add_argument("--value-multiplier", type=positive_float, default=1,
                        help="question value = question number x this (10 for TV-style 10-50 points)")
    parser.add_argument("--tokenizer", choices=["auto", "spacy", "regex"], default="auto",
                        help="auto: spaCy's Russian tokenizer when spaCy is installed, else the regex imitation")
    parser.add_argument("--missing", choices=["error", "skip", "abstain"], default="error",
                        help="questions without a prediction: an error (default), left out, or scored as abstentions")
    parser.add_argument("--per-example", action="store_true", help="include per-question ids, METEOR and flags")


def run(args) -> dict:
    from qahub import registry

    where = args.data_dir or args.references
    references = read_references(where, args.config, args.split, build=bool(args.data_dir))
    predictions = read_predictions(Path(args.predictions))
    ids = match(predictions, references, args.predictions, where, args.missing)
    inputs = _inputs(ids, predictions, references, args)
    result = registry.load_metric("jeopardy_meteor").compute(**inputs)
    per_example = {key: result.pop(key) for key in PER_EXAMPLE}
    result["num_references_without_prediction"] = len(references) - len(predictions)
    result["missing"] = args.missing
    if args.per_example:
        result["examples"] = [
            {"question_id": qid, **{name: values[i] for name, values in zip(EXAMPLE_FIELDS, per_example.values(),
                                                                             strict=True)}}
            for i, qid in enumerate(ids)
        ]
    return result


PER_EXAMPLE = ("meteor_per_example", "correct", "abstained", "status", "answers")
EXAMPLE_FIELDS = ("meteor", "correct", "abstained", "status", "answer")


def _inputs(ids, predictions, references, args):
    no_prediction = {"prediction": "", "confidence": None}  # --missing abstain: an empty reply abstains
    chosen = [predictions.get(qid, no_prediction) for qid in ids]
    rows = [references[qid] for qid in ids]
    if not all("question_number" in row for row in rows):  # a game score only when every question has a value
        rows = [{key: value for key, value in row.items() if key != "question_number"} for row in rows]
    inputs = {
        "predictions": [p["prediction"] for p in chosen],
        "references": rows,
        "order": args.order,
        "threshold": args.threshold,
        "value_multiplier": _number(args.value_multiplier),
        "tokenizer": args.tokenizer,
    }
    if args.confidence_threshold is not None:
        missing = [qid for qid, p in zip(ids, chosen, strict=True) if p["confidence"] is None and p["prediction"]]
        if missing:
            raise ValueError(f"{args.predictions}: --confidence-threshold needs a confidence for every prediction; "
                             f"none for id(s) {_some(missing)}")
        inputs["confidences"] = [p["confidence"] if p["confidence"] is not None else 0.0 for p in chosen]
        inputs["confidence_threshold"] = args.confidence_threshold
    return inputs


def finite_float(text):
    """argparse type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def positive_float(text):
    """argparse type: a finite number above 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


def match(predictions, references, pred_path, ref_path, missing="error"):
    """The ids to score, in reference order; every prediction id must be a reference id, and at least one
    question must have a prediction (else nothing was predicted: no score, not 0.0)."""
    if not references:
        raise ValueError(f"{ref_path}: no references (the split has no rows): nothing to score")
    if not predictions:
        raise ValueError(f"{pred_path}: no predictions in the file: nothing was predicted, so nothing is scored")
    unknown = [qid for qid in predictions if qid not in references]
    if unknown:
        raise ValueError(f"{pred_path}: {len(unknown)} prediction id(s) not in {ref_path}: {_some(unknown)}")
    absent = [qid for qid in references if qid not in predictions]
    if absent and missing == "error":
        raise ValueError(f"{pred_path}: no prediction for {len(absent)} question id(s) of {ref_path}: {_some(absent)}; "
                         "pass --missing skip (score the predicted ones) or --missing abstain (count them as abstentions)")
    if missing == "abstain":
        return list(references)
    return [qid for qid in references if qid in predictions]


def read_references(location, config=None, split=None, build=False) -> dict:
    """``{id: row}`` in row order; a row has ``answer``, and ``question_number`` in the ``extended`` config.
    ``build``: ``location`` is a folder of upstream files to build; else an export (folder or Hub id), an
    upstream file, or JSON / JSONL rows."""
    path, config = Path(location), config or "extended"
    if build or _upstream_folder(path):
        return _row_ids(path, _built_rows(path, config, split))
    if not path.is_file():
        return _row_ids(path, _columns(export_rows(str(location), config, split or SPLITS, corpus="jeopardy")))
    if path.suffix.lower() in (".json", ".jsonl"):
        return _reference_records(path, _json_records(path))
    return _row_ids(path, _upstream_rows(path))


def _upstream_folder(path):
    from qahub.loaders import jeopardy

    return path.is_dir() and any((path / name).is_file() for name in (jeopardy.EXTENDED, jeopardy.TRAINING,
                                                                        jeopardy.VALIDATION))


def _built_rows(folder, config, split):
    """The rows of one split, built by the builder from a folder of upstream files (only the files there)."""
    from qahub.loaders import jeopardy

    wanted = jeopardy.SOURCE.files[config].get(split)
    needs = f"needs {wanted}, which is not there" if wanted else "is not a split of this config"
    no_split = f"{folder}: config {config} split {split!r} {needs} (splits built from the folder: {{found}})"
    return _columns(built_rows("jeopardy", config, split or SPLITS, folder, present_splits_only=True,
                               no_split=no_split if split else None))


def _upstream_rows(path):
    """The builder's rows of one upstream file, whatever its name: built as the upstream file of its config."""
    from qahub.loaders import jeopardy

    config = _upstream_config(path)
    name, split = (jeopardy.EXTENDED, "train") if config == "extended" else (jeopardy.VALIDATION, "validation")
    return _columns(built_file_rows("jeopardy", config, split, path, name, present_splits_only=True))


def _upstream_config(path):
    with open(path, "rb") as f:  # the header line only: the builder reports a file that is not UTF-8
        first = f.readline(100_000).decode("utf-8", errors="replace").lstrip("\ufeff")
    if "QuestionID" in first:
        return "extended"
    if first.replace(" ", "").rstrip("\r\n").endswith("Answer"):
        return "qa"
    raise ValueError(f"{path}: not a Jeopardy! answer table (header {first[:200]!r} has neither QuestionID nor Answer)")


def _columns(rows):
    """The rows' fields the metric reads."""
    return [{key: row[key] for key in ("question_id", "question_number", "answer") if key in row} for row in rows]


def _row_ids(path, rows):
    """``{id: row}``: the id is ``question_id`` (``extended``) or the 0-based row (``qa``)."""
    out = {str(row.get("question_id", index)): row for index, row in enumerate(rows)}
    for qid, row in out.items():
        if not isinstance(row["answer"], str) or not row["answer"].strip():
            raise ValueError(f"{path}: question {qid}: the gold answer is missing or empty ({row['answer']!r})")
    return out


def _reference_records(path, records):
    """``records``: ``(where, record)`` pairs."""
    out = {}
    for where, record in records:
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected an object, got {record!r}")
        qid = _id(record, where)
        answer = record.get("answer", record.get("Answer"))
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(f"{where}: question {qid}: the gold answer is missing or empty ({answer!r})")
        if qid in out:
            raise ValueError(f"{where}: duplicate question id {qid}")
        number = record.get("question_number", record.get("QuestionNumber"))
        out[qid] = {"question_id": qid, "answer": answer}
        if number is not None:
            out[qid]["question_number"] = _integer(number, where)
    return out


def read_predictions(path: Path) -> dict:
    """``{id: {"prediction": any JSON value, "confidence": float | None}}``."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = _load_json(path)
        if isinstance(data, dict):
            return _prediction_records([(f"{path}: id {key!r}", {"question_id": key, "prediction": value})
                                        for key, value in data.items()])
        return _prediction_records(_listed(path, data, "a list of prediction records or an {id: answer} object"))
    if suffix == ".jsonl":
        return _prediction_records(_json_lines(path))
    return _prediction_records([(f"{path}: record {i}", row) for i, row in enumerate(_prediction_rows(path))])


def _prediction_rows(path):
    rows = _csv_rows(path)
    if rows and any(key in rows[0][1] for key in ID_KEYS):
        header = rows[0][1]
        for line, row in rows[1:]:
            if len(row) != len(header):
                raise ValueError(f"{path}: line {line}: expected {len(header)} columns ({header}), got {row!r}")
        return [dict(zip(header, row, strict=True)) for _, row in rows[1:]]
    for line, row in rows:  # header-less id,answer
        if len(row) != 2:
            raise ValueError(f"{path}: line {line}: expected id,answer, got {row!r}")
    return [{"question_id": row[0], "prediction": row[1]} for _, row in rows]


def _prediction_records(records):
    """``records``: ``(where, record)`` pairs."""
    out = {}
    for where, record in records:
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected an object, got {record!r}")
        qid = _id(record, where)
        key = next((k for k in ANSWER_KEYS if k in record), None)
        if key is None:
            raise ValueError(f"{where}: question {qid}: no prediction (one of {ANSWER_KEYS})")
        prediction = record[key]  # any value: the metric's reply parser counts what is not text as unparseable
        if qid in out:
            raise ValueError(f"{where}: duplicate prediction for question id {qid}")
        out[qid] = {"prediction": prediction, "confidence": _confidence(record.get("confidence"), where)}
    return out


def _csv_rows(path):
    """``[(line, row)]`` of the non-blank rows; strict quoting; tab-separated when the first line has a tab."""
    text = read_text(path)
    first = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if "\t" in first else ",", strict=True)
    rows, start = [], 1
    try:
        for row in reader:
            if row:
                rows.append((start, row))
            start = reader.line_num + 1
    except csv.Error as err:
        raise ValueError(f"{path}: line {start}: malformed CSV ({err})") from None
    return rows


def read_text(path):
    """The file as text (UTF-8, an optional BOM); not UTF-8 is an error naming the line."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}: line {line}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def _json_records(path):
    """``(where, record)`` of a JSON list or of each line of a JSONL file."""
    if path.suffix.lower() == ".json":
        return _listed(path, _load_json(path), "a JSON list of records")
    return _json_lines(path)


def _listed(path, data, expected):
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected {expected}, got {type(data).__name__}")
    return [(f"{path}: record {index}", record) for index, record in enumerate(data)]


def _json_lines(path):
    records = []
    for line_no, line in enumerate(read_text(path).split("\n"), 1):
        if line.strip():
            records.append((f"{path}: line {line_no}", _strict_json(line, f"{path}: line {line_no}")))
    return records


def _load_json(path):
    return _strict_json(read_text(path), str(path))


def _strict_json(text, where):
    """JSON with duplicate keys an error naming the key."""
    import json

    try:
        return loads_strict(text, where)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not valid JSON ({err.msg} at line {err.lineno})") from None


def _id(record, where):
    key = next((k for k in ID_KEYS if k in record), None)
    value = record.get(key) if key else None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise ValueError(f"{where}: no question id (one of {ID_KEYS}), got {value!r}")
    qid = str(value).strip()
    if not qid.isascii() and not _is_text(qid):
        raise ValueError(f"{where}: the question id {qid!r} is not Unicode text (a lone surrogate)")
    return qid


def _is_text(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _integer(value, where):
    """An integer, or an integral number such as 2.0 / "2.0"; anything else (2.5, nan, inf, "x") is an error."""
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            return value
        number = float(value)
        if not number.is_integer():
            raise ValueError
        return int(number)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{where}: question number must be an integer, got {value!r}") from None


def _confidence(value, where):
    if value is None or value == "":
        return None
    try:
        number = float(value)
        if isinstance(value, bool) or number != number:
            raise ValueError
        return number
    except (TypeError, ValueError):
        raise ValueError(f"{where}: confidence must be a number, got {value!r}") from None


def _number(value):
    return int(value) if float(value).is_integer() else value


def _some(ids, limit=5):
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f" ... ({len(ids)} in all)" if len(ids) > limit else "")
