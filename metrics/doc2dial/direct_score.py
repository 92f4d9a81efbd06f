"""doc2dial's scores without ``evaluate`` around them: what ``compute(predictions=..., references=...)`` of the
metric's ``task`` (its config) returns, for ``qahub evaluate doc2dial`` (which never imports ``evaluate``, nor what
it pulls in) and for the metric."""

from .inputs import check_options, checked_inputs
from .scores import RESULTS


def score(task, predictions, references, ignore_missing=False, **options) -> dict:
    """``compute``'s result of ``predictions`` and ``references`` given to it alone (checked here)."""
    check_options(task, options)
    return score_checked(task, *checked_inputs(task, predictions, references, ignore_missing), options)


def score_checked(task, predictions, references, missing_ignored, options):
    result = RESULTS[task](predictions, references, **options)
    return result if missing_ignored is None else {**result, "missing_ignored": missing_ignored}
