"""``qahub evaluate limur``: exact match and (optionally) the LLM judge score of predictions on LIMUR.

References are dataset rows: an export loaded with ``datasets.load_dataset`` (``--references FOLDER_OR_HUB_ID``),
or the rows of MERA's task files (``--data-dir DIR``; a ``--references`` that is a split file or a folder of them
is read the same way), read by the builder's own row reader (``loaders/_limur_files.py``) without `datasets`.
This module reads only the prediction files.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from qahub.evaluate_cli import predictions
from qahub.evaluate_cli.adapter import Adapter
from qahub.export.reader import check_split, data_folder, export_rows
from qahub.metrics.limur.judge_settings import SETTINGS, resolve
from qahub.metrics.limur.score import ALL_CLOSED, all_closed

HELP = "LIMUR: exact match of the answer letter (strict, lenient, MERA's recipe) and an optional LLM judge score"
FIELDS = predictions.Fields(id=("id", "meta.id"), reply=("outputs", "output", "prediction"),
                            integers=frozenset({"id", "meta.id"}), gold=("outputs",), corpus="limur")
EXPORT = "a LIMUR export, a Hub dataset or a folder of MERA task files"


class PredictionsError(ValueError):
    """The predictions file cannot be matched to the references."""


def exit_status(result) -> int:
    """1 when a judge was asked for and some of its calls failed (the judge score is then incomplete), or it
    judged none of the examples it was asked about (the judge score is then no score)."""
    judge = result.get("judge", {})
    if not judge.get("computed", False):
        return 0
    asked = result["count"] - judge["closed"]
    if asked and not judge["judged"]:
        reason = "; ".join(judge["errors"][:1] + [f"reply {r!r}" for r in judge["unparseable_replies"][:1]])
        print(f"qahub evaluate limur: the judge judged none of the {asked} example(s) ({judge['failed']} failed, "
              f"{judge['unparseable']} replied no grade; e.g. {reason}): judge_score is no score", file=sys.stderr)
        return 1
    failed = judge["failed"]
    if failed:
        print(f"qahub evaluate limur: {failed} example(s) could not be judged (counted 0 in judge_score; "
              "judge_score_judged covers the judged examples only)", file=sys.stderr)
    return 1 if failed else 0


class Limur(Adapter):
    metric, help, fields = "limur", HELP, (FIELDS,)
    predictions_help = ("JSON {id: reply}, a JSON list / JSON Lines of {id or meta.id, outputs}, "
                        'or a MERA submission {"data": {split: [...]}}')
    references = {"help": "an exported LIMUR folder or Hub dataset id (loaded with datasets.load_dataset); a MERA "
                          "split file (*.jsonl), a task.json or a folder of them is built as --data-dir"}
    data_dir = {"help": "build the references with qahub.load('limur', CONFIG, data_dir=DIR) from MERA's task files "
                        "(train/dev/test/shots.jsonl or task.json)"}
    config = {"default": "all", "choices": ["all", "rwsd", "kusdra"], "help": "config (default: all)"}
    split = {"default": "test", "help": "split to score (default: test; dev means validation)"}

    def add_options(self, parser):
        parser.add_argument("--task-type", choices=["rwsd", "kusdra"], help="score only this task type")
        for setting in SETTINGS:  # the judge's settings, declared once beside the metric
            add_judge_argument(parser, setting)

    def check(self, args):
        resolve({"url": args.judge_url, "model": args.judge_model}, flags=True)  # a URL and a model from two places
        if args.judge_model and not args.judge_url:
            raise ValueError("--judge-model needs --judge-url: the judge is an endpoint")
        super().check(args)

    def load_references(self, args):
        return load_references(args)

    def read(self, args):
        return load_predictions(args.predictions, args.split, getattr(args, "reply_field", None))

    def match(self, read, references, args, where):
        subset = bool(args.task_type) or args.config != "all"  # predictions of the whole corpus may hold more ids
        return match(read, references, allow_extra=subset, by_position=getattr(args, "by_position", False),
                     where=where)

    def options(self, args):
        return judge_options(args)

    def result(self, result, args, where, matched, references):
        return {"predictions": str(args.predictions), "references": where, **result}

    def scorer_settings(self, args, result):
        from qahub.metrics.limur import task_api

        return task_api.configuration()

    def judge_record(self, result):
        """The judge that gave judge_score: its URL (without credentials), model, prompt and max tokens."""
        judge = result.get("judge") or {}
        return {key: judge.get(key) for key in ("url", "model", "prompt", "max_tokens")} if judge.get("computed") else None


def add_judge_argument(parser, setting):
    """``--judge-<name>`` of one declared judge setting; its default is the metric's (variable, else default)."""
    if setting.kind == "switch":
        parser.add_argument(setting.flag, action="store_true", help=setting.help)
    elif setting.kind == "secret":  # the key itself never on the command line, where `ps` shows it
        parser.add_argument(f"{setting.flag}-env", default=setting.env,
                            help=f"name of the environment variable holding the API key (default {setting.env}; "
                                 "never pass the key itself)")
    else:
        how = {"choices": setting.choices} if setting.choices else {"type": _argument_type(setting),
                                                                     "metavar": setting.name.upper()}
        parser.add_argument(setting.flag, **how,
                            help=f"{setting.help}{setting.range_text()} (default {setting.default_text()})")


