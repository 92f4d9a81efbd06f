"""``qahub evaluate jeopardy_meteor``: score Russian QA Jeopardy! replies, matched to gold answers by question id.

References are the builder's rows, handed to the metric as they are: ``--references`` an export (``qahub build --out``
or ``qahub.export.writer``: a folder, or a Hub dataset id, read with ``datasets.load_dataset``), or ``--data-dir`` a
folder of upstream files, built with ``qahub.load("jeopardy", config, data_dir=...)`` (both through
``qahub.export.reader``), with ``--config`` and ``--split``. Kept for compatibility: ``--references`` an upstream file
(the tab-separated ``Russian_QA_Jeopardy_dataset_extended.csv`` layout, or a ``QuestionText,Answer`` file whose
question ids are its 0-based rows) is read by the builder's own reader (``loaders/_jeopardy_tables.py``, no
``datasets`` import), a folder of upstream files is a ``--data-dir``, and
JSON / JSONL rows (``question_id``, ``answer``, optional ``question_number``) are read as rows.
Predictions: CSV with a header (``question_id``/``id``, ``prediction``/``answer``, optional ``confidence``),
a header-less ``id,answer`` CSV (the upstream ``deeppavlov_0_99_answers.csv``), JSON ``{id: reply}``, or
JSON / JSONL records with those keys. A prediction is a model's reply, read by the metric's reply parser: a
null or non-string one is counted unparseable and scored as an abstention; an empty one is an abstention.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from qahub.evaluate_cli import predictions
from qahub.evaluate_cli.adapter import Adapter
from qahub.export.reader import built_rows, export_rows

HELP = "Russian QA Jeopardy!: METEOR correctness (official recipe), accuracy and the game score"

ID_KEYS = ("question_id", "id", "QuestionID")
FIELDS = predictions.Fields(id=ID_KEYS, reply=("prediction", "answer", "Answer"), gold=("answer", "Answer"),
                            extra=("confidence",), corpus="jeopardy")
REFERENCE_FIELDS = predictions.Fields(id=ID_KEYS, reply=("answer", "Answer"))
SPLITS = ("validation", "train")  # the split read when none is named


class JeopardyMeteor(Adapter):
    metric, help, fields = "jeopardy_meteor", HELP, (FIELDS,)
    # NLTK's package __init__ imports scipy (scipy.stats, and scipy.sparse for its transition parser) and scikit-learn
    # whenever they are installed, for parts METEOR never calls (collocations' Fisher test, a classifier wrapper, a
    # dependency parser), and goes on without them (except ImportError): ~1.3 s and 70 MiB in all. spaCy's package
    # __init__ imports its download command, thus requests, which takes chardet when installed and charset_normalizer
    # otherwise, to guess the encoding of web pages: ~0.1 s of chardet's language models, never used here.
    unimportable = (*Adapter.unimportable, "scipy", "sklearn", "chardet")
    predictions_help = "predictions file (.csv, .json or .jsonl)"
    references = {"help": "gold answers: an export folder or Hub dataset id (qahub build --out), with --config and "
                          "--split; also an upstream .csv/.tsv file or .json/.jsonl rows"}
    data_dir = {"help": "folder of upstream files: the corpus is built from it (with --config, --split)"}
    config = {"choices": ["extended", "qa"], "help": "config of the references (default extended)"}
    split = {"help": "split of the references (default: validation, else train)"}

    def add_options(self, parser):
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
                            help="questions without a prediction: an error (default), left out, or scored as "
                                 "abstentions")
        parser.add_argument("--per-example", action="store_true", help="include per-question ids, METEOR and flags")

    def load_references(self, args):
        where = args.data_dir or args.references
        return read_references(where, args.config, args.split, build=bool(args.data_dir)), where

    def match(self, read, references, args, where):
        return match(read, references, where, args.missing, getattr(args, "by_position", False))

    def inputs(self, matched, read, references, args):
        return _inputs(matched, read, references, args)

    def result(self, result, args, where, matched, references):
        per_example = {key: result.pop(key) for key in PER_EXAMPLE}
        result["num_references_without_prediction"] = len(references) - sum(record is not None for _, record in matched)
        result["missing"] = args.missing
        if args.per_example:
            result["examples"] = [
                {"question_id": qid, **{name: values[i] for name, values in zip(EXAMPLE_FIELDS, per_example.values(),
                                                                                 strict=True)}}
                for i, (qid, _) in enumerate(matched)
            ]
        return result

    def scorer_settings(self, args, result):
        """The task's METEOR settings (task_api.configuration) with this command's tokenizer, order, threshold."""
        from qahub.metrics.jeopardy_meteor import task_api

        return task_api.configuration(args.tokenizer, args.order, args.threshold)


PER_EXAMPLE = ("meteor_per_example", "correct", "abstained", "status", "answers")
EXAMPLE_FIELDS = ("meteor", "correct", "abstained", "status", "answer")


def _inputs(pairs, read, references, args):
    """``compute``'s keyword arguments: the chosen replies (and confidences) and their reference rows."""
    no_prediction = {"prediction": "", "confidence": None}  # --missing abstain: an empty reply abstains
    chosen = [_prediction(record, read, qid) if record is not None else no_prediction for qid, record in pairs]
    ids = [qid for qid, _ in pairs]
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


