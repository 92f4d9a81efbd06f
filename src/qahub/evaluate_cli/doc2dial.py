"""``qahub evaluate doc2dial``: the DialDoc21 shared-task scores of a prediction file.

Predictions use the shared task's format: a JSON list of ``{"id", "prediction_text", "no_answer_probability"}``
(subtask1; ``no_answer_probability`` may be left out: 0.0) or ``{"id", "utterance"}`` (subtask2). References are
the rows of a split: loaded from an export (``--references FOLDER_OR_HUB_ID``), read from the unpacked release by
the builder's own row reader without `datasets` (``--data-dir DIR``), or built from the downloaded release;
``doc2dial_rc`` rows for subtask1 and ``dialogue_domain`` rows for subtask2, passed to the metric as they are. This module only reads the prediction file (and, for older callers, a JSON list
of per-turn references); the metric checks every record once. With ``--ignore-missing`` the references are
restricted to the predicted ids, as the official scorer does (``missing_ignored`` in the output).
"""

from __future__ import annotations

from pathlib import Path

from qahub.evaluate_cli import predictions
from qahub.evaluate_cli.adapter import Adapter, direct_score
from qahub.export.reader import built_rows, check_split, data_folder, export_rows
from qahub.metrics.doc2dial.dialogues import agent_turns

HELP = "DialDoc21 shared-task scores on doc2dial: subtask1 grounding (SQuAD v2 EM/F1), subtask2 generation (sacreBLEU)"
CONFIGS = {"subtask1": "doc2dial_rc", "subtask2": "dialogue_domain"}
FIELDS = {"subtask1": predictions.Fields(id=("id",), reply=("prediction_text",), gold=("answers",),
                                         extra=("no_answer_probability",), corpus="doc2dial"),
          "subtask2": predictions.Fields(id=("id",), reply=("utterance",), gold=("utterance",), corpus="doc2dial")}
REFERENCE_FIELDS = predictions.Fields(id=("id",), reply=("answers", "utterance"))
# a release file given as --references: built from its folder (doc2dial/v1.0.1/ inside the data dir)
RELEASE_FILES = {"doc2dial_dial_train.json": "train", "doc2dial_dial_validation.json": "validation",
                 "doc2dial_doc.json": None}


class Doc2dial(Adapter):
    metric, help, fields = "doc2dial", HELP, tuple(FIELDS.values())
    predictions_help = "JSON list in the shared task's prediction format"
    references = {"help": "an exported folder or hub id (with --split), or a JSON list of {id, answers} (subtask1) / "
                          "{id, utterance} (subtask2)"}
    data_dir = {"help": "build the references from the unpacked release zip (doc2dial/v1.0.1/...); without "
                        "--references or --data-dir the release is downloaded"}
    config = {"choices": sorted(set(CONFIGS.values())),
              "help": "the references' config (default: doc2dial_rc for subtask1, dialogue_domain for subtask2)"}
    split = {"help": "the split scored (train or validation)"}
    references_required, predictions_first, input_errors = False, True, (ValueError,)

    def add_options(self, parser):
        parser.add_argument("--task", choices=sorted(CONFIGS), required=True,
                            help="subtask1: grounding span of the next agent turn; subtask2: the next agent turn")
        parser.add_argument("--mirror-url", help="when building: download the zip from <mirror>/doc2dial/ instead")
        parser.add_argument("--cache-dir", help="datasets cache folder")
        parser.add_argument("--ignore-missing", action="store_true",
                            help="score only the references that have a prediction (the official scorer's "
                                 "behaviour); the output's missing_ignored counts the others. Default: a missing "
                                 "prediction is an error")
        parser.add_argument("--no-answer-threshold", type=float, default=1.0,
                            help="subtask1: predictions with a larger no_answer_probability count as empty "
                                 "(default 1.0)")
        parser.add_argument("--no-answer-text", default=None,
                            help="subtask1: a prediction_text that SQuAD-normalises to this text counts as empty "
                                 "(the harness task's replies: --no-answer-text 'NO ANSWER'); default: none")

    def load_references(self, args):
        return load_references(args)

    def read(self, args):
        return predictions.read(args.predictions, FIELDS[args.task], reply_field=getattr(args, "reply_field", None))

    def match(self, read, references, args, where):
        return _records(read, references, args, where)

    def options(self, args):
        options = {"ignore_missing": bool(args.ignore_missing)}
        if args.task == "subtask1":
            options.update(no_answer_threshold=args.no_answer_threshold,
                           no_answer_text=getattr(args, "no_answer_text", None))
        return options

    def score(self, args, **inputs):
        return direct_score(self.metric).score(args.task, **inputs)

    def scoring_error(self, err, args, where):
        hint = " (--ignore-missing scores only the predicted ids)" if "references without a prediction" in str(err) else ""
        return ValueError(f"scoring {args.predictions} against {where}: {err}{hint}")

    def result(self, result, args, where, matched, references):
        # a path that is not UTF-8 (a lone surrogate in argv) is shown escaped: the result must print as UTF-8
        return {"task": args.task, "references": where.encode("utf-8", "backslashreplace").decode("utf-8"), **result}

    def scorer_settings(self, args, result):
        """The task's scorer settings (task_api): SQuAD v2 with this command's no-answer settings, or sacreBLEU."""
        from qahub.metrics.doc2dial import task_api

        if args.task == "subtask2":
            return task_api.response_configuration()
        return {**task_api.grounding_configuration(), "no_answer_threshold": args.no_answer_threshold,
                "no_answer_text": getattr(args, "no_answer_text", None)}


