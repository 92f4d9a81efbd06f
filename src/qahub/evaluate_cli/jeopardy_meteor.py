"""``qahub evaluate jeopardy_meteor``: score Russian QA Jeopardy! replies, matched to gold answers by question id.

References are read as the builder's rows and handed to the metric as they are: an upstream file (the
tab-separated ``Russian_QA_Jeopardy_dataset_extended.csv`` layout: ids and question numbers; or a
``QuestionText,Answer`` file: the id of a question is its 0-based row, as in the DeepPavlov baseline's answer
file) is built with the ``jeopardy`` builder; a folder is an export (``qahub export``, read with
``datasets.load_dataset``) or a folder of upstream files, with ``--config`` and ``--split``; JSON / JSONL
records with ``question_id`` (or ``id``), ``answer`` and optionally ``question_number`` (e.g. rows of the
``extended`` config) are read as rows.
Predictions: CSV with a header (``question_id``/``id``, ``prediction``/``answer``, optional ``confidence``),
a header-less ``id,answer`` CSV (the upstream ``deeppavlov_0_99_answers.csv``), JSON ``{id: reply}``, or
JSON / JSONL records with those keys. A prediction is a model's reply, read by the metric's reply parser: a
null or non-string one is counted unparseable and scored as an abstention; an empty one is an abstention.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import warnings
from pathlib import Path

HELP = "Russian QA Jeopardy!: METEOR correctness (official recipe), accuracy and the game score"

ID_KEYS = ("question_id", "id", "QuestionID")
ANSWER_KEYS = ("prediction", "answer", "Answer")


def add_arguments(parser):
    parser.add_argument("--predictions", required=True, help="predictions file (.csv, .json or .jsonl)")
    parser.add_argument("--references", required=True,
                        help="gold answers: an upstream .csv/.tsv file, .json or .jsonl rows, or a folder (an export "
                             "or upstream files, with --config and --split)")
    parser.add_argument("--config", choices=["extended", "qa"], help="config of a --references folder (default extended)")
    parser.add_argument("--split", help="split of a --references folder (default: validation, else train)")
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

    references = read_references(Path(args.references), args.config, args.split)
    predictions = read_predictions(Path(args.predictions))
    ids = match(predictions, references, args.predictions, args.references, args.missing)
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
    """The ids to score, in reference order; every prediction id must be a reference id."""
    unknown = [qid for qid in predictions if qid not in references]
    if unknown:
        raise ValueError(f"{pred_path}: {len(unknown)} prediction id(s) not in {ref_path}: {_some(unknown)}")
    absent = [qid for qid in references if qid not in predictions]
    if absent and missing == "error":
        raise ValueError(f"{pred_path}: no prediction for {len(absent)} question id(s) of {ref_path}: {_some(absent)}; "
                         "pass --missing skip (score the predicted ones) or --missing abstain (count them as abstentions)")
    if missing == "abstain":
        return list(references)
    if not predictions:
        raise ValueError(f"{pred_path}: no predictions")
    return [qid for qid in references if qid in predictions]


def read_references(path: Path, config=None, split=None) -> dict:
    """``{id: row}`` in file order; a row has ``answer``, and ``question_number`` when the source has one."""
    if path.is_dir():
        return _row_ids(path, _folder_rows(path, config, split))
    if path.suffix.lower() in (".json", ".jsonl"):
        return _reference_records(path, [(r, None) for r in _json_records(path)])
    return _row_ids(path, _upstream_rows(path))


def _upstream_rows(path):
    """The builder's rows of one upstream file, whatever its name: it is linked under the upstream name in a
    temporary folder and built there; errors name ``path``."""
    import tempfile

    from qahub import load
    from qahub.loaders import jeopardy

    config = _upstream_config(path)
    name, split = (jeopardy.EXTENDED, "train") if config == "extended" else (jeopardy.VALIDATION, "validation")
    with tempfile.TemporaryDirectory(prefix="qahub-jeopardy-") as tmp:
        link = Path(tmp, "data", name)
        link.parent.mkdir()
        link.symlink_to(path.resolve())
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                dataset = load("jeopardy", config, data_dir=link.parent, cache_dir=str(Path(tmp, "cache")),
                               present_splits_only=True)[split]
        except (ValueError, OSError) as err:
            raise type(err)(str(err).replace(str(link), str(path))) from None
        finally:
            for warning in caught:  # the builder's warnings (question numbers outside 1-5) name the user's file
                warnings.warn(str(warning.message).replace(str(link), str(path)), warning.category, stacklevel=2)
        return _columns(dataset)


def _upstream_config(path):
    with open(path, "rb") as f:  # the header line only: the builder reports a file that is not UTF-8
        first = f.readline(100_000).decode("utf-8", errors="replace").lstrip("\ufeff")
    if "QuestionID" in first:
        return "extended"
    if first.replace(" ", "").rstrip("\r\n").endswith("Answer"):
        return "qa"
    raise ValueError(f"{path}: not a Jeopardy! answer table (header {first[:200]!r} has neither QuestionID nor Answer)")


def _folder_rows(path, config, split):
    """Rows of an exported folder (``datasets.load_dataset``) or of a folder of upstream files (the builder)."""
    from qahub.loaders import jeopardy

    config = config or "extended"
    upstream = any((path / name).is_file() for name in (jeopardy.EXTENDED, jeopardy.TRAINING, jeopardy.VALIDATION))
    if upstream:
        from qahub import load

        splits = load("jeopardy", config, data_dir=path, present_splits_only=True)
    else:
        import datasets

        splits = datasets.load_dataset(str(path), config)
    split = split or next((name for name in ("validation", "train") if name in splits), None)
    if split not in splits:
        raise ValueError(f"{path}: config {config} has no split {split!r} (splits: {', '.join(splits)})")
    return _columns(splits[split])


def _columns(dataset):
    """The rows' fields the metric reads, as a list of dicts."""
    wanted = [name for name in ("question_id", "question_number", "answer") if name in dataset.column_names]
    return [dict(zip(wanted, values, strict=True)) for values in zip(*(dataset[n] for n in wanted), strict=True)]


