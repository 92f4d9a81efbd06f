"""``qahub evaluate topical_chat``: responses generated for Topical-Chat turns against the human turns.

The references are dataset rows: the ``conversations`` (or ``asr``) config of an export or Hub dataset, or the rows
of the upstream files (``--data-dir``) read by the builder's own row reader without `datasets`; knowledge F1 comes
from the ``reading_sets`` config of the same split when there is one. This module reads only the predictions file.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from qahub.evaluate_cli import predictions
from qahub.evaluate_cli.adapter import Adapter
from qahub.export.reader import check_split, data_folder, export_configs, export_rows

HELP = "Topical-Chat responses: unigram F1, BLEU-4 (sacrebleu), distinct-1/2 and knowledge F1"
CORPUS = "topical_chat"
CONFIGS = ("conversations", "asr")
FIELDS = predictions.Fields(id=(("conversation_id", "turn_index"),), reply=("response",),
                            integers=frozenset({"turn_index"}), gold=("response", "target"), corpus="topical_chat")


class PredictionsError(ValueError):
    pass


class TopicalChat(Adapter):
    metric, help, fields = CORPUS, HELP, (FIELDS,)
    predictions_help = ('JSON list (or JSON Lines, CSV) of {"conversation_id": str, "turn_index": int (1 or more), '
                        '"response": str}')
    references = {"help": "an export folder or Hub dataset id (its conversations config, and reading_sets when "
                          "present); an upstream conversations/<split>.json (or TopicalChatASR/actual/"
                          "<split>_audio.json), or a folder of upstream files, is read as a build of that folder"}
    data_dir = {"help": "the upstream files (upstream layout): the split is built from them, with its reading sets "
                        "when they are there (pre-build ones need src/wiki/wiki.json)"}
    config = {"choices": CONFIGS, "help": "conversations (default) or asr"}
    split = {"help": "test_freq, test_rare, valid_freq, valid_rare or train (asr: test_* only)"}
    input_errors = (ValueError,)

    def add_options(self, parser):
        parser.add_argument("--reading-sets", dest="reading_sets",
                            help="(upstream files) reading_sets/post-build/<split>.json or pre-build/<split>.json: "
                                 "knowledge F1 from a build of its folder")
        parser.add_argument("--wiki", help="(upstream files) the folder's src/wiki/wiki.json, for a pre-build "
                                           "--reading-sets file")
        parser.add_argument("--per-example", dest="per_example", action="store_true",
                            help="also list the scores of each prediction")

    def load_references(self, args):
        source = Source.of(args)
        return source.rows(), source

    def read(self, args):
        return predictions.read(args.predictions, FIELDS, reply_field=getattr(args, "reply_field", None))

    def match(self, read, references, args, where):
        return records_of(read, references[0], getattr(args, "by_position", False))

    def inputs(self, matched, read, references, args):
        conversations, reading = references
        return {"predictions": matched, "references": conversations, "reading_sets": reading,
                "per_example": getattr(args, "per_example", False)}

    def scoring_error(self, err, args, where):
        return PredictionsError(f"{shown(args.predictions)} against {where}: {err}")

    def result(self, result, args, where, matched, references):
        return {"predictions": shown(args.predictions), "references": shown(where.location), "config": where.config,
                "split": where.split, **result}

    def scorer_settings(self, args, result):
        from qahub.metrics.topical_chat import task_api

        return task_api.configuration()


def shown(path) -> str:
    """A path as printable text: bytes that are not UTF-8 in a file name shown as \\xNN escapes."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


# predictions


def read_predictions(path, conversations=None, by_position=False, reply_field=None) -> list:
    """The prediction records ``{conversation_id, turn_index, response}``, in file order; the metric pairs each
    with its turn and names the unknown ones. A response that is not a string (or is not valid Unicode) is kept:
    the metric counts it as unparseable. A bare list of responses is paired with the turns of
    ``conversations`` (turn 1 on, of each row in order) with ``by_position``; ``reply_field``: the field
    holding each response (``--reply-field``)."""
    return records_of(predictions.read(path, FIELDS, reply_field=reply_field), conversations, by_position)


def records_of(read, conversations=None, by_position=False) -> list:
    """``read_predictions`` of predictions as read."""
    if read.replies is not None:
        turns = [(row["conversation_id"], index) for row in conversations or []
                 for index in range(1, len(row["turns"]))]
        pairs = predictions.matched(read, turns, by_position=by_position)
    else:
        pairs = read.records.items()
    return [{"conversation_id": cid, "turn_index": turn, "response": predictions.reply_of(record, FIELDS)}
            for (cid, turn), record in pairs]


# references