def _argument_type(setting):
    """An argparse type: the setting's own reading of a text, its error as argparse's."""
    def parse(text):
        try:
            return setting.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parse.__name__ = setting.name
    return parse


def judge_options(args) -> dict:
    """``compute``'s ``judge_<name>`` keywords from the flags: the unset ones are left to the metric."""
    options = {}
    for setting in SETTINGS:
        if setting.kind == "secret":
            options[setting.keyword] = os.environ.get(getattr(args, f"{setting.dest}_env"))
        else:
            options[setting.keyword] = getattr(args, setting.dest)
    return options


def load_references(args) -> tuple[list[dict], str]:
    """``(rows, what they are)``: the split's dataset rows, of ``--task-type`` only when given.

    Closed answers (``outputs`` "") are kept: the metric scores them 0 and counts them (``closed``); when every
    answer is closed (MERA's public test split) there is nothing to score: an error."""
    from qahub.loaders._limur_files import TASK_SPLITS

    split = TASK_SPLITS.get(args.split, args.split)
    source = args.data_dir or args.references
    rows = _split_rows(args, source, split)
    where = f"{source} ({args.config}, {split})"
    if args.task_type:
        rows = [row for row in rows if row["meta"]["task_type"] == args.task_type]
        if not rows:
            raise ValueError(f"{where}: no record of task type {args.task_type!r}: nothing to score")
    if all_closed(row["outputs"] for row in rows):
        raise ValueError(f"{where}: " + ALL_CLOSED.format(answers=f"the {split} answers", where="this file"))
    closed = sum(not row["outputs"].strip() for row in rows)
    if closed:
        warnings.warn(f"{where}: {closed} of {len(rows)} record(s) have no gold answer (closed test split?): "
                      "scored 0, counted in 'closed'", stacklevel=2)
    return rows, where


def _split_rows(args, source, split) -> list[dict]:
    """The rows of ``split``: of an export, or of MERA's task files (a folder, or one file), read as the builder
    reads them (``loaders/_limur_files.py``), without `datasets`."""
    from qahub.loaders import _limur_files as files

    path = Path(source).expanduser()
    if not (path.is_file() or args.data_dir or _holds_task_files(path)):
        return export_rows(source, args.config, split, what=EXPORT, corpus="limur")
    no_split = f"{path}: no {split} split with {args.config} records (found {{found}})"
    check_split("limur", args.config, split, no_split)
    if path.is_file():
        sources, where = files.file_sources(path, _source_name(path, split)), path
    else:
        where = str(data_folder(path))
        sources = files.find_sources(where)
    return files.local_rows(sources, split, files.CONFIGS[args.config], where, no_split)


def _holds_task_files(path: Path) -> bool:
    from qahub.loaders._limur_files import SPLIT_FILES, TASK_FILE

    return path.is_dir() and any((path / name).is_file() for name in (*SPLIT_FILES, TASK_FILE))


def _source_name(path: Path, split: str) -> str:
    """The name a single references file is built under: a task.json stays one; a JSON Lines file is the split
    its name says (dev.jsonl: validation), else the --split asked for."""
    from qahub.loaders._limur_files import SPLIT_FILES, TASK_FILE

    if path.name == TASK_FILE:
        return TASK_FILE
    if path.suffix != ".jsonl":
        raise ValueError(f"{path}: expected a LIMUR *.jsonl split file, a {TASK_FILE}, a folder or a Hub dataset id")
    if path.name in SPLIT_FILES:
        return path.name
    return {value: name for name, value in SPLIT_FILES.items()}.get(split, f"{split}.jsonl")


def load_predictions(path, split="test", reply_field=None) -> predictions.Predictions:
    """The predictions of any of the accepted layouts (a MERA submission: its ``split`` entry); ``reply_field``:
    the field holding each reply (``--reply-field``)."""
    def submission(data):
        if isinstance(data, dict) and isinstance(data.get("data"), dict):
            if split not in data["data"]:
                raise PredictionsError(f"no {split!r} under 'data' (found {', '.join(data['data'])})")
            return data["data"][split]
        return data

    return predictions.read(path, FIELDS, unwrap=submission, reply_field=reply_field)


def match(read, references: list[dict], allow_extra=False, by_position=False, where="the references") -> list:
    """The replies in reference order, matched by ``meta.id``; every reference needs one, and (unless
    ``allow_extra``) nothing else. A reply is any value: what is not text scores 0 (unparseable)."""
    pairs = predictions.matched(read, [ref["meta"]["id"] for ref in references], by_position=by_position,
                                allow_extra=allow_extra, references=where)
    return [predictions.reply_of(record, FIELDS) for _, record in pairs]


ADAPTER = Limur()
add_arguments, run = ADAPTER.add_arguments, ADAPTER.run
