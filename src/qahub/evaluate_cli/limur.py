"""``qahub evaluate limur``: exact match and (optionally) the LLM judge score of predictions on LIMUR."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from qahub import registry
from qahub.files import loads_strict
from qahub.loaders.limur import (
    TASK_FILE,
    TASK_SPLITS,
    find_sources,
    json_problem,
    read_rows,
)

HELP = "LIMUR: exact match of the answer letter (strict, lenient, MERA's recipe) and an optional LLM judge score"


class PredictionsError(ValueError):
    """The predictions file cannot be matched to the references."""


def exit_status(result) -> int:
    """1 when a judge was asked for and some of its calls failed: the judge score is then incomplete."""
    judge = result.get("judge", {})
    failed = judge.get("failed", 0) if judge.get("computed", True) else 0
    if failed:
        print(f"qahub evaluate limur: {failed} example(s) could not be judged (counted 0 in judge_score; "
              "judge_score_judged covers the judged examples only)", file=sys.stderr)
    return 1 if failed else 0


def add_arguments(parser):
    parser.add_argument("--predictions", required=True,
                        help="JSON {id: reply}, a JSON list / JSON Lines of {id or meta.id, outputs}, "
                             'or a MERA submission {"data": {split: [...]}}')
    parser.add_argument("--references", required=True,
                        help=f"a LIMUR split file (*.jsonl), a {TASK_FILE}, or a data_dir holding them")
    parser.add_argument("--split", default="test",
                        help="split to score when --references is a folder or task.json (default: test)")
    parser.add_argument("--task-type", choices=["rwsd", "kusdra"], help="score only this task type")
    parser.add_argument("--judge-url", help="OpenAI-compatible endpoint (default $QAHUB_JUDGE_URL)")
    parser.add_argument("--judge-model", help="judge model name (default $QAHUB_JUDGE_MODEL)")
    parser.add_argument("--judge-prompt", choices=["seed", "mera"], default="seed",
                        help="seed: qahub's prompt, grades 1/0.5/0; mera: MERA's prompt, grades 0/1/2 divided by 2")
    parser.add_argument("--judge-api-key-env", default="QAHUB_JUDGE_API_KEY",
                        help="name of the environment variable holding the API key (never pass the key itself)")
    parser.add_argument("--judge-allow-insecure-http", action="store_true",
                        help="allow sending the API key over plain http to a host that is not loopback")
    parser.add_argument("--judge-concurrency", type=int, default=4)
    parser.add_argument("--judge-timeout", type=float, default=60.0, help="seconds a request")
    parser.add_argument("--judge-retries", type=int, default=3)
    parser.add_argument("--judge-backoff", type=float, default=1.0, help="first retry wait in seconds, doubling")
    parser.add_argument("--judge-cache", help="JSON Lines file of judge replies, read and updated")


def run(args) -> dict:
    references = load_references(args.references, args.split, args.task_type)
    by_id = load_predictions(args.predictions, args.split)
    predictions = match(args.predictions, by_id, references, allow_extra=bool(args.task_type))
    metric = registry.load_metric("limur")
    result = metric.compute(
        predictions=predictions,
        references=references,
        judge_url=args.judge_url,
        judge_model=args.judge_model,
        judge_prompt=getattr(args, "judge_prompt", "seed"),
        judge_api_key=os.environ.get(args.judge_api_key_env),
        judge_allow_insecure_http=args.judge_allow_insecure_http,
        judge_concurrency=args.judge_concurrency,
        judge_timeout=args.judge_timeout,
        judge_retries=args.judge_retries,
        judge_backoff=args.judge_backoff,
        judge_cache_file=args.judge_cache,
    )
    return {"predictions": str(args.predictions), "references": str(args.references), **result}


def load_references(path, split="test", task_type=None) -> list[dict]:
    """The dataset rows of a LIMUR file or folder (validated as the builder validates), the metric's references.

    Closed answers (``outputs`` "") are kept: the metric scores them 0 and counts them (``closed``)."""
    split = TASK_SPLITS.get(split, split)
    filepath = _reference_file(Path(path), split)
    rows = read_rows(str(filepath), split)  # validated, ids unique
    references = [row for row in rows if not task_type or row["meta"]["task_type"] == task_type]
    closed = sum(not row["outputs"].strip() for row in references)
    if closed:
        print(f"qahub evaluate limur: {filepath}: {closed} of {len(references)} record(s) have no gold answer "
              "(closed test split?): scored 0, counted in 'closed'", file=sys.stderr)
    return references


def _reference_file(path: Path, split: str) -> Path:
    if path.is_dir():
        sources = find_sources(path)
        if split not in sources:
            raise FileNotFoundError(f"{path}: no {split} split here (found {', '.join(sources)})")
        return Path(sources[split])
    if not path.is_file():
        raise FileNotFoundError(f"{path}: references file not found")
    if path.name == TASK_FILE or path.suffix == ".jsonl":
        return path
    raise ValueError(f"{path}: expected a LIMUR *.jsonl split file, a {TASK_FILE} or a folder")


def load_predictions(path, split="test") -> dict[int, str]:
    """``{record id: reply}`` from any of the accepted prediction layouts."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PredictionsError(f"{path}: cannot read predictions ({err})") from None
    if path.suffix == ".jsonl":
        return _from_records(path, [_json_line(path, number, line)
                                    for number, line in enumerate(text.splitlines(), 1) if line.strip()])
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys(path))
    except PredictionsError:
        raise
    except (ValueError, RecursionError) as err:
        raise PredictionsError(f"{path}: not valid JSON ({json_problem(err)})") from None
    if isinstance(data, dict) and isinstance(data.get("data"), dict):
        if split not in data["data"]:
            raise PredictionsError(f"{path}: no {split!r} under 'data' (found {', '.join(data['data'])})")
        data = data["data"][split]
    if isinstance(data, list):
        return _from_records(path, data)
    if isinstance(data, dict):
        return _from_mapping(path, data)
    raise PredictionsError(f"{path}: expected a JSON object or list, got {type(data).__name__}")