def _prediction(record, read, qid):
    """A record's reply (any value: the metric's reply parser counts what is not text as unparseable) and its
    confidence."""
    where = f"{read.path}: record {read.where[qid]}" if qid in read.where else str(read.path)
    return {"prediction": predictions.reply_of(record, FIELDS), "confidence": _confidence(record.get("confidence"), where)}


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


def match(read, references, ref_path, missing="error", by_position=False):
    """``[(id, prediction record or None)]`` in reference order, matched by question id; every prediction id must
    be a reference id, and at least one question must have a prediction (else nothing was predicted: no score,
    not 0.0). ``missing``: a question without a prediction is an error, left out (skip) or kept (abstain)."""
    if not references:
        raise ValueError(f"{ref_path}: no references (the split has no rows): nothing to score")
    hint = ("; pass --missing skip (score the predicted ones) or --missing abstain (count them as abstentions)")
    pairs = predictions.matched(read, list(references), by_position=by_position,
                                missing="error" if missing == "error" else "keep", missing_hint=hint,
                                references=str(ref_path))
    return [(qid, record) for qid, record in pairs if record is not None or missing == "abstain"]


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
        return _reference_records(path)
    return _row_ids(path, _upstream_rows(path))


def _upstream_folder(path):
    from qahub.loaders import _jeopardy_tables as jeopardy_tables  # not at the top: --help reads no file

    return path.is_dir() and any((path / name).is_file() for name in (jeopardy_tables.EXTENDED,
                                                                        jeopardy_tables.TRAINING,
                                                                        jeopardy_tables.VALIDATION))


def _built_rows(folder, config, split):
    """The rows of one split, built by the builder from a folder of upstream files (only the files there)."""
    from qahub.loaders import jeopardy

    wanted = jeopardy.SOURCE.files[config].get(split)
    needs = f"needs {wanted}, which is not there" if wanted else "is not a split of this config"
    no_split = f"{folder}: config {config} split {split!r} {needs} (splits built from the folder: {{found}})"
    return _columns(built_rows("jeopardy", config, split or SPLITS, folder, present_splits_only=True,
                               no_split=no_split if split else None))


def _upstream_rows(path):
    """The rows of one upstream file, whatever its name, read as the builder reads the upstream file of its config
    (by the same reader, without building a dataset)."""
    from qahub.loaders import _jeopardy_tables as jeopardy_tables

    return _columns(jeopardy_tables.rows(path, _upstream_config(path)))


def _upstream_config(path):
    with open(path, "rb") as f:  # the header line only: the reader reports a file that is not UTF-8
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
    """``{id: row}`` by ``question_id`` (in ``qa`` the question's 0-based row in its upstream file)."""
    out = {str(row["question_id"]): row for row in rows}
    for qid, row in out.items():
        if not isinstance(row["answer"], str) or not row["answer"].strip():
            raise ValueError(f"{path}: question {qid}: the gold answer is missing or empty ({row['answer']!r})")
    return out


def _reference_records(path):
    """The rows of a JSON / JSON Lines file of reference records, read as predictions files are."""
    rows = predictions.read_references(path, REFERENCE_FIELDS, "a question id")
    out = {}
    for qid, record in rows.records.items():
        where = f"{path}: record {rows.where[qid]}"
        answer = predictions.reply_of(record, REFERENCE_FIELDS)
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(f"{where}: question {qid}: the gold answer is missing or empty ({answer!r})")
        if not predictions.is_text(answer):
            raise ValueError(f"{where}: question {qid}: the gold answer holds a lone surrogate, which is not text")
        out[qid] = {"question_id": qid, "answer": answer}
        number = record.get("question_number", record.get("QuestionNumber"))
        if number is not None:
            out[qid]["question_number"] = _integer(number, where)
    return out


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


ADAPTER = JeopardyMeteor()
add_arguments, run = ADAPTER.add_arguments, ADAPTER.run
