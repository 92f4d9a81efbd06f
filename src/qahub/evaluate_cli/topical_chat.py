"""``qahub evaluate topical_chat``: responses generated for Topical-Chat turns against the human turns."""

from __future__ import annotations

import json

from qahub import registry
from qahub.files import loads_strict
from qahub.loaders.topical_chat import read_conversations, read_reading_sets

HELP = "Topical-Chat responses: unigram F1, BLEU-4 (sacrebleu), distinct-1/2 and knowledge F1"


class PredictionsError(ValueError):
    pass


def add_arguments(parser):
    parser.add_argument("--predictions", required=True,
                        help='JSON list of {"conversation_id": str, "turn_index": int (0-based, 1 or more), "response": str}')
    parser.add_argument("--references", required=True,
                        help="upstream conversations file: conversations/<split>.json "
                             "(or TopicalChatASR/actual/<split>_audio.json)")
    parser.add_argument("--reading-sets", dest="reading_sets",
                        help="reading sets of the same split, for knowledge F1: reading_sets/post-build/<split>.json, "
                             "or reading_sets/pre-build/<split>.json with --wiki (lead sections only)")
    parser.add_argument("--wiki", help="src/wiki/wiki.json, to read a pre-build --reading-sets file")
    parser.add_argument("--per-example", dest="per_example", action="store_true",
                        help="also list the scores of each prediction")


def run(args) -> dict:
    """Read the upstream files with the builder's readers and pass the rows to the metric."""
    records = read_predictions(args.predictions)
    conversations = list(read_conversations(args.references, asr=None))
    reading = None
    if getattr(args, "reading_sets", None):
        reading = list(read_reading_sets(args.reading_sets, getattr(args, "wiki", None)))
    metric = registry.load_metric("topical_chat")
    try:
        result = metric.compute(predictions=records, references=conversations, reading_sets=reading,
                                per_example=getattr(args, "per_example", False))
    except ValueError as err:
        raise PredictionsError(f"{args.predictions} against {args.references}: {err}") from None
    return {"predictions": str(args.predictions), "references": str(args.references), **result}


def read_predictions(path):
    """The prediction records ``{conversation_id, turn_index, response}``; every problem names the record. A
    response that is not a string is kept: the metric counts it as unparseable."""
    with open(path, encoding="utf-8") as f:
        try:
            records = loads_strict(f.read(), str(path))
        except UnicodeDecodeError as err:
            raise PredictionsError(f"{path}: not valid UTF-8 (byte {err.object[err.start]:#04x} at offset "
                                   f"{err.start}: {err.reason})") from None
        except json.JSONDecodeError as err:
            raise PredictionsError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(records, list):
        raise PredictionsError(f"{path}: expected a JSON list of predictions, got {type(records).__name__}")
    predictions, seen = [], set()
    for index, record in enumerate(records):
        key = _check_prediction(path, index, record)
        if key in seen:
            raise PredictionsError(f"{path}: record {index}: a second prediction for turn {key[1]} of {key[0]!r}")
        seen.add(key)
        predictions.append(record)
    return predictions


def _check_prediction(path, index, record):
    ok = (isinstance(record, dict) and isinstance(record.get("conversation_id"), str)
          and isinstance(record.get("turn_index"), int) and not isinstance(record.get("turn_index"), bool)
          and "response" in record)
    if not ok:
        raise PredictionsError(f"{path}: record {index}: expected {{\"conversation_id\": str, \"turn_index\": int, "
                               f"\"response\": str}}, got {record!r}")
    return record["conversation_id"], record["turn_index"]
