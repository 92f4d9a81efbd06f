"""The one flow of ``qahub evaluate <metric>``: its shared arguments, then check → references → predictions → match →
score → result.

A metric's adapter is a subclass of ``Adapter`` that names its metric, its prediction ``Fields`` and the help of the
shared arguments, and overrides the few hooks that differ (its options, how the references are had, how the
predictions are matched to them, what else ``compute`` takes, what is printed). Scoring goes through the
metric's own ``direct_score.score`` (what ``compute`` returns for inputs given to it alone), so a score never imports
``evaluate`` (which imports ``transformers`` and ``torch`` when they are installed); the cheap checks (the
predictions file can be read) come before any reference is built or loaded.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import sys
from pathlib import Path

from qahub.evaluate_cli import predictions
from qahub.signature import Signature, judge_text, scorer_text


class Adapter:
    """``qahub evaluate METRIC``: set the class attributes; override the hooks where the metric differs."""

    metric = ""  # the metric's folder (metrics/<metric>/), whose direct_score.score scores
    help = ""
    fields: tuple = ()  # the Fields of each kind of prediction file (the first is the default)
    predictions_help = ""
    references = {}  # the keyword arguments of --references, --data-dir, --config and --split
    data_dir = {}
    config = {}
    split = {}
    references_required = True  # one of --references / --data-dir is needed
    predictions_first = False  # the predictions are read before the references are had (their errors first)
    input_errors: tuple = ()  # errors of the scorer that name the inputs: said with the files (scoring_error)
    # no metric scores with torch, but spaCy (Jeopardy's tokenizer) imports thinc, which imports torch whenever it
    # is installed: seconds and hundreds of MiB for nothing; thinc goes on without it
    unimportable: tuple = ("torch",)

    def add_arguments(self, parser):
        parser.add_argument("--predictions", required=True, help=self.predictions_help)
        refs = parser.add_mutually_exclusive_group(required=self.references_required)
        refs.add_argument("--references", **self.references)
        refs.add_argument("--data-dir", **self.data_dir)
        parser.add_argument("--config", **self.config)
        parser.add_argument("--split", **self.split)
        self.add_options(parser)
        predictions.add_arguments(parser, *self.fields)

    def run(self, args) -> dict:
        self.check(args)
        if self.predictions_first:
            read = self.read(args)
            references, where = self.load_references(args)
        else:
            references, where = self.load_references(args)
            read = self.read(args)
        matched = self.match(read, references, args, where)
        inputs = self.inputs(matched, read, references, args)
        try:
            result = self.score(args, **inputs)
        except self.input_errors as err:
            raise self.scoring_error(err, args, where) from None
        with unimportable(*self.unimportable):  # the settings' modules are the score's, imported as it was
            signature = self.signature(args, result, where, matched)
        result = self.result(result, args, where, matched, references)
        if isinstance(result, dict):  # "qahub_signature": a metric's own "signature" (sacreBLEU's) stays as it is
            result["qahub_signature"] = signature.to_dict()
        return result

    # the hooks

    def add_options(self, parser):
        """The metric's own options."""

    def check(self, args):
        """What can be refused before any reference is built or loaded (no heavy import)."""
        predictions.check_readable(args.predictions)

    def load_references(self, args) -> tuple:
        """``(references, what they are)``."""
        raise NotImplementedError

    def read(self, args) -> predictions.Predictions:
        return predictions.read(args.predictions, self.fields[0], reply_field=getattr(args, "reply_field", None))

    def match(self, read, references, args, where):
        """The predictions as the metric takes them, matched to the references."""
        raise NotImplementedError

    def inputs(self, matched, read, references, args) -> dict:
        """``compute``'s keyword arguments."""
        return {"predictions": matched, "references": references, **self.options(args)}

    def options(self, args) -> dict:
        """``compute``'s options from the metric's own arguments."""
        return {}

    def score(self, args, **inputs) -> dict:
        with unimportable(*self.unimportable):
            return direct_score(self.metric).score(**inputs)

    def scoring_error(self, err, args, where) -> Exception:
        return ValueError(f"scoring {args.predictions} against {where}: {err}")

    def result(self, result, args, where, matched, references) -> dict:
        """What ``qahub evaluate`` prints."""
        return result

    def scorer_settings(self, args, result) -> dict | None:
        """The scorer's settings this score was made with (the signature's ``scorer``)."""
        return None

    def judge_record(self, result) -> dict | None:
        """The judge that gave a score of this result, when there is one (the signature's ``judge``)."""
        return None

    def signature(self, args, result, where, matched) -> Signature:
        """The score's ``qahub.signature.Signature``: the metric, its scorer's settings, the references read
        (a file or folder by its name; ``--config`` and ``--split`` as given) and how many were matched."""
        from qahub import __version__

        # the references given (Topical-Chat's: a Source), by the name of their file, folder or Hub id
        given = where if hasattr(where, "location") else args
        source = getattr(given, "location", None) or getattr(args, "references", None) or getattr(args, "data_dir", None)
        config, split = (getattr(given, key, None) for key in ("config", "split"))
        return Signature(qahub=__version__, metric=self.metric, scorer=scorer_text(self.scorer_settings(args, result)),
                         dataset=Path(str(source)).name if source else None, config=_text(config), split=_text(split),
                         harness="qahub evaluate", harness_version=__version__,
                         judge=judge_text(self.judge_record(result)),
                         documents=len(matched) if isinstance(matched, list | tuple) else None)


def _text(value) -> str | None:
    return None if value is None else str(value)


class _Unimportable(importlib.abc.MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path, target=None):
        if any(name == module or name.startswith(module + ".") for module in self.names):
            raise ModuleNotFoundError(f"No module named {name!r} (not imported for a qahub evaluate score)")
        return None


@contextlib.contextmanager
def unimportable(*names):
    """``import NAME`` (and its submodules) fails while a score is computed, unless it is imported already.
    Used for modules the scorer's own imports pull in for nothing when they are installed, which go on without
    them (``except ImportError``); a module the score needed would fail loudly, never change a number."""
    finder = _Unimportable(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def direct_score(metric):
    """The metric's ``direct_score`` module (``score``: ``compute``'s result without ``evaluate``)."""
    return importlib.import_module(f"qahub.metrics.{metric}.direct_score")