def _no_duplicate_keys(path):
    def pairs_to_dict(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise PredictionsError(f"{path}: key {key!r} appears twice in one JSON object")
            seen[key] = value
        return seen
    return pairs_to_dict


def _from_mapping(path, data) -> dict[int, str]:
    by_id = {}
    for key, value in data.items():
        record_id = _id_of(path, key, key)
        if record_id in by_id:
            raise PredictionsError(f"{path}: record {key}: id {record_id} predicted twice")
        by_id[record_id] = _text_of(path, key, value)
    return by_id


def _json_line(path, number, line):
    try:
        return loads_strict(line, f"{path}: line {number}")
    except (ValueError, RecursionError) as err:
        raise PredictionsError(f"{path}: line {number}: not valid JSON ({json_problem(err)})") from None


def _from_records(path, records) -> dict[int, str]:
    by_id = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise PredictionsError(f"{path}: record {index}: expected an object, got {type(record).__name__}")
        meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
        record_id = _id_of(path, index, record.get("id", meta.get("id")))
        reply = next((record[key] for key in ("outputs", "output", "prediction") if key in record), None)
        if record_id in by_id:
            raise PredictionsError(f"{path}: record {index}: id {record_id} predicted twice")
        by_id[record_id] = _text_of(path, index, reply)
    return by_id


def _id_of(path, where, value) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise PredictionsError(f"{path}: record {where}: id {value!r} is not an integer") from None


def _text_of(path, where, value) -> str:
    if not isinstance(value, str):
        raise PredictionsError(f"{path}: record {where}: the reply must be a string, got {value!r}")
    return value


def match(path, by_id: dict[int, str], references: list[dict], allow_extra=False) -> list[str]:
    """The replies in reference order; every reference needs one, and (unless ``allow_extra``) nothing else."""
    ids = [ref["meta"]["id"] if "meta" in ref else ref["id"] for ref in references]
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise PredictionsError(f"{path}: no prediction for {len(missing)} of {len(ids)} records (ids {_some(missing)})")
    unknown = sorted(set(by_id) - set(ids))
    if unknown and not allow_extra:
        raise PredictionsError(f"{path}: predictions for ids not among the references: {_some(unknown)}")
    return [by_id[i] for i in ids]


def _some(ids):
    shown = ", ".join(str(i) for i in ids[:10])
    return shown + (f", … ({len(ids) - 10} more)" if len(ids) > 10 else "")