class Source:
    """Where the references come from: an export / Hub dataset (``build`` False) or a build of upstream files."""

    def __init__(self, location, config, split, build, reading=None):
        self.location, self.config, self.split, self.build = str(location), config, split, build
        self.reading = reading  # (data_dir, reading_set_form) of a --reading-sets file, or None

    def __str__(self):
        return f"{shown(self.location)} ({self.config}, {self.split})"

    @classmethod
    def of(cls, args) -> Source:
        config, split = getattr(args, "config", None), getattr(args, "split", None)
        reading = _reading_file(args)
        if getattr(args, "data_dir", None):
            return cls(args.data_dir, config or "conversations", _needed(split, args.data_dir), True, reading)
        upstream = _upstream_file(Path(args.references))
        if upstream:
            root, file_config, file_split = upstream
            _same("--config", config, file_config, args.references)
            _same("--split", split, file_split, args.references)
            return cls(root, file_config, file_split, True, reading)
        if any(Path(args.references, "conversations").glob("*.json")):  # a folder of upstream files
            return cls(args.references, config or "conversations", _needed(split, args.references), True, reading)
        if reading:
            raise ValueError(f"--reading-sets goes with upstream files; the export {args.references} gives its "
                             "reading_sets config by itself")
        return cls(args.references, config or "conversations", _needed(split, args.references), False)

    def rows(self):
        """``(conversation rows, reading-set rows or None)``."""
        if not self.build:
            return self._exported()
        conversations = _built(self.location, self.config, self.split)
        if self.reading:
            root, form = self.reading
            return conversations, _built(root, "reading_sets", self.split, reading_set_form=form)
        if _has_reading_sets(Path(self.location), self.split):
            return conversations, _built(self.location, "reading_sets", self.split)
        warnings.warn(f"{shown(self.location)}: no reading sets of {self.split} (reading_sets/post-build/"
                      f"{self.split}.json, or pre-build/{self.split}.json with src/wiki/wiki.json): "
                      "knowledge_f1 is not computed", stacklevel=2)
        return conversations, None

    def _exported(self):
        configs = export_configs(self.location)
        if self.config not in configs:
            raise ValueError(f"{self.location}: no {self.config!r} config here (found {', '.join(configs)})")
        conversations = _exported_rows(self.location, self.config, self.split)
        if "reading_sets" not in configs:
            warnings.warn(f"{self.location}: no reading_sets config: knowledge_f1 is not computed", stacklevel=2)
            return conversations, None
        return conversations, _exported_rows(self.location, "reading_sets", self.split)


def _needed(split, where):
    if not split:
        raise ValueError(f"{shown(where)}: name the split to score with --split (test_freq, test_rare, valid_freq, "
                         "valid_rare or train)")
    return split


def _same(option, given, found, path):
    if given and given != found:
        raise ValueError(f"{option} {given}: the references file {shown(path)} is {found}")


def _upstream_file(path: Path):
    """``(data_dir, config, split)`` of an upstream conversations or ASR file, or None for anything else."""
    if not path.is_file():
        return None
    if path.parent.name == "conversations":
        return path.parent.parent, "conversations", path.stem
    if path.name.endswith("_audio.json") and path.parent.parent.name == "TopicalChatASR":
        return path.parent.parent.parent, "asr", path.name.removesuffix("_audio.json")
    raise ValueError(f"{shown(path)}: expected an export folder, a Hub dataset id, conversations/<split>.json or "
                     "TopicalChatASR/actual/<split>_audio.json")


def _reading_file(args):
    """``(data_dir, reading_set_form)`` of a --reading-sets file in the upstream layout, or None."""
    path, wiki = getattr(args, "reading_sets", None), getattr(args, "wiki", None)
    if not path:
        if wiki:
            raise ValueError("--wiki goes with a pre-build --reading-sets file")
        return None
    path = Path(path)
    form = path.parent.name
    if not path.is_file() or form not in ("post-build", "pre-build") or path.parent.parent.name != "reading_sets":
        raise ValueError(f"--reading-sets {shown(path)}: expected reading_sets/post-build/<split>.json or "
                         "reading_sets/pre-build/<split>.json in the upstream layout")
    root = path.parent.parent.parent
    if wiki and form == "post-build":
        raise ValueError(f"--wiki goes with a pre-build reading set; {shown(path)} is post-build")
    if wiki and not _same_file(wiki, root / "src/wiki/wiki.json"):
        raise ValueError(f"--wiki {shown(wiki)}: the build reads {shown(root / 'src/wiki/wiki.json')}; put the "
                         "wiki file there")
    return root, form


def _same_file(a, b):
    return Path(b).exists() and os.path.samefile(a, b)


def _has_reading_sets(root: Path, split):
    return (root / f"reading_sets/post-build/{split}.json").is_file() or (
        (root / f"reading_sets/pre-build/{split}.json").is_file() and (root / "src/wiki/wiki.json").is_file())


def _built(data_dir, config, split, reading_set_form="auto"):
    """The rows of ``split`` of ``config`` in a local copy of the upstream files, read by the builder's own row
    reader (``loaders/_topical_chat_files.py``), without `datasets`."""
    from qahub.loaders._topical_chat_files import local_rows

    no_split = f"{CORPUS}/{config}: unknown split(s) [{split!r}]; its splits: {{found}}"  # as the builder says
    check_split(CORPUS, config, split, no_split)
    return local_rows(str(data_folder(data_dir)), config, split, reading_set_form)


def _exported_rows(location, config, split):
    return export_rows(location, config, split,
                       no_split=f"{location}: the {config} config has no split {split!r} (found {{found}})", corpus=CORPUS)


ADAPTER = TopicalChat()
add_arguments, run = ADAPTER.add_arguments, ADAPTER.run
