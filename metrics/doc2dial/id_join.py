"""Joining predictions to references by id, with one clear error for every id problem."""

import collections

_SHOWN = 10


class IdMismatchError(ValueError):
    """Predictions and references do not have the same ids, one each."""


def _listed(ids):
    shown = ", ".join(repr(i) for i in ids[:_SHOWN])
    return f"{shown}, ... ({len(ids)} in all)" if len(ids) > _SHOWN else shown


def check_ids(prediction_ids, reference_ids):
    """Raise ``IdMismatchError`` naming missing, extra and duplicate ids; return the ids in reference order."""
    problems = []
    for what, ids in (("prediction", prediction_ids), ("reference", reference_ids)):
        repeated = [i for i, n in collections.Counter(ids).items() if n > 1]
        if repeated:
            problems.append(f"duplicate {what} ids: {_listed(repeated)}")
    predicted, known = set(prediction_ids), set(reference_ids)
    missing = [i for i in dict.fromkeys(reference_ids) if i not in predicted]
    extra = [i for i in dict.fromkeys(prediction_ids) if i not in known]
    if missing:
        problems.append(f"references without a prediction: {_listed(missing)}")
    if extra:
        problems.append(f"predictions whose id is not in the references: {_listed(extra)}")
    if not reference_ids and not problems:
        problems.append("no predictions and no references")
    if problems:
        raise IdMismatchError("doc2dial: predictions and references must have the same ids, once each; " + "; ".join(problems))
    return list(reference_ids)