def _row_ids(path, rows):
    """``{id: row}``: the id is ``question_id`` (``extended``) or the 0-based row (``qa``)."""
    out = {str(row.get("question_id", index)): row for index, row in enumerate(rows)}
    for qid, row in out.items():
        if not isinstance(row["answer"], str) or not row["answer"].strip():
            raise ValueError(f"{path}: question {qid}: the gold answer is missing or empty ({row['answer']!r})")
    return out


def _reference_records(path, records):
    """``records``: ``(record, line or None)`` pairs."""
    out = {}
    for index, (record, line) in enumerate(records):
        where = f"{path}: line {line}" if line else f"{path}: record {index}"
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
    """``{id: {"prediction": str | None, "confidence": float | None}}``."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = _load_json(path)
        if isinstance(data, dict):
            records = [{"question_id": key, "prediction": value} for key, value in data.items()]
        else:
            records = data
    elif suffix == ".jsonl":
        records = _json_records(path)
    else:
        records = _prediction_rows(path)
    return _prediction_records(path, records)


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


def _prediction_records(path, records):
    out = {}
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a list of prediction records or an {{id: answer}} object")
    for index, record in enumerate(records):
        where = f"{path}: record {index}"
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
    if path.suffix.lower() == ".json":
        data = _load_json(path)
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records")
        return data
    records = []
    for line_no, line in enumerate(read_text(path).split("\n"), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {line_no}: not valid JSON ({err.msg})") from None
    return records


def _load_json(path):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None


def _id(record, where):
    key = next((k for k in ID_KEYS if k in record), None)
    value = record.get(key) if key else None
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise ValueError(f"{where}: no question id (one of {ID_KEYS}), got {value!r}")
    return str(value).strip()


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