def _records(read, references, args, source):
    """The prediction records, each with its id; the metric joins them to the references by id. A bare list of
    replies gets the references' ids in their order (``--by-position``)."""
    if read.replies is None:
        return _with_ids(read.records.items())
    ids = []
    for row in references:  # subtask2's dialogue rows stand for their agent turns
        turns = agent_turns(row) if args.task == "subtask2" and "turns" in row else [row]
        ids += [turn["id"] for turn in turns]
    return _with_ids(predictions.matched(read, ids, by_position=getattr(args, "by_position", False),
                                         references=source))


def _with_ids(pairs) -> list:
    return [{**record, "id": key} for key, record in pairs]


def read_json_list(path: Path) -> list:
    """The records of a references file ``[{id, answers}]`` / ``[{id, utterance}]``, read as predictions are."""
    return _with_ids(predictions.read_references(path, REFERENCE_FIELDS, "an 'id'").records.items())


def load_references(args):
    """``(references, what they are)``: rows of an export or of a build, or the records of a JSON list file."""
    config = args.config or CONFIGS[args.task]
    if config != CONFIGS[args.task]:
        raise ValueError(f"--config {config}: {args.task} is scored against {CONFIGS[args.task]} rows")
    location, data_dir, split = args.references, args.data_dir, args.split
    if location and Path(location).name in RELEASE_FILES and Path(location).is_file():
        data_dir, split = str(Path(location).resolve().parents[2]), split or RELEASE_FILES[Path(location).name]
        location = None
    elif location and Path(location).is_file():
        return read_json_list(Path(location)), location
    if not split:
        raise ValueError("--split is required (train or validation) unless --references is a JSON list file")
    no_split = f"--split {split}: doc2dial has the splits {{found}}"
    if location:
        rows = export_rows(location, config, split, cache_dir=args.cache_dir, no_split=no_split, corpus="doc2dial")
        return rows, f"{location} {config} {split} split"
    # the split's rows in dataset order (the order in which the official scorer collects the references)
    if data_dir is None:
        rows = built_rows("doc2dial", config, split, cache_dir=args.cache_dir, mirror_url=args.mirror_url,
                          no_split=no_split)
    else:
        rows = _local_rows(config, split, data_dir, no_split)
    return rows, f"doc2dial {split} split"


def _local_rows(config, split, data_dir, no_split) -> list[dict]:
    """The rows of ``split`` in a local copy of the release files, read by the builder's own row reader
    (``loaders/_doc2dial_files.py``), without `datasets`."""
    from qahub.loaders._doc2dial_files import local_rows

    check_split("doc2dial", config, split, no_split)
    return local_rows(str(data_folder(data_dir)), config, split)


ADAPTER = Doc2dial()
add_arguments, run = ADAPTER.add_arguments, ADAPTER.run
