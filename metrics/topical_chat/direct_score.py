"""Topical-Chat's scores without ``evaluate`` around them: what ``compute(predictions=..., references=...)``
returns, for ``qahub evaluate topical_chat`` (which never imports ``evaluate``, nor what it pulls in) and for the
metric."""

from .inputs import check_options, encode, examples
from .replies import summary


def score(predictions, references, **options) -> dict:
    """``compute``'s result of ``predictions`` and ``references`` given to it alone (checked here)."""
    options = check_options(options)
    kind, preds, refs = encode(predictions, references)
    return score_checked(kind, preds, refs, options)


def score_checked(kind, preds, refs, options):
    found, replies, reference_turns = examples(kind, preds, refs, options["knowledge"], options["reading_sets"])
    return summary(found, replies, reference_turns, options["per_example"])
